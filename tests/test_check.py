"""`python -m gpushare check`: the render handed to the policy pack as the engine would hand it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.stack_config import PROJECT
from offline import policy_driver
from offline.check import analyzed_resources, check_stack
from offline.render import run_stack

PROJECT_DIR = Path(__file__).resolve().parent.parent
STACKS = sorted(
    p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in PROJECT_DIR.glob("Pulumi.*.yaml")
)


def test_resources_reach_the_pack_as_the_engine_sends_them() -> None:
    resources = analyzed_resources(run_stack(PROJECT_DIR, "prod"))
    types = {r.type for r in resources}
    assert not any(t.startswith("pulumi:") for t in types)  # no root stack, no providers
    assert "kubernetes:apps/v1:DaemonSet" in types
    config_map = next(r for r in resources if r.type == "kubernetes:core/v1:ConfigMap")
    assert config_map.provider is not None
    assert config_map.provider.type == "pulumi:providers:kubernetes"
    # The kubeconfig is secret in the program: the pack sees it wrapped, as the engine sends it.
    assert config_map.provider.properties["kubeconfig"] == policy_driver.secret(
        config_map.provider.properties["kubeconfig"]["value"]
    )
    assert all(r.urn.startswith(f"urn:pulumi:prod::{PROJECT}::") for r in resources)


def test_sample_pack_sees_every_resource(tmp_path: Path) -> None:
    result = check_stack(PROJECT_DIR, "prod", pack_dir=PROJECT_DIR / "tests" / "fixtures" / "sample_pack")
    inventory = next(d for d in result.report.diagnostics if d.policy_name == "stack-inventory")
    assert "11 resources:" in inventory.message
    assert result.passed


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_the_real_pack(stack: str) -> None:
    result = check_stack(PROJECT_DIR, stack)
    assert result.report.pack_name == "gpushare"
    assert not result.report.mandatory, policy_driver.format_report(result.report)


def test_check_through_the_cli_exits_0_for_prod() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "check", "--stack", "prod"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Policies:" in done.stdout
    assert "0 mandatory" in done.stdout
