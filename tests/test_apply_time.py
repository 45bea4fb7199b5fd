"""What happens at `pulumi up` that the mocks can show: which changes replace a node pool (its
`replace_on_changes` against the inputs that changed, the engine's rule), what the plugin workloads wait
for, and the GPU arguments a pool hands TKE."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from test_program import run_document, run_stack

from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.offline.mock_run import run_function
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.resource_types import DAEMON_SET, DAEMON_SET_PATCH, HELM_RELEASE, NODE_POOL
from gpushare.stack.loading import from_config_values, load_stack_file
from gpushare.stack.model import GpuDriver


def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    else:
        yield path, value


def changed_paths(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[tuple[str, ...]]:
    before, after = dict(_leaves(old)), dict(_leaves(new))
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def replacing_changes(old: RecordedResource, new: RecordedResource) -> set[str]:
    """The engine plans a replacement when an input under one of the new registration's
    `replace_on_changes` paths changed; these are those paths ("" when nothing under them changed)."""
    changed = changed_paths(old.inputs, new.inputs)
    return {
        rule
        for rule in new.replace_on_changes
        if any(path[: len(rule.split("."))] == tuple(rule.split(".")) for path in changed)
    }


# A helm-mode H20 MIG stack written out here, not read from Pulumi.staging.yaml: the tests must not change
# meaning when that stack does. In helm mode the nodes partition their own GPUs (the boot-time script).
HELM_MIG_STACK: dict[str, Any] = {
    "config": {
        "tencentcloud:region": "ap-singapore",
        "gpushare:cluster": {
            "id": "cls-mig0001",
            "vpcId": "vpc-mig0001",
            "subnetIds": ["subnet-mig0001"],
            "kubernetesVersion": "1.30",
        },
        "gpushare:sharing": {
            "devicePlugin": {"mode": "helm", "version": "0.17.1", "managedPlugin": {"action": "park"}}
        },
        "gpushare:pools": [
            {
                "name": "h20",
                "gpu": "H20",
                "instanceType": "PNV6.16XLARGE640",
                "nodes": {"min": 1, "max": 1, "desired": 1},
                "sharing": {"mode": "mig", "migLayout": {"1g.12gb": 7}, "layoutName": "all-1g.12gb"},
            },
            {
                "name": "l20",
                "gpu": "L20",
                "instanceType": "PNV5b.8XLARGE96",
                "nodes": {"min": 1, "max": 1, "desired": 1},
                "sharing": {"mode": "time-slicing", "measuredMiB": 4621},
            },
        ],
    }
}


def helm_mig_stack() -> dict[str, Any]:
    return copy.deepcopy(HELM_MIG_STACK)


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_stack("prod")


@pytest.fixture(scope="module")
def helm_mig(tmp_path_factory: pytest.TempPathFactory) -> ProgramRun:
    return run_document(helm_mig_stack(), tmp_path_factory.mktemp("helm-mig"), "mig")


def node_pools(run: ProgramRun) -> dict[str, RecordedResource]:
    return {r.urn: r for r in run.resources if r.type == NODE_POOL}


def the_pool(pools: Mapping[str, RecordedResource], name: str) -> RecordedResource:
    [pool] = [r for urn, r in pools.items() if urn.endswith(f"::gpushare-{name}-pool")]
    return pool


def test_a_mig_layout_change_plans_the_replacement_of_the_pool(helm_mig: ProgramRun, tmp_path: Path) -> None:
    document = helm_mig_stack()
    sharing = document["config"]["gpushare:pools"][0]["sharing"]
    sharing["migLayout"] = {"1g.24gb": 4}
    sharing["layoutName"] = "all-1g.24gb"
    before, after = node_pools(helm_mig), node_pools(run_document(document, tmp_path, "mig"))
    assert before.keys() == after.keys()  # same pool (same URN): an update or a replacement, not a rename
    old, new = the_pool(before, "h20"), the_pool(after, "h20")
    # The label alone would update in place and leave the nodes on their old MIG instances ...
    assert new.inputs["labels"]["nvidia.com/mig.config"] == "all-1g.24gb"
    # ... but the script that partitions the nodes changed too, and it is under replace_on_changes.
    assert "nodeConfig" in new.replace_on_changes
    assert ("nodeConfig", "preStartUserScript") in changed_paths(old.inputs, new.inputs)
    assert replacing_changes(old, new) == {"nodeConfig"}
    # The L20 pool next to it is untouched.
    assert replacing_changes(the_pool(before, "l20"), the_pool(after, "l20")) == set()


def test_a_measurement_change_replaces_no_pool_and_protected_pools_refuse_replacement(
    prod: ProgramRun, tmp_path: Path
) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"]["gpushare:pools"][0]["sharing"]["measuredMiB"] = 3000
    before, after = node_pools(prod), node_pools(run_document(document, tmp_path, "prod"))
    assert all(replacing_changes(before[urn], after[urn]) == set() for urn in before)
    # Production pools are protected: the engine refuses any replacement it would plan.
    assert all(pool.protect and pool.replace_on_changes for pool in after.values())


def test_an_instance_type_change_plans_a_replacement(helm_mig: ProgramRun, tmp_path: Path) -> None:
    document = helm_mig_stack()
    document["config"]["gpushare:pools"][0]["instanceType"] = "PNV6.32XLARGE1280"  # 4 -> 8 x H20
    before, after = node_pools(helm_mig), node_pools(run_document(document, tmp_path, "mig"))
    assert replacing_changes(the_pool(before, "h20"), the_pool(after, "h20")) == {
        "autoScalingConfig.instanceType"
    }


def test_a_pool_may_delete_before_its_replacement(helm_mig: ProgramRun, tmp_path: Path) -> None:
    # Default: the option is not sent at all (an explicit false would override the provider's answer).
    assert [pool.delete_before_replace for pool in node_pools(helm_mig).values()] == [None, None]
    document = helm_mig_stack()
    document["config"]["gpushare:pools"][0]["deleteBeforeReplace"] = True
    after = node_pools(run_document(document, tmp_path, "mig"))
    assert the_pool(after, "h20").delete_before_replace is True
    assert the_pool(after, "l20").delete_before_replace is None  # per pool
    # The option changes no input: switching it on replaces nothing by itself.
    assert replacing_changes(the_pool(node_pools(helm_mig), "h20"), the_pool(after, "h20")) == set()


def _patch_urn(run: ProgramRun) -> str:
    [patch] = [r for r in run.resources if r.type == DAEMON_SET_PATCH]
    return patch.urn


def test_every_plugin_workload_waits_for_the_patch_of_tkes_plugin(
    prod: ProgramRun, helm_mig: ProgramRun
) -> None:
    daemonsets = [r for r in prod.resources if r.type == DAEMON_SET]
    assert [d.inputs["metadata"]["name"] for d in daemonsets] == ["nvidia-device-plugin-daemonset-l20"]
    assert all(_patch_urn(prod) in d.dependencies for d in daemonsets)
    [release] = [r for r in helm_mig.resources if r.type == HELM_RELEASE]
    assert _patch_urn(helm_mig) in release.dependencies
    # Registered after it, as `pulumi up` will create them.
    order = [r.urn for r in prod.resources]
    assert order.index(_patch_urn(prod)) < order.index(daemonsets[0].urn)


def test_a_pools_driver_reaches_tkes_gpu_args() -> None:
    stack = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml")
    pool = stack.pool("l20").model_copy(
        update={
            "driver": GpuDriver.model_validate(
                {
                    "version": "535.161.07",
                    "name": "NVIDIA-Linux-x86_64-535.161.07.run",
                    "cuda": {"version": "12.2", "name": "cuda_12.2"},
                    "cudnn": {"version": "8.9", "name": "cudnn-8.9", "docName": "doc"},
                }
            )
        }
    )
    result = run_function(
        lambda: GpuNodePool("l20", GpuNodePoolArgs(stack.cluster, pool, {})), project="gpushare", stack="test"
    )
    [node_pool] = [r for r in result.resources if r.type == NODE_POOL]
    assert node_pool.inputs["name"] == "gpushare-l20"
    assert node_pool.inputs["nodeConfig"]["gpuArgs"] == {
        "migEnable": False,
        "driver": {"version": "535.161.07", "name": "NVIDIA-Linux-x86_64-535.161.07.run"},
        "cuda": {"version": "12.2", "name": "cuda_12.2"},
        "cudnn": {"version": "8.9", "name": "cudnn-8.9", "doc_name": "doc"},
    }


def test_a_mig_pool_given_no_script_still_enables_mig_and_installs_nothing() -> None:
    # A mode with a MIG manager passes no script: TKE still turns MIG mode on, nothing partitions at boot.
    stack = from_config_values(helm_mig_stack()["config"], stack="mig", source="Pulumi.mig.yaml")
    result = run_function(
        lambda: GpuNodePool("h20", GpuNodePoolArgs(stack.cluster, stack.pool("h20"), {})),
        project="gpushare",
        stack="test",
    )
    [node_pool] = [r for r in result.resources if r.type == NODE_POOL]
    assert node_pool.inputs["nodeConfig"] == {"gpuArgs": {"migEnable": True}}
