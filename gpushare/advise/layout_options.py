"""Every way to cut one GPU for one measured process: what each layout yields, and which is best.

An option is the whole GPU (time-sliced, or exclusive) or a MIG layout (a multiset of GPU-instance
profiles) whose instances are each time-sliced by the one tuning rule (`gpushare.tuning.tune`): an
instance holds `floor(ceiling x instance memory / measured)` slots when that is >= 2, else 1 when the
process fits, else none. The MIG layouts are every multiset of the catalog's profiles that
`gpushare.mig.geometry.fit_layout` can place, not only NVIDIA's named `all-*` configs.

A layout with an instance too small for the process is not an option (that instance would serve
nothing); `AdviceReport.idle_layouts` counts them. Isolation domains are the MIG instances (1 for the
whole GPU). The Pareto front holds the options that no other option beats on slots without giving up
isolation; the recommendation for an isolation level is its best option by `_preference`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from gpushare.catalog import GpuModel, MigProfile
from gpushare.errors import GpushareError
from gpushare.mig.geometry import MigLayoutError, fit_layout
from gpushare.tuning import DEFAULT_CEILING, Tuning, check_ceiling, check_measured, tune

# `mps` options are made by `sharing_modes.mps_layout` only; `advise` lists the other three.
OptionMode = Literal["time-slicing", "exclusive", "mig", "mps"]


@dataclass(frozen=True)
class InstanceShare:
    """One profile of a layout: how many instances, and the tuning of each (the same for all of them)."""

    profile: MigProfile
    count: int
    tuning: Tuning

    @property
    def slots(self) -> int:
        return self.count * self.tuning.slots


@dataclass(frozen=True)
class LayoutOption:
    """One way to serve the measured process on one GPU."""

    gpu: GpuModel
    mode: OptionMode
    measured_mib: int
    slots: int
    isolation_domains: int
    headroom_mib_per_slot: float
    """The smallest `memory / slots - measured` over the instances (or the whole GPU)."""
    compute_slices_per_slot: float | None
    """The smallest share of compute slices a slot gets; None on a GPU without MIG."""
    shares: tuple[InstanceShare, ...] = ()
    """MIG only: the layout's profiles, smallest first."""
    replicas: int = 1
    """Whole GPU only: the tuning rule's replicas (1 when exclusive)."""

    @property
    def mig_layout(self) -> dict[str, int] | None:
        return {s.profile.name: s.count for s in self.shares} if self.mode == "mig" else None

    @property
    def utilization(self) -> float:
        """Share of the GPU's memory the slots use when every slot runs the measured process."""
        return self.slots * self.measured_mib / self.gpu.memory_mib

    @property
    def media_extension_instances(self) -> int:
        return sum(s.count for s in self.shares if s.profile.media_extensions)

    @property
    def compute_slices_used(self) -> int:
        return sum(s.count * s.profile.compute_slices for s in self.shares)

    def describe(self) -> str:
        """`6x 1g.12gb + 1x 1g.24gb`, `whole GPU, time-sliced x19`, `whole GPU, exclusive`."""
        if self.mode == "mig":
            return " + ".join(f"{s.count}x {s.profile.name}" for s in self.shares)
        if self.mode == "time-slicing":
            return f"whole GPU, time-sliced x{self.replicas}"
        if self.mode == "mps":
            return f"whole GPU, MPS x{self.replicas}"
        return "whole GPU, exclusive"

    def layout_name(self) -> str:
        """The mig-parted config name (and `nvidia.com/mig.config` label value): `h20-6x1g.12gb-1x1g.24gb`.

        `+` is not allowed in a label value, so `+me` is written `.me` (as `Mig.config_name` does)."""
        parts = [f"{s.count}x{s.profile.name.replace('+', '.')}" for s in self.shares]
        return "-".join([self.gpu.key.lower(), *parts])

    def as_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "migLayout": self.mig_layout,
            "slots": self.slots,
            "isolationDomains": self.isolation_domains,
            "utilization": round(self.utilization, 4),
            "headroomMiBPerSlot": round(self.headroom_mib_per_slot, 1),
            "computeSlicesPerSlot": (
                None if self.compute_slices_per_slot is None else round(self.compute_slices_per_slot, 4)
            ),
        }


