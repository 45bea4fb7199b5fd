"""What happens at `pulumi up` that the mocks can show: which changes replace a node pool (its
`replace_on_changes` against the inputs that changed, the engine's rule), what the plugin workloads wait
for, and the GPU arguments a pool hands TKE."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from test_program import run_document, run_stack

from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.resource_types import DAEMON_SET, DAEMON_SET_PATCH, HELM_RELEASE, NODE_POOL
from gpushare.stack_config import GpuDriver, load_stack_file
from offline.mock_run import ProgramRun, RecordedResource, run_function


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


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_stack("prod")


@pytest.fixture(scope="module")
def staging() -> ProgramRun:
    return run_stack("staging")


def node_pools(run: ProgramRun) -> dict[str, RecordedResource]:
    return {r.urn: r for r in run.resources if r.type == NODE_POOL}


def test_a_mig_layout_change_plans_the_replacement_of_the_pool(staging: ProgramRun, tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    sharing = document["config"]["gpushare:pools"][0]["sharing"]
    assert sharing["migLayout"] == {"1g.12gb": 7}
    sharing["migLayout"] = {"1g.24gb": 4}
    sharing["layoutName"] = "all-1g.24gb"
    before, after = node_pools(staging), node_pools(run_document(document, tmp_path, "staging"))
    assert before.keys() == after.keys()  # same pool (same URN): an update or a replacement, not a rename
    [h20_urn] = [urn for urn in before if urn.endswith("::gpushare-h20-pool")]
    old, new = before[h20_urn], after[h20_urn]
    # The label alone would update in place and leave the nodes on their old MIG instances ...
    assert new.inputs["labels"]["nvidia.com/mig.config"] == "all-1g.24gb"
    # ... but the script that partitions the nodes changed too, and it is under replace_on_changes.
    assert "nodeConfig" in new.replace_on_changes
    assert ("nodeConfig", "preStartUserScript") in changed_paths(old.inputs, new.inputs)
    assert replacing_changes(old, new) == {"nodeConfig"}
    # The L20 pool next to it is untouched.
    [l20_urn] = [urn for urn in before if urn.endswith("::gpushare-l20-pool")]
    assert replacing_changes(before[l20_urn], after[l20_urn]) == set()


def test_a_measurement_change_replaces_no_pool_and_protected_pools_refuse_replacement(
    prod: ProgramRun, tmp_path: Path
) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"]["gpushare:pools"][0]["sharing"]["measuredMiB"] = 3000
    before, after = node_pools(prod), node_pools(run_document(document, tmp_path, "prod"))
    assert all(replacing_changes(before[urn], after[urn]) == set() for urn in before)
    # Production pools are protected: the engine refuses any replacement it would plan.
    assert all(pool.protect and pool.replace_on_changes for pool in after.values())


def test_an_instance_type_change_plans_a_replacement(staging: ProgramRun, tmp_path: Path) -> None:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    h20 = document["config"]["gpushare:pools"][0]
    h20["instanceType"], h20["gpusPerNode"] = "PNV6.16XLARGE640", 4
    before, after = node_pools(staging), node_pools(run_document(document, tmp_path, "staging"))
    [urn] = [urn for urn in before if urn.endswith("::gpushare-h20-pool")]
    assert replacing_changes(before[urn], after[urn]) == {"autoScalingConfig.instanceType"}


def _patch_urn(run: ProgramRun) -> str:
    [patch] = [r for r in run.resources if r.type == DAEMON_SET_PATCH]
    return patch.urn


def test_every_plugin_workload_waits_for_the_patch_of_tkes_plugin(
    prod: ProgramRun, staging: ProgramRun
) -> None:
    daemonsets = [r for r in prod.resources if r.type == DAEMON_SET]
    assert [d.inputs["metadata"]["name"] for d in daemonsets] == ["nvidia-device-plugin-daemonset-l20"]
    assert all(_patch_urn(prod) in d.dependencies for d in daemonsets)
    [release] = [r for r in staging.resources if r.type == HELM_RELEASE]
    assert _patch_urn(staging) in release.dependencies
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
    stack = load_stack_file(PROJECT_DIR / "Pulumi.staging.yaml")
    result = run_function(
        lambda: GpuNodePool("h20", GpuNodePoolArgs(stack.cluster, stack.pool("h20"), {})),
        project="gpushare",
        stack="test",
    )
    [node_pool] = [r for r in result.resources if r.type == NODE_POOL]
    assert node_pool.inputs["nodeConfig"] == {"gpuArgs": {"migEnable": True}}
