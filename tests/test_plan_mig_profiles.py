"""gpushare/plan.py: a MIG pool's profiles, largest instance count first and, at equal counts, by name,
whatever order the stack file writes `migLayout` in (the plan table and JSON read the same both ways).

Staging's H20 pool (4 x H20 per node, MIG time-sliced for 4621 MiB) with the layout written as
{2g.24gb: 1, 1g.24gb: 1, 1g.12gb: 4}: 2 + 1 + 4 = 7 compute slices, 2 + 2 + 4 = 8 memory slices (fits).
Replicas (catalog memory, ceiling 0.9): 1g.12gb 11264 MiB -> floor(10137.6 / 4621) = 2; 1g.24gb and
2g.24gb 22138 MiB -> floor(19924.2 / 4621) = floor(4.31) = 4. Per GPU 4 x 2 + 4 + 4 = 16 slots.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import PROJECT_DIR

from gpushare.plan import build_plan, capacity_json
from gpushare.stack.loading import load_stack_file


def test_profiles_at_equal_counts_are_ordered_by_name(tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    h20 = next(p for p in document["config"]["gpushare:pools"] if p["name"] == "h20")
    h20["sharing"]["migLayout"] = {"2g.24gb": 1, "1g.24gb": 1, "1g.12gb": 4}
    del h20["sharing"]["layoutName"]
    path = tmp_path / "Pulumi.staging.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    plan = build_plan(load_stack_file(path))
    pool = next(p for p in capacity_json(plan)["pools"] if p["name"] == "h20")  # type: ignore[attr-defined]
    assert [(m["profile"], m["instancesPerGpu"], m["replicas"]) for m in pool["migProfiles"]] == [
        ("1g.12gb", 4, 2),
        ("1g.24gb", 1, 4),
        ("2g.24gb", 1, 4),
    ]
    assert plan.pool("h20").slots_per_gpu == 16
