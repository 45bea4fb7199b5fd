"""The workload rules through the pack process (the analyzer protocol, gpushare/offline/policy_driver), as
`pulumi preview --policy-pack policies --policy-pack-config plan.json` runs them on another team's program
(tests/fixtures/foreign_program/workloads.yaml): the plan passes the CLI's schema check, what cannot work
is mandatory and what may wait is advisory; without the plan, one advisory names what was not judged.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from test_workload_rules import EXPECTED, NOT_JUDGED, WORKLOADS, plan_config

from gpushare.offline import policy_driver
from gpushare.offline.policy_model import AnalyzedResource, PackReport

__all__ = ["plan_config"]  # fixture used by name

# Whole processes (the pack): make test-e2e.
pytestmark = pytest.mark.e2e

PACK_DIR = PROJECT_DIR / "policies"
WORKLOAD_POLICY_PREFIX = "workload-"


def run(policy_config: dict[str, Any] | None) -> PackReport:
    document = yaml.safe_load(WORKLOADS.read_text())
    stack, project = document["stack"], document["project"]
    resources = [
        AnalyzedResource(
            type=r["type"],
            name=r["name"],
            urn=f"urn:pulumi:{stack}::{project}::{r['type']}::{r['name']}",
            properties=r["properties"],
            outputs=r["properties"],
        )
        for r in document["resources"]
    ]
    return policy_driver.run_policy_pack(
        PACK_DIR,
        resources,
        stack=stack,
        project=project,
        config=document["config"],
        policy_config=policy_config,
        timeout=120,
    )


def verdicts(report: PackReport) -> set[tuple[str, str, str, str]]:
    """(level, policy, resource name, message) of the workload policies' diagnostics."""
    return {
        (d.enforcement_level, d.policy_name, d.urn.rpartition("::")[2], d.message.split("\n", 1)[1])
        for d in report.diagnostics
        if d.policy_name.startswith(WORKLOAD_POLICY_PREFIX)
    }


def test_with_the_plan_each_faulty_workload_gets_its_finding_at_its_level(
    plan_config: dict[str, Any],
) -> None:
    report = run(plan_config)
    expected = {
        ("advisory" if policy.endswith("-advisory") else "mandatory", policy, name, message)
        for name, (policy, message) in EXPECTED.items()
    }
    assert verdicts(report) == expected
    assert "Traceback" not in report.stderr


def test_without_the_plan_only_what_a_workload_carries_is_judged() -> None:
    report = run(None)
    root = "gpu-team-gpu-team-prod"  # the root stack's name: an empty diagnostic URN is the stack's
    assert verdicts(report) == {
        ("mandatory", "workload-gpu-request", "requests-only", EXPECTED["requests-only"][1]),
        ("advisory", "workload-fits-pool-advisory", root, NOT_JUDGED),
    }
