"""gpushare/gpu_operator.py: the GPU Operator chart's values and ConfigMaps, from stacks around staging."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpushare import gpu_operator
from gpushare.plan import build_plan
from gpushare.plugin_configs import plugin_config_entries
from gpushare.stack.loading import load_stack_file

Doc = dict[str, Any]


def _values(path: Path) -> dict[str, Any]:
    plan = build_plan(load_stack_file(path))
    plugin_config = gpu_operator.device_plugin_config_map(plugin_config_entries(plan))
    mig_config = gpu_operator.mig_parted_config_map(plan)
    return gpu_operator.release_values(plan, plan.stack.plugin.gpu_operator, plugin_config, mig_config)


def test_content_addressed_names_follow_the_data_only() -> None:
    name = gpu_operator.content_addressed_name("cm", {"a": "1", "b": "2"})
    assert name.startswith("cm-") and len(name) == len("cm-") + 10
    assert gpu_operator.content_addressed_name("cm", {"b": "2", "a": "1"}) == name  # key order is no change
    assert gpu_operator.content_addressed_name("cm", {"a": "1", "b": "3"}) != name


def test_without_mig_pools_the_mig_manager_is_off_and_the_strategy_is_the_pools(
    stack_document: Callable[[str], Doc], write_stack: Callable[[Doc, str], Path]
) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:pools"] = doc["config"]["gpushare:pools"][1:]  # l20 only
    values = _values(write_stack(doc, "l20only"))
    assert values["migManager"] == {"enabled": False}
    # Every pool's file says none: the env override says the same, instead of the chart's `single`.
    assert values["mig"] == {"strategy": "none"}


def test_an_unshared_single_profile_mig_pool_alone_gets_single(
    stack_document: Callable[[str], Doc], write_stack: Callable[[Doc, str], Path]
) -> None:
    doc = stack_document("staging")
    h20 = doc["config"]["gpushare:pools"][0]
    h20["sharing"] = {"mode": "mig", "migLayout": {"1g.12gb": 7}, "layoutName": "all-1g.12gb"}
    doc["config"]["gpushare:pools"] = [h20]
    path = write_stack(doc, "single")
    assert _values(path)["mig"] == {"strategy": "single"}
    layouts = yaml.safe_load(_mig_text(path))["mig-configs"]
    assert layouts["all-1g.12gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.12gb": 7}}]


def _mig_text(path: Path) -> str:
    config_map = gpu_operator.mig_parted_config_map(build_plan(load_stack_file(path)))
    assert config_map is not None
    return config_map.data["config.yaml"]


def test_operator_switches_reach_the_values_and_the_pools(
    stack_document: Callable[[str], Doc], write_stack: Callable[[Doc, str], Path]
) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["gpuOperator"].update(
        {
            "prometheusOperator": True,
            "migManagerWithReboot": False,
            "runtimeClass": "nvidia",
            "driverEnabled": True,
        }
    )
    doc["config"]["gpushare:sharing"]["devicePlugin"]["nfdPresent"] = True
    values = _values(write_stack(doc, "switched"))
    assert values["dcgmExporter"]["serviceMonitor"] == {"enabled": True}
    assert "env" not in values["migManager"]
    assert values["operator"] == {"runtimeClass": "nvidia"}
    assert values["driver"] == {"enabled": True}
    assert values["nfd"] == {"enabled": False}  # the cluster runs its own NFD


def test_shared_pools_get_dcgm_exporters_per_pod_series(
    stack_document: Callable[[str], Doc], write_stack: Callable[[Doc, str], Path]
) -> None:
    # Staging time-slices its L20s: dcgm-exporter needs KUBERNETES_VIRTUAL_GPUS=true for one series per
    # sharing pod, and the host's PID namespace to match processes to pods (issue 34; the pinned chart
    # v26.7.0 defaults hostPID to false and sets no env: tests/test_chart_render.py renders it).
    values = _values(write_stack(stack_document("staging"), "staging"))
    assert values["dcgmExporter"] == {
        "enabled": True,
        "serviceMonitor": {"enabled": False},
        "hostPID": True,
        "env": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}],
    }
    # A pool that shares nothing (MIG instances, not time-sliced) needs neither: hostPID stays the chart's.
    doc = stack_document("staging")
    h20 = doc["config"]["gpushare:pools"][0]
    h20["sharing"] = {"mode": "mig", "migLayout": {"1g.12gb": 7}, "layoutName": "all-1g.12gb"}
    doc["config"]["gpushare:pools"] = [h20]
    assert _values(write_stack(doc, "unshared"))["dcgmExporter"] == {
        "enabled": True,
        "serviceMonitor": {"enabled": False},
    }