@dataclass(frozen=True)
class AdviceReport:
    gpu: GpuModel
    measured_mib: int
    ceiling: float
    options: tuple[LayoutOption, ...]
    """Every option, in the deterministic order `_preference` gives (best first)."""
    idle_layouts: int
    """MIG layouts left out because an instance cannot hold the process."""

    @functools.cached_property
    def pareto(self) -> tuple[LayoutOption, ...]:
        return tuple(o for o in self.options if _on_front(o, self.options))

    def recommended(self, isolation_domains: int) -> LayoutOption | None:
        """The best option with exactly this many isolation domains."""
        return next((o for o in self.options if o.isolation_domains == isolation_domains), None)

    def recommendations(self) -> dict[int, LayoutOption]:
        """The best option at each isolation level that has one, by level."""
        levels = sorted({o.isolation_domains for o in self.options})
        return {level: o for level in levels if (o := self.recommended(level)) is not None}

    def as_json(self) -> dict[str, object]:
        front = set(self.pareto)
        return {
            "gpu": self.gpu.key,
            "measuredMiB": self.measured_mib,
            "ceiling": self.ceiling,
            "options": [{**o.as_json(), "pareto": o in front} for o in self.options],
        }


# --- enumeration ------------------------------------------------------------------------------------------


def _profile_order(profile: MigProfile) -> tuple[int, int, bool, str]:
    """Smallest profile first: the order layout names and `migLayout` mappings are written in."""
    return (profile.compute_slices, profile.memory_slices, profile.media_extensions, profile.name)


@functools.lru_cache(maxsize=32)
def mig_layouts(gpu: GpuModel) -> tuple[dict[str, int], ...]:
    """Every non-empty multiset of `gpu`'s profiles that `fit_layout` places, smallest profiles first.

    Candidates are generated within the per-profile limits, the compute and memory slice budgets and the
    one-`+me` rule (cheap pruning); `fit_layout` decides each one by the real placements.
    """
    profiles = sorted(gpu.mig_profiles, key=_profile_order)
    found: list[dict[str, int]] = []

    def extend(index: int, chosen: dict[str, int], compute: int, memory: int, media: int) -> None:
        if index == len(profiles):
            if chosen:
                try:
                    fit_layout(gpu, chosen)
                except MigLayoutError:
                    return
                found.append(dict(chosen))
            return
        profile = profiles[index]
        extend(index + 1, chosen, compute, memory, media)
        for count in range(1, profile.max_instances + 1):
            used_compute = compute + count * profile.compute_slices
            used_memory = memory + count * profile.memory_slices
            used_media = media + (count if profile.media_extensions else 0)
            if used_compute > gpu.compute_slices or used_memory > gpu.memory_slices or used_media > 1:
                break
            chosen[profile.name] = count
            extend(index + 1, chosen, used_compute, used_memory, used_media)
            del chosen[profile.name]

    extend(0, {}, 0, 0, 0)
    return tuple(found)


# --- options ----------------------------------------------------------------------------------------------


def _whole_gpu_options(gpu: GpuModel, measured_mib: int, ceiling: float) -> list[LayoutOption]:
    if measured_mib > gpu.memory_mib:
        return []
    tuning = tune(gpu, measured_mib, ceiling)
    compute = gpu.compute_slices if gpu.mig_capable else None
    exclusive = LayoutOption(
        gpu=gpu,
        mode="exclusive",
        measured_mib=measured_mib,
        slots=1,
        isolation_domains=1,
        headroom_mib_per_slot=gpu.memory_mib - measured_mib,
        compute_slices_per_slot=compute,
    )
    if not tuning.shared:
        return [exclusive]
    shared = LayoutOption(
        gpu=gpu,
        mode="time-slicing",
        measured_mib=measured_mib,
        slots=tuning.slots,
        isolation_domains=1,
        headroom_mib_per_slot=tuning.headroom_mib_per_slot,
        compute_slices_per_slot=None if compute is None else compute / tuning.slots,
        replicas=tuning.replicas,
    )
    return [shared, exclusive]


