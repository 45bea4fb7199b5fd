"""The capacity plan reproduces the seed's table (2 slots become 11)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpushare import catalog
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.stack.loading import load_stack_file


def _plan(project_dir: Path, stack: str) -> Any:
    return build_plan(load_stack_file(project_dir / f"Pulumi.{stack}.yaml"))


def test_prod_plan_is_the_seed_table(project_dir: Path) -> None:
    capacity = capacity_json(_plan(project_dir, "prod"))
    pools = {p["name"]: p for p in capacity["pools"]}  # type: ignore[attr-defined]
    assert pools["l20"]["replicas"] == 8
    assert pools["l20"]["slots"] == 8
    assert round(pools["l20"]["utilization"] * 100, 1) == 80.2
    assert int(pools["l20"]["headroomMiBPerSlot"]) == 1137
    assert pools["t4"]["replicas"] == 3
    assert round(pools["t4"]["utilization"] * 100, 1) == 86.0
    assert int(pools["t4"]["headroomMiBPerSlot"]) == 719  # not the seed's ~759
    assert capacity["totalSlots"] == 11
    assert capacity["slotsBefore"] == 2
    # Prod opts in to the seed's `any`: floor(0.9 x 15360 T4 / 4621 L20 process) = floor(2.99) = 2.
    assert capacity["fallback"] == {
        "key": "any",
        "mode": "time-slicing",
        "replicas": 2,
        "gpu": "T4",
        "measuredMiB": 4621,
        "summary": "2 replicas, tuned for T4 at 4621 MiB",
    }


def test_staging_plan_time_slices_the_mig_instances(project_dir: Path) -> None:
    plan = _plan(project_dir, "staging")
    h20 = plan.pool("h20")
    # H20 MIG memory (catalog, inferred from GH200 96GB / H100 NVL captures): 1g.12gb 11264 MiB,
    # 1g.24gb 22138 MiB. floor(0.9 x 11264 / 4621) = floor(2.19) = 2; floor(0.9 x 22138 / 4621) =
    # floor(4.31) = 4.
    replicas = {s.resource: s.tuning.replicas for s in h20.shared}
    assert replicas == {"nvidia.com/mig-1g.12gb": 2, "nvidia.com/mig-1g.24gb": 4}
    assert h20.mig_instances_per_gpu == 7
    # 4 GPUs per PNV6.16XLARGE640 node, each 6 x 2 + 1 x 4 = 16 slots.
    assert h20.gpus == 4
    assert h20.slots == 64
    assert plan.pool("l20").replicas == 8
    assert plan.total_slots == 64 + 8
    assert plan.slots_before == 5
    assert catalog.gpu("H20").mig_profile("1g.24gb").memory_mib == 22138
    # Staging does not opt in: `any` serves GPUs nobody named, so it shares nothing.
    assert plan.fallback.tuning is None and plan.fallback.replicas == 1
    assert capacity_json(plan)["fallback"] == {
        "key": "any",
        "mode": "exclusive",
        "replicas": 1,
        "gpu": None,
        "measuredMiB": None,
        "summary": "exclusive, one pod per GPU",
    }


@pytest.mark.parametrize(
    ("gpu", "measured", "replicas"),
    [
        ("T4", 4401, 3),  # floor(0.9 x 15360 / 4401) = floor(3.14) = 3
        ("L20", 4621, 8),  # floor(0.9 x 46068 / 4621) = floor(8.97) = 8
        ("T4", 7000, 1),  # floor(0.9 x 15360 / 7000) = floor(1.97) = 1: fewer than 2 fit, nothing shared
    ],
)
def test_opted_in_fallback_is_tuned_for_the_named_gpu(
    stack_document: Any, write_stack: Any, gpu: str, measured: int, replicas: int
) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["fallback"] = {"gpu": gpu, "measuredMiB": measured}
    fallback = build_plan(load_stack_file(write_stack(doc, "fallback"))).fallback
    assert fallback.replicas == replicas
    assert fallback.shared is (replicas >= 2)
    assert fallback.describe() == (
        f"{replicas} replicas, tuned for {gpu} at {measured} MiB"
        if replicas >= 2
        else f"exclusive, tuned for {gpu} at {measured} MiB (fewer than 2 fit)"
    )


def test_exclusive_and_untuned_pools(project_dir: Path, stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["sharing"] = {"mode": "exclusive"}
    doc["config"]["gpushare:pools"][0]["nodes"] = {"min": 0, "max": 4, "desired": 3}
    plan = build_plan(load_stack_file(write_stack(doc, "mixed")))
    assert plan.pool("t4").slots == 1
    assert plan.pool("t4").shared == ()
    assert plan.pool("l20").slots == 24
    assert plan.total_slots == 25
    assert plan.slots_before == 4


def test_table_prints_totals(project_dir: Path) -> None:
    table = capacity_table(capacity_json(_plan(project_dir, "prod")))
    assert "80.2 %" in table and "86.0 %" in table
    assert "~1137 MiB" in table and "~719 MiB" in table
    assert "11 schedulable GPU slots against 2 before sharing" in table
    assert "Fallback key `any` (GPU nodes whose label names no key): 2 replicas, tuned for T4" in table


def test_staging_table_says_the_fallback_is_exclusive(project_dir: Path) -> None:
    table = capacity_table(capacity_json(_plan(project_dir, "staging")))
    assert table.endswith(
        "Fallback key `any` (GPU nodes whose label names no key): exclusive, one pod per GPU."
    )


def test_a_multi_profile_mig_row_adds_up_to_its_slots(project_dir: Path) -> None:
    """staging's H20: 6 x 1g.12gb at 2 replicas + 1 x 1g.24gb at 4 = 16 slots a GPU, 64 on its 4 GPUs; no
    single replica count (4 was shown, the largest) describes that layout."""
    capacity = capacity_json(_plan(project_dir, "staging"))
    h20 = next(p for p in capacity["pools"] if p["name"] == "h20")  # type: ignore[attr-defined]
    assert h20["migProfiles"] == [
        {"profile": "1g.12gb", "instancesPerGpu": 6, "replicas": 2, "slotsPerGpu": 12},
        {"profile": "1g.24gb", "instancesPerGpu": 1, "replicas": 4, "slotsPerGpu": 4},
    ]
    assert (h20["replicas"], h20["gpus"], h20["slots"]) == (None, 4, 64)  # 4 x (12 + 4)
    rows = capacity_table(capacity).splitlines()
    row = next(line for line in rows if line.startswith("h20 "))
    cells = [cell.strip() for cell in re.split(r"\s{2,}", row)]
    assert cells[:6] == ["h20", "H20", "1", "4", "6 x 1g.12gb at 2 + 1 x 1g.24gb at 4 = 16/GPU", "64"]
    l20 = next(p for p in capacity["pools"] if p["name"] == "l20")  # type: ignore[attr-defined]
    assert (l20["replicas"], l20["migProfiles"]) == (8, [])


# --------------------------------------------------------------------------------------------------------
# The capacity report's per-pool numbers for the shapes that differ: no MIG, one slot, several MIG profiles


def test_pools_without_mig_report_no_mig_instances(project_dir: Path) -> None:
    capacity = capacity_json(_plan(project_dir, "prod"))
    pools = {p["name"]: p for p in capacity["pools"]}  # type: ignore[attr-defined]
    assert (pools["l20"]["migInstancesPerGpu"], pools["t4"]["migInstancesPerGpu"]) == (0, 0)
    # The table shows the replicas alone, never "N MIG x 8".
    rows = {line.split()[0]: line.split() for line in capacity_table(capacity).splitlines()[2:4]}
    assert rows["l20"][:6] == ["l20", "L20", "1", "1", "8", "8"]
    assert rows["t4"][:6] == ["t4", "T4", "1", "1", "3", "3"]


def test_a_one_slot_pool_reports_the_gpus_memory_less_the_process_as_headroom(
    stack_document: Any, write_stack: Any
) -> None:
    """T4 at 7000 MiB: floor(0.9 x 15360 / 7000) = floor(1.97) = 1, so nothing is shared and the one slot
    has 15360 - 7000 = 8360 MiB to spare; 7000 of 15360 used = 0.4557."""
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 7000
    capacity = capacity_json(build_plan(load_stack_file(write_stack(doc, "one-slot"))))
    t4 = next(p for p in capacity["pools"] if p["name"] == "t4")  # type: ignore[attr-defined]
    assert (t4["replicas"], t4["slots"], t4["migInstancesPerGpu"]) == (1, 1, 0)
    assert (t4["memoryUsedMiB"], t4["memoryTotalMiB"], t4["utilization"]) == (7000, 15360, 0.4557)
    assert t4["headroomMiBPerSlot"] == 8360.0
    assert "~8360 MiB" in capacity_table(capacity)


def test_an_exclusive_pool_without_a_measurement_reports_no_headroom(
    stack_document: Any, write_stack: Any
) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["sharing"] = {"mode": "exclusive"}
    t4 = build_plan(load_stack_file(write_stack(doc, "exclusive"))).pool("t4")
    assert (t4.measured_mib, t4.memory_used_mib, t4.utilization, t4.headroom_mib_per_slot) == (None,) * 4
    assert (t4.slots_per_gpu, t4.replicas) == (1, 1)


def test_a_multi_profile_mig_pool_reports_its_tightest_profiles_headroom(project_dir: Path) -> None:
    """Staging's H20, 6 x 1g.12gb time-sliced 2 ways + 1 x 1g.24gb time-sliced 4 ways, at 4621 MiB:
    1g.12gb 11264 / 2 - 4621 = 1011 MiB per slot; 1g.24gb 22138 / 4 - 4621 = 913.5: the tighter, 913.5."""
    capacity = capacity_json(_plan(project_dir, "staging"))
    h20 = next(p for p in capacity["pools"] if p["name"] == "h20")  # type: ignore[attr-defined]
    assert h20["headroomMiBPerSlot"] == 913.5
    # No single replica count describes two profiles time-sliced 2 and 4 ways: `replicas` is null.
    assert (h20["migInstancesPerGpu"], h20["replicas"], h20["slots"]) == (7, None, 64)
    # 64 slots x 4621 = 295744 MiB of 4 x 97871 = 391484: 0.7554.
    assert (h20["memoryUsedMiB"], h20["memoryTotalMiB"], h20["utilization"]) == (295744, 391484, 0.7554)
    row = next(line for line in capacity_table(capacity).splitlines() if line.startswith("h20 "))
    assert "~913 MiB" in row
