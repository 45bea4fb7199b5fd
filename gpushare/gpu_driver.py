"""Is a GPU driver version known to be too old for MIG on a GPU? One rule for the stack model and the
policy pack (`mig-driver-supported`); the floor per GPU is the catalog's `mig_min_driver`."""

from __future__ import annotations

from gpushare.catalog import GpuModel
from gpushare.stack.kube_syntax import anchored

# ASCII digits: `535.161.07` as NVIDIA writes it; full-width `５３５` is no version a driver reports.
is_dotted_version = anchored(r"[0-9]+(\.[0-9]+)*")


def _parts(version: str) -> tuple[int, ...] | None:
    version = version.strip()
    return tuple(int(p) for p in version.split(".")) if is_dotted_version(version) else None


def known_older(version: str, floor: str) -> bool:
    """True only when `version` is certainly older than `floor`. Versions compare part by part as numbers
    (`535.161.07` > `535.54.03`); a version naming fewer parts (`535`) is compared on those parts only,
    since the full version behind it is unknown. Strings that are not dotted numbers are never judged."""
    given, minimum = _parts(version), _parts(floor)
    if given is None or minimum is None:
        return False
    common = min(len(given), len(minimum))
    return given[:common] < minimum[:common]


def mig_driver_problem(gpu: GpuModel, version: str) -> str | None:
    """Why `version` cannot run MIG on `gpu`, or None when it can or cannot be judged."""
    floor = gpu.mig_min_driver
    if floor is None or not known_older(version, floor):
        return None
    return f"driver {version} is too old for MIG on {gpu.key}: NVIDIA supports it from {floor}"