def _mig_option(
    gpu: GpuModel, layout: Mapping[str, int], tunings: Mapping[str, Tuning], measured_mib: int
) -> LayoutOption:
    shares = tuple(
        sorted(
            (InstanceShare(gpu.mig_profile(name), count, tunings[name]) for name, count in layout.items()),
            key=lambda s: _profile_order(s.profile),
        )
    )
    return LayoutOption(
        gpu=gpu,
        mode="mig",
        measured_mib=measured_mib,
        slots=sum(s.slots for s in shares),
        isolation_domains=sum(s.count for s in shares),
        headroom_mib_per_slot=min(s.tuning.headroom_mib_per_slot for s in shares),
        compute_slices_per_slot=min(s.profile.compute_slices / s.tuning.slots for s in shares),
        shares=shares,
    )


def _preference(option: LayoutOption) -> tuple[int, int, int, float, int, str, str]:
    """Best first: more slots; more isolation; no `+me` instance unless it buys something (the media
    engines go to one instance); more headroom per slot; more compute slices in use; then by name."""
    return (
        -option.slots,
        -option.isolation_domains,
        option.media_extension_instances,
        -option.headroom_mib_per_slot,
        -option.compute_slices_used,
        option.mode,
        option.layout_name(),
    )


def _on_front(option: LayoutOption, options: Sequence[LayoutOption]) -> bool:
    """No other option has at least as many slots and isolation domains and more of one of them."""
    return not any(
        other.slots >= option.slots
        and other.isolation_domains >= option.isolation_domains
        and (other.slots, other.isolation_domains) != (option.slots, option.isolation_domains)
        for other in options
    )


def advise(gpu: GpuModel, measured_mib: int, ceiling: float = DEFAULT_CEILING) -> AdviceReport:
    """Every option for `measured_mib` on `gpu`, best first; `GpushareError` if the process fits nowhere."""
    check_ceiling(ceiling)
    check_measured(measured_mib)
    options = _whole_gpu_options(gpu, measured_mib, ceiling)
    tunings = {
        p.name: tune(gpu, measured_mib, ceiling, mig_profile=p.name)
        for p in gpu.mig_profiles
        if measured_mib <= p.memory_mib
    }
    idle = 0
    for layout in mig_layouts(gpu):
        if all(name in tunings for name in layout):
            options.append(_mig_option(gpu, layout, tunings, measured_mib))
        else:
            idle += 1
    if not options:
        raise GpushareError(f"measured {measured_mib} MiB does not fit {gpu.key} ({gpu.memory_mib} MiB)")
    return AdviceReport(
        gpu=gpu,
        measured_mib=measured_mib,
        ceiling=ceiling,
        options=tuple(sorted(options, key=_preference)),
        idle_layouts=idle,
    )


def layout_option(report: AdviceReport, layout: Mapping[str, int]) -> LayoutOption | None:
    """The option for a MIG layout (None if it does not fit or leaves an instance idle)."""
    wanted = dict(layout)
    return next((o for o in report.options if o.mig_layout == wanted), None)


def better_layout(report: AdviceReport, layout: Mapping[str, int]) -> LayoutOption | None:
    """The best MIG layout with at least as many instances as `layout` and more slots, if any.

    `layout` must be one of the report's options (see `layout_option`)."""
    current = layout_option(report, layout)
    if current is None:
        raise GpushareError(f"{dict(layout)} is not a layout of {report.gpu.key} that holds the process")
    return next(
        (
            o
            for o in report.options
            if o.mode == "mig"
            and o.isolation_domains >= current.isolation_domains
            and o.slots > current.slots
        ),
        None,
    )
