"""Synthetic fleet files for `advise --fleet`'s benchmark: N services over the example fleet's candidates.

Service `i` is `svc-<i:04d>`: measured at 2000 + 700 x ((7 i) mod 11) MiB (2000 to 9000: each fits
every candidate, a T4 holding at most 15360 x 0.9 = 13824 MiB), 1 + (5 i) mod 12 replicas, and isolation rotating
through none, `mig` and `shared`; each with a measurement date 30 days back, as a stack pool states it.
The candidates are examples/fleet.yaml's three: the L20 and T4 instance types of the catalog and the
H20 on an uncatalogued type with `gpusPerNode: 1`. Everything is a pure function of (services,
measured_at), so two runs plan the same fleet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from bench.synthetic import default_measured_at

CANDIDATES: Final[tuple[Any, ...]] = (
    "PNV5b.8XLARGE96",
    "GN7.2XLARGE32",
    {"gpu": "H20", "instanceType": "PNV6.8XLARGE128", "gpusPerNode": 1},
)
_ISOLATIONS: Final = (None, "mig", "shared")


def service(index: int, measured_at: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"svc-{index:04d}",
        "measuredMiB": 2000 + 700 * ((7 * index) % 11),
        "measuredAt": measured_at,
        "replicas": 1 + (5 * index) % 12,
    }
    isolation = _ISOLATIONS[index % len(_ISOLATIONS)]
    if isolation is not None:
        entry["isolation"] = isolation
    return entry


def fleet_document(services: int, *, measured_at: str | None = None) -> dict[str, Any]:
    """A fleet file's document with `services` services and the three candidates."""
    if services < 1:
        raise ValueError("a fleet needs at least one service")
    when = measured_at or default_measured_at()
    return {
        "services": [service(index, when) for index in range(services)],
        "candidates": list(CANDIDATES),
        "ceiling": 0.9,
    }


def write_fleet(directory: Path, services: int, *, measured_at: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"fleet-{services}.yaml"
    text = yaml.safe_dump(fleet_document(services, measured_at=measured_at), sort_keys=False)
    path.write_text(f"# Synthetic benchmark fleet: {services} services (bench/fleet.py).\n{text}")
    return path
