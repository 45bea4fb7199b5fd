"""The engine options every TKE node pool is registered with, read from the real program under mocks:
`ignore_changes` on an autoscaled pool's desired count, `replace_on_changes` on every ForceNew field of the
pinned provider's node pool that gpushare sets, and a pool's own `subnetIds`.

The ForceNew fields are the upstream resource's (terraform-provider-tencentcloud
`resource_tc_kubernetes_node_pool.go`, the bridge behind tencentcloud-iac-pulumi 0.2.3, whose Python SDK
carries no ForceNew marks): cluster_id, vpc_id, subnet_ids, retry_policy, node_config (all of it) and
auto_scaling_config.instance_type are written down here, not read from the component.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
from test_program import run_document, run_stack

from gpushare.errors import ConfigError
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.resource_types import NODE_POOL
from gpushare.stack.forcenew_notes import shared_force_new_notes
from gpushare.stack.loading import load_stack_file

# Engine property names (camelCase) of the ForceNew fields gpushare sets, in the order the component lists them.
FORCE_NEW_PATHS = [
    "clusterId",
    "vpcId",
    "subnetIds",
    "retryPolicy",
    "nodeConfig",
    "autoScalingConfig.instanceType",
]

STACK: dict[str, Any] = {
    "config": {
        "tencentcloud:region": "ap-singapore",
        "gpushare:cluster": {
            "id": "cls-opts0001",
            "vpcId": "vpc-opts0001",
            "subnetIds": ["subnet-opts0001"],
            "kubernetesVersion": "1.30",
        },
        "gpushare:sharing": {"devicePlugin": {"mode": "helm", "version": "0.17.1"}},
        "gpushare:pools": [
            {
                "name": "fixed",
                "gpu": "L20",
                "instanceType": "PNV5b.8XLARGE96",
                "nodes": {"min": 2, "max": 2, "desired": 2},
                "sharing": {"mode": "time-slicing", "measuredMiB": 4621},
            },
            {
                "name": "scaled",
                "gpu": "T4",
                "instanceType": "GN7.2XLARGE32",
                "nodes": {"min": 0, "max": 4, "desired": 1},
                "subnetIds": ["subnet-opts0002", "subnet-opts0003"],
                "sharing": {"mode": "time-slicing", "measuredMiB": 4401},
            },
        ],
    }
}


def stack_document() -> dict[str, Any]:
    return copy.deepcopy(STACK)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    return run_document(stack_document(), tmp_path_factory.mktemp("pool-options"), "opts")


def pool(run: ProgramRun, name: str) -> RecordedResource:
    [found] = [r for r in run.resources if r.type == NODE_POOL and r.inputs["name"] == f"gpushare-{name}"]
    return found


def test_an_autoscaled_pool_ignores_its_desired_count_once_created(run: ProgramRun) -> None:
    scaled = pool(run, "scaled")
    assert scaled.ignore_changes == ["desiredCapacity"]
    # Sent at create (ignore_changes only masks updates): TKE starts the pool at the stack's desired count.
    assert (scaled.inputs["enableAutoScale"], scaled.inputs["desiredCapacity"]) == (True, 1)


def test_a_fixed_pool_keeps_its_desired_count_managed(run: ProgramRun) -> None:
    fixed = pool(run, "fixed")
    assert fixed.ignore_changes == []
    assert (fixed.inputs["enableAutoScale"], fixed.inputs["desiredCapacity"]) == (False, 2)


@pytest.mark.parametrize("name", ["fixed", "scaled"])
def test_every_force_new_field_gpushare_sets_is_in_replace_on_changes(run: ProgramRun, name: str) -> None:
    registered = pool(run, name)
    assert registered.replace_on_changes == FORCE_NEW_PATHS
    # Each listed top-level field is really sent, so the list names nothing gpushare leaves to the provider.
    assert {path.split(".")[0] for path in FORCE_NEW_PATHS} <= set(registered.inputs)


def test_prod_pools_are_registered_with_the_force_new_fields_and_no_ignored_count() -> None:
    prod = run_stack("prod")
    pools = [r for r in prod.resources if r.type == NODE_POOL]
    assert len(pools) == 2  # l20 and t4, both min == max == 1
    assert all(p.replace_on_changes == FORCE_NEW_PATHS and p.ignore_changes == [] for p in pools)


def test_a_pool_carries_its_own_subnets_over_the_clusters(run: ProgramRun) -> None:
    assert pool(run, "scaled").inputs["subnetIds"] == ["subnet-opts0002", "subnet-opts0003"]
    assert pool(run, "fixed").inputs["subnetIds"] == ["subnet-opts0001"]


def load(document: dict[str, Any], tmp_path: Path) -> Any:
    import yaml

    path = tmp_path / "Pulumi.opts.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_stack_file(path)


def test_a_pool_subnet_that_is_no_subnet_id_is_refused(tmp_path: Path) -> None:
    document = stack_document()
    document["config"]["gpushare:pools"][1]["subnetIds"] = ["sub-1"]
    with pytest.raises(ConfigError) as caught:
        load(document, tmp_path)
    assert str(caught.value) == (
        "Pulumi.opts.yaml: gpushare:pools[1].subnetIds: 'sub-1' is not a subnet id (subnet-...)"
    )


def test_an_empty_pool_subnet_list_is_refused(tmp_path: Path) -> None:
    document = stack_document()
    document["config"]["gpushare:pools"][1]["subnetIds"] = []
    with pytest.raises(ConfigError) as caught:
        load(document, tmp_path)
    assert str(caught.value).startswith("Pulumi.opts.yaml: gpushare:pools[1].subnetIds: ")


def test_the_note_names_the_shared_subnets_when_every_pool_uses_them(tmp_path: Path) -> None:
    document = stack_document()
    del document["config"]["gpushare:pools"][1]["subnetIds"]
    assert shared_force_new_notes(load(document, tmp_path)) == [
        "Pulumi.opts.yaml: gpushare:cluster.subnetIds: every pool (fixed, scaled) sits behind this one list, "
        "which TKE cannot change in place: adding a subnet replaces them all at once; give a pool its own "
        "pools[].subnetIds to move one pool at a time"
    ]


def test_no_note_when_a_pool_has_its_own_subnets_or_there_is_one_pool(tmp_path: Path) -> None:
    assert shared_force_new_notes(load(stack_document(), tmp_path)) == []
    document = stack_document()
    del document["config"]["gpushare:pools"][1]
    assert shared_force_new_notes(load(document, tmp_path)) == []


def test_two_pools_with_the_same_own_subnets_are_still_one_shared_value(tmp_path: Path) -> None:
    document = stack_document()
    document["config"]["gpushare:pools"][0]["subnetIds"] = ["subnet-opts0002", "subnet-opts0003"]
    [note] = shared_force_new_notes(load(document, tmp_path))
    assert note.startswith(
        "Pulumi.opts.yaml: gpushare:pools[].subnetIds: every pool (fixed, scaled) sits behind "
    )


def test_plan_prints_the_note_for_prod_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import PROJECT_DIR

    from gpushare.cli.main import main as cli_main

    assert cli_main(["plan", "--stack", "prod", "--dir", str(PROJECT_DIR)], out=io.StringIO()) == 0
    assert capsys.readouterr().err == (
        "note: Pulumi.prod.yaml: gpushare:cluster.subnetIds: every pool (l20, t4) sits behind this one list, "
        "which TKE cannot change in place: adding a subnet replaces them all at once; give a pool its own "
        "pools[].subnetIds to move one pool at a time\n"
    )
