"""components/gpu_operator_release.py: the two content-addressed ConfigMaps the GPU Operator reads are
immutable (their names and namespace: tests/test_components.py).

The staging stack (Pulumi.staging.yaml: the GPU Operator with an H20 MIG pool and an L20 pool) under the
mocks, the component on its own (tests/test_components.py's helpers).
"""

from __future__ import annotations

import pytest
from test_components import children, run, stack

from components.gpu_operator_release import GpuOperatorRelease, GpuOperatorReleaseArgs
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.plan import build_plan
from gpushare.plugin_configs import plugin_config_entries

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


@pytest.fixture(scope="module")
def staging_release() -> ProgramRun:
    plan = build_plan(stack("staging"))
    return run(lambda: GpuOperatorRelease("op", GpuOperatorReleaseArgs(plan, plugin_config_entries(plan))))


def _config_maps(result: ProgramRun) -> dict[str, RecordedResource]:
    _, registered = children(result, "gpushare:helm:GpuOperatorRelease")
    return {child.name: child for child in registered if child.type == CONFIG_MAP}


def test_both_content_addressed_config_maps_are_immutable(staging_release: ProgramRun) -> None:
    config_maps = _config_maps(staging_release)
    assert sorted(config_maps) == ["op-device-plugin-config", "op-mig-parted-config"]
    # A ConfigMap named by its content must never be edited in place: the API server refuses it.
    assert {name: c.inputs["immutable"] for name, c in config_maps.items()} == {
        "op-device-plugin-config": True,
        "op-mig-parted-config": True,
    }
