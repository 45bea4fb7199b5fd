"""gpushare/advise/fleet.py: what `isolation` allows, when MIG is the best choice for an unconstrained service.

On an H20 a process of exactly 11264 MiB (the 1g.12gb instance's memory, catalog) fits time-slicing
floor(0.9 x 97871 / 11264) = floor(7.82) = 7 times and 7 MIG instances once each (7 x 1g.12gb, or
6 x 1g.12gb + 1g.24gb: 0.9 x 22138 / 11264 = 1.77, one slot): 7 slots either way, one GPU for 7
replicas, the same memory left unused. With equal slots the more isolated option comes first (advise's
order), so a service that says nothing about isolation gets the MIG layout, and `isolation: shared`
the time-sliced GPU.
"""

from __future__ import annotations

from pathlib import Path

from gpushare.advise.fleet import load_fleet, plan_fleet


def test_shared_excludes_the_mig_layout_an_unconstrained_service_gets(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "services:\n"
        "  - {name: free, measuredMiB: 11264, replicas: 7}\n"
        "  - {name: whole, measuredMiB: 11264, replicas: 7, isolation: shared}\n"
        "candidates: [{gpu: H20, instanceType: HX.ONE, gpusPerNode: 1}]\n"
    )
    unconstrained, shared = plan_fleet(load_fleet(path), str(path))
    assert (
        unconstrained.option.mode,
        unconstrained.option.slots,
        unconstrained.option.isolation_domains,
    ) == (
        "mig",
        7,
        7,
    )
    assert (shared.option.mode, shared.option.slots, shared.option.isolation_domains) == (
        "time-slicing",
        7,
        1,
    )
    # 1 GPU each: 97871 - 7 x 11264 = 19023 MiB unused, the same for both.
    assert [(p.gpus, p.wasted_mib) for p in (unconstrained, shared)] == [(1, 19023), (1, 19023)]
