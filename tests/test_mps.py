"""MPS pools (gpushare/mps.py, the stack model's mode `mps`, the plan and the rendered config)."""

from __future__ import annotations

import json

import pytest

from gpushare import catalog, device_plugin, mps
from gpushare.device_plugin import DevicePluginConfigError
from gpushare.plan import build_plan
from gpushare.plugin_configs import plugin_config_entries
from gpushare.stack.model import StackConfig


def _stack(mode: str = "helm", sharing: dict | None = None, plugin: dict | None = None) -> dict:
    device_plugin_settings = {"mode": mode, **(plugin or {})}
    return {
        "stack": "t",
        "source": "Pulumi.t.yaml",
        "cluster": {
            "id": "cls-mps00001",
            "vpcId": "vpc-mps00001",
            "subnetIds": ["subnet-mps00001"],
            "kubernetesVersion": "1.30",
        },
        "sharing": {"utilizationCeiling": 0.9, "devicePlugin": device_plugin_settings},
        "pools": [
            {
                "name": "l20",
                "gpu": "L20",
                "instanceType": "PNV5b.8XLARGE96",
                "nodes": {"min": 0, "max": 1, "desired": 1},
                "sharing": sharing or {"mode": "mps", "measuredMiB": 4621},
            }
        ],
    }


def _load(data: dict) -> StackConfig:
    return StackConfig.model_validate_json(json.dumps(data))


def _error(data: dict) -> str:
    with pytest.raises(ValueError) as caught:
        _load(data)
    return str(caught.value)


def test_seed_l20_mps_pool_plans_8_clients_of_5758_mib() -> None:
    # floor(0.9 x 46068 / 4621) = floor(8.97) = 8 replicas; 46068 // 8 = 5758 MiB per client.
    plan = build_plan(_load(_stack()))
    pool = plan.pools[0]
    assert (pool.slots_per_gpu, pool.client_memory_limit_mib) == (8, 5758)


def test_rendered_config_is_sharing_mps_and_the_mps_versions_accept_it() -> None:
    entry = plugin_config_entries(build_plan(_load(_stack())))[0]
    for version in ("0.17.1", "0.20.0"):
        parsed = device_plugin.parse(entry.text, version)
        assert parsed.config.sharing.mps is not None
        assert parsed.config.sharing.time_slicing is None
        assert [(r.name, r.replicas) for r in parsed.config.sharing.mps.resources] == [("nvidia.com/gpu", 8)]
        assert parsed.effective_flags.mps_root == "/run/nvidia/mps"


def test_mps_builder_refuses_one_replica() -> None:
    with pytest.raises(DevicePluginConfigError):
        device_plugin.mps_config([("nvidia.com/gpu", 1)], mps.MPS_ROOT)


def test_daemonsets_mode_refuses_mps_with_its_key() -> None:
    assert "pools[0].sharing.mode" in _error(_stack(mode="daemonsets"))


def test_helm_0_14_5_refuses_mps() -> None:
    assert "pools[0].sharing.mode" in _error(_stack(plugin={"version": "0.14.5"}))


def test_mig_strategy_mixed_refuses_mps() -> None:
    assert "sharing.devicePlugin.migStrategy" in _error(_stack(plugin={"migStrategy": "mixed"}))


def test_mps_on_a_mig_pool_is_refused() -> None:
    data = _stack()
    data["pools"][0].update(gpu="H20", instanceType="PNV6.16XLARGE640", gpusPerNode=4)
    data["pools"][0]["sharing"] = {"mode": "mig", "migLayout": {"1g.12gb": 7}, "mps": {"measuredMiB": 4621}}
    assert "mps" in _error(data)


def test_a_process_leaving_one_client_is_refused() -> None:
    # 0.9 x 46068 / 30000 = 1.38: one client only.
    assert "pools[0].sharing.measuredMiB" in _error(_stack(sharing={"mode": "mps", "measuredMiB": 30000}))


def test_client_limit_boundaries() -> None:
    # 46068 // 8 = 5758; 0.9 x 5758 = 5182.2 >= 5182 holds, 5183 does not.
    assert mps.client_limit_problem(46068, 8, 5182, 0.9) is None
    assert mps.client_limit_problem(46068, 8, 5183, 0.9) is not None
    assert mps.client_memory_limit_mib(15360, 3) == 5120  # T4 at the seed's 4401 MiB: 3 replicas
    # The degenerate counts: one client gets the whole card; none is refused, not a division by zero.
    assert mps.client_memory_limit_mib(15360, 1) == 15360
    with pytest.raises(ValueError, match="replicas must be >= 1, got 0"):
        mps.client_memory_limit_mib(15360, 0)


def test_every_catalog_gpu_of_the_seed_supports_mps() -> None:
    for key in ("L20", "T4", "H20"):
        gpu = catalog.gpu(key)
        assert mps.compute_capability_problem(gpu.key, gpu.compute_capability) is None
