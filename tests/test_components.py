"""Each component on its own, under the mocks: the inputs it registers and the parent of every child."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable

import pytest
import yaml
from conftest import HELM_MIG, stack_file

from components.device_plugin_daemonsets import DevicePluginDaemonSets, DevicePluginDaemonSetsArgs
from components.device_plugin_release import DevicePluginRelease, DevicePluginReleaseArgs
from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.gpu_operator_release import GpuOperatorRelease, GpuOperatorReleaseArgs
from components.managed_device_plugin import ManagedDevicePlugin, ManagedDevicePluginArgs
from components.mig_partition import MigPartition, MigPartitionArgs
from components.time_slicing_config import TimeSlicingConfig, TimeSlicingConfigArgs
from gpushare.offline.mock_run import run_function
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.plan import build_plan
from gpushare.plugin_configs import PluginConfigEntry, plugin_config_entries
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import StackConfig
from gpushare.stack.plugin_settings import ManagedPlugin


def stack(name: str) -> StackConfig:
    return load_stack_file(stack_file(name))


def entries(name: str) -> dict[str, PluginConfigEntry]:
    return {e.key: e for e in plugin_config_entries(build_plan(stack(name)))}


def run(body: Callable[[], object]) -> ProgramRun:
    return run_function(lambda: body(), project="gpushare", stack="test")


def children(result: ProgramRun, component_type: str) -> tuple[RecordedResource, list[RecordedResource]]:
    [component] = [r for r in result.resources if r.type == component_type]
    return component, [r for r in result.resources if r.parent == component.urn]


def test_gpu_node_pool_registers_one_labelled_tke_pool() -> None:
    prod = stack("prod")
    result = run(lambda: GpuNodePool("np", GpuNodePoolArgs(prod.cluster, prod.pool("t4"), {}, protect=True)))
    component, [pool] = children(result, "gpushare:tke:GpuNodePool")
    assert component.urn.endswith("::gpushare:tke:GpuNodePool::np")
    assert pool.type == "tencentcloud:Kubernetes/nodePool:NodePool"
    assert pool.name == "np-pool"
    assert pool.protect
    assert pool.inputs["autoScalingConfig"] == {"instanceType": "GN7.2XLARGE32"}
    assert pool.inputs["vpcId"] == "vpc-prod0001" and pool.inputs["subnetIds"] == ["subnet-prod0001"]
    assert pool.inputs["labels"]["nvidia.com/device-plugin.config"] == "t4"
    assert pool.inputs["labels"]["gpushare.io/gpu-model"] == "T4"
    assert "preStartUserScript" not in pool.inputs["nodeConfig"]
    assert pool.inputs["enableAutoScale"] is False  # min == max


@pytest.mark.parametrize(("device_enable", "expected"), [(None, "enable"), ("disable", "disable")])
def test_gpu_node_pool_sets_tke_switch_label(device_enable: str | None, expected: str) -> None:
    prod = stack("prod")
    args = GpuNodePoolArgs(prod.cluster, prod.pool("t4"), {})
    if device_enable is not None:  # managedPlugin optOut
        args = GpuNodePoolArgs(prod.cluster, prod.pool("t4"), {}, device_enable=device_enable)
    _, [pool] = children(run(lambda: GpuNodePool("np", args)), "gpushare:tke:GpuNodePool")
    assert pool.inputs["labels"]["nvidia-device-enable"] == expected


def test_device_plugin_daemonsets_under_opt_out_select_the_pool_not_tke_switch() -> None:
    found = entries("prod")
    args = DevicePluginDaemonSetsArgs([found["t4"]], image="registry/plugin:v0.14.5", select_tke_switch=False)
    _, [ds] = children(run(lambda: DevicePluginDaemonSets("dp", args)), "gpushare:k8s:DevicePluginDaemonSets")
    assert ds.inputs["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/device-plugin.config": "t4",
        "gpushare.io/pool": "t4",
    }


def test_gpu_node_pool_with_a_mig_script_enables_mig() -> None:
    staging = stack(HELM_MIG)
    script = "#!/bin/bash\nnvidia-smi -mig 1\n"
    args = GpuNodePoolArgs(
        staging.cluster, staging.pool("h20"), {"nvidia.com/mig.config": "all-1g.12gb"}, script
    )
    result = run(lambda: GpuNodePool("h20", args))
    _, [pool] = children(result, "gpushare:tke:GpuNodePool")
    assert pool.inputs["nodeConfig"]["gpuArgs"] == {"migEnable": True}
    assert base64.b64decode(pool.inputs["nodeConfig"]["preStartUserScript"]).decode() == script
    assert pool.inputs["labels"]["nvidia.com/mig.config"] == "all-1g.12gb"
    assert not pool.protect and pool.inputs["deletionProtection"] is False


def test_gpu_node_pool_mig_enable_can_be_set_without_a_script() -> None:
    """GPU Operator mode: the MIG manager partitions; TKE's mig_enable is the stack's explicit choice."""
    staging = stack("staging")
    for wanted in (True, False):
        args = GpuNodePoolArgs(staging.cluster, staging.pool("h20"), {}, mig_enable=wanted)
        result = run(lambda args=args: GpuNodePool("h20", args))  # type: ignore[misc]
        _, [pool] = children(result, "gpushare:tke:GpuNodePool")
        assert pool.inputs["nodeConfig"]["gpuArgs"] == {"migEnable": wanted}
        assert "preStartUserScript" not in pool.inputs["nodeConfig"]


def test_gpu_operator_release_names_the_config_maps_it_registers() -> None:
    plan = build_plan(stack("staging"))
    result = run(lambda: GpuOperatorRelease("op", GpuOperatorReleaseArgs(plan, plugin_config_entries(plan))))
    _, children_ = children(result, "gpushare:helm:GpuOperatorRelease")
    by_type = {}
    for child in children_:
        by_type.setdefault(child.type, []).append(child)
    [namespace] = by_type["kubernetes:core/v1:Namespace"]
    [release] = by_type["kubernetes:helm.sh/v3:Release"]
    config_maps = {c.inputs["metadata"]["name"]: c for c in by_type["kubernetes:core/v1:ConfigMap"]}
    values = release.inputs["values"]
    assert set(config_maps) == {
        values["devicePlugin"]["config"]["name"],
        values["migManager"]["config"]["name"],
    }
    assert {c.inputs["metadata"]["namespace"] for c in config_maps.values()} == {"gpu-operator"}
    assert namespace.inputs["metadata"]["name"] == "gpu-operator"
    # The release waits for the ConfigMaps it names (and a replaced one outlives the move).
    assert {c.urn for c in config_maps.values()} <= set(release.dependencies)


def test_time_slicing_config_holds_every_key_and_its_provenance() -> None:
    found = entries("prod")
    result = run(lambda: TimeSlicingConfig("ts", TimeSlicingConfigArgs(list(found.values()))))
    _, [config_map] = children(result, "gpushare:k8s:TimeSlicingConfig")
    assert config_map.inputs["metadata"]["name"] == "time-slicing-config"
    assert list(config_map.inputs["data"]) == ["any", "l20", "t4"]
    assert config_map.inputs["data"]["t4"] == found["t4"].text
    provenance = yaml.safe_load(config_map.inputs["metadata"]["annotations"]["gpushare.io/tuning-t4"])
    assert provenance["measuredMiB"] == 4401 and provenance["resources"][0]["replicas"] == 3


def test_device_plugin_daemonsets_one_per_entry_with_its_checksum() -> None:
    found = entries("prod")
    args = DevicePluginDaemonSetsArgs([found["l20"], found["t4"]], image="registry/plugin:v0.14.5")
    result = run(lambda: DevicePluginDaemonSets("dp", args))
    _, daemonsets = children(result, "gpushare:k8s:DevicePluginDaemonSets")
    assert [d.name for d in daemonsets] == ["dp-l20", "dp-t4"]
    for ds, key in zip(daemonsets, ("l20", "t4"), strict=True):
        pod = ds.inputs["spec"]["template"]
        assert (
            pod["metadata"]["annotations"]["gpushare.io/config-sha256"]
            == hashlib.sha256(found[key].text.encode()).hexdigest()
        )
        container = pod["spec"]["containers"][0]
        assert container["image"] == "registry/plugin:v0.14.5"
        # A file, never the mount directory (seed pitfall 3).
        assert container["args"][-1] == f"--config-file=/etc/nvidia/time-slicing-config/{key}"
        assert pod["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"] == key


def test_managed_plugin_parked_gets_a_selector_no_node_has() -> None:
    result = run(lambda: ManagedDevicePlugin("tke", ManagedDevicePluginArgs(ManagedPlugin())))
    _, [patch] = children(result, "gpushare:k8s:ManagedDevicePlugin")
    assert patch.type == "kubernetes:apps/v1:DaemonSetPatch"
    assert patch.inputs["metadata"] == {
        "name": "nvidia-device-plugin-daemonset",
        "namespace": "kube-system",
        "annotations": {
            "pulumi.com/patchForce": "true",
            "pulumi.com/patchFieldManager": "gpushare-tke-device-plugin",
        },
    }
    # TKE's args too (the seed's three): a move from adopt gives them back (tests/test_engine_tke_plugin.py).
    assert patch.inputs["spec"] == {
        "template": {
            "spec": {
                "nodeSelector": {"gpushare.io/managed-plugin": "parked"},
                "containers": [
                    {
                        "name": "nvidia-device-plugin-ctr",
                        "args": [
                            "--mig-strategy=single",
                            "--fail-on-init-error=false",
                            "--pass-device-specs=true",
                        ],
                    }
                ],
            }
        }
    }
    assert patch.retain_on_delete is True


def test_managed_plugin_adopted_reads_its_pool_key() -> None:
    t4 = entries("prod")["t4"]
    managed = ManagedPlugin.model_validate({"action": "adopt", "pool": "t4"})
    result = run(lambda: ManagedDevicePlugin("tke", ManagedDevicePluginArgs(managed, t4)))
    _, [patch] = children(result, "gpushare:k8s:ManagedDevicePlugin")
    template = patch.inputs["spec"]["template"]
    assert template["metadata"]["annotations"] == {"gpushare.io/config-sha256": t4.sha256}
    assert template["spec"]["containers"][0]["name"] == "nvidia-device-plugin-ctr"
    # TKE's kubelet-socket volume and mount first, by their keys alone (the provider diffs a patch's lists
    # against the live ones by position; tests/test_engine_up.py), then gpushare's config ones.
    assert template["spec"]["volumes"] == [
        {"name": "device-plugin"},
        {"name": "time-slicing-config", "configMap": {"name": "time-slicing-config"}},
    ]
    assert template["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
        {"name": "time-slicing-config", "mountPath": "/etc/nvidia/time-slicing-config"},
    ]


def test_device_plugin_release_pins_the_chart_and_carries_every_config() -> None:
    staging = stack(HELM_MIG)
    found = entries(HELM_MIG)
    args = DevicePluginReleaseArgs(staging.plugin, list(found.values()))
    result = run(lambda: DevicePluginRelease("nvdp", args))
    _, [release] = children(result, "gpushare:helm:DevicePluginRelease")
    assert release.type == "kubernetes:helm.sh/v3:Release"
    assert release.inputs["version"] == "0.17.1"
    assert release.inputs["createNamespace"] is True
    values = release.inputs["values"]
    assert values["config"]["map"] == {key: e.text for key, e in found.items()}
    assert values["gfd"] == {"enabled": False}
    assert values["priorityClassName"] == "system-node-critical"
    # The H20 pool is MIG (mixed): the plugin needs CAP_SYS_ADMIN, so the chart's own securityContext stays.
    assert "securityContext" not in values


def test_device_plugin_release_without_mig_drops_privilege_escalation() -> None:
    dev = stack("dev")
    args = DevicePluginReleaseArgs(dev.plugin, list(entries("dev").values()))
    result = run(lambda: DevicePluginRelease("nvdp", args))
    _, [release] = children(result, "gpushare:helm:DevicePluginRelease")
    assert release.inputs["values"]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_mig_partition_registers_the_mig_parted_config() -> None:
    pool = stack(HELM_MIG).pool("h20")
    partitions: list[MigPartition] = []
    result = run(lambda: partitions.append(MigPartition("h20-mig", MigPartitionArgs(pool))))
    _, [config_map] = children(result, "gpushare:mig:MigPartition")
    [partition] = partitions
    assert (partition.config_name, partition.strategy) == ("h20-6x1g.12gb-1x1g.24gb", "mixed")
    # by profile name, larger profiles first: 1g.24gb, then 6 x 1g.12gb
    assert "MIG_PROFILES=" + ",".join(["1g.24gb"] + ["1g.12gb"] * 6) + "\n" in partition.pre_start_script
    document = yaml.safe_load(config_map.inputs["data"]["config.yaml"])
    assert document["mig-configs"]["h20-6x1g.12gb-1x1g.24gb"][0]["mig-devices"] == {
        "1g.24gb": 1,
        "1g.12gb": 6,
    }


def test_mig_partition_refuses_a_non_mig_pool() -> None:
    pool = stack("prod").pool("l20")
    with pytest.raises(ValueError, match="not a MIG pool"):
        run(lambda: MigPartition("l20-mig", MigPartitionArgs(pool)))


# ---------------------------------------------------------------------------------------------- outputs
# What each component registers with `register_outputs`, the values under the echo mocks: a custom
# resource's id is "<name>_id", its outputs are its inputs (offline/echo_mocks.py); a Helm release's status
# is program_mocks()'s {"status": "deployed"}.


def component_outputs(result: ProgramRun, component_type: str) -> dict[str, object]:
    component, _ = children(result, component_type)
    return result.component_outputs[component.urn]


def test_gpu_node_pool_outputs_its_pool_id_and_labels() -> None:
    prod = stack("prod")
    outputs = component_outputs(
        run(lambda: GpuNodePool("np", GpuNodePoolArgs(prod.cluster, prod.pool("t4"), {}))),
        "gpushare:tke:GpuNodePool",
    )
    assert outputs["nodePoolId"] == "np-pool_id"
    assert outputs["labels"] == {
        "gpushare.io/gpu-model": "T4",
        "gpushare.io/pool": "t4",
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "t4",
    }


def test_time_slicing_config_outputs_the_config_maps_name_from_the_config_map() -> None:
    found = entries("prod")
    result = run(lambda: TimeSlicingConfig("ts", TimeSlicingConfigArgs(list(found.values()))))
    outputs = component_outputs(result, "gpushare:k8s:TimeSlicingConfig")
    assert outputs["name"] == "time-slicing-config"
    assert outputs["checksums"] == {key: e.sha256 for key, e in found.items()}


def test_the_config_maps_name_is_wired_into_the_workloads_that_mount_it() -> None:
    """The DaemonSets and TKE's adopted DaemonSet wait for the ConfigMap through its name, not only
    through the components' depends_on (which Pulumi does not pass on to their children)."""
    found = entries("prod")
    t4 = found["t4"]
    managed = ManagedPlugin.model_validate({"action": "adopt", "pool": "t4"})

    def body() -> None:
        config = TimeSlicingConfig("ts", TimeSlicingConfigArgs(list(found.values())))
        ManagedDevicePlugin("tke", ManagedDevicePluginArgs(managed, t4, config.config_map_name))
        DevicePluginDaemonSets(
            "dp",
            DevicePluginDaemonSetsArgs([found["l20"]], "registry/plugin:v0.14.5", config.config_map_name),
        )

    result = run(body)
    [config_map] = [r for r in result.resources if r.type == "kubernetes:core/v1:ConfigMap"]
    for type_ in ("kubernetes:apps/v1:DaemonSetPatch", "kubernetes:apps/v1:DaemonSet"):
        [workload] = [r for r in result.resources if r.type == type_]
        assert workload.property_dependencies["spec"] == [config_map.urn], type_
        volumes = workload.inputs["spec"]["template"]["spec"]["volumes"]
        assert {"name": "time-slicing-config", "configMap": {"name": "time-slicing-config"}} in volumes


def test_device_plugin_daemonsets_output_their_names() -> None:
    found = entries("prod")
    args = DevicePluginDaemonSetsArgs([found["l20"], found["t4"]], image="registry/plugin:v0.14.5")
    outputs = component_outputs(
        run(lambda: DevicePluginDaemonSets("dp", args)), "gpushare:k8s:DevicePluginDaemonSets"
    )
    assert outputs == {
        "daemonsets": {
            "l20": "nvidia-device-plugin-daemonset-l20",
            "t4": "nvidia-device-plugin-daemonset-t4",
        }
    }


def test_the_releases_output_their_names_and_status() -> None:
    dev = stack("dev")
    staging_plan = build_plan(stack("staging"))

    def body() -> None:
        DevicePluginRelease("dp", DevicePluginReleaseArgs(dev.plugin, plugin_config_entries(build_plan(dev))))
        GpuOperatorRelease("op", GpuOperatorReleaseArgs(staging_plan, plugin_config_entries(staging_plan)))

    result = run_function(body, project="gpushare", stack="test", mocks=program_mocks())
    plugin = component_outputs(result, "gpushare:helm:DevicePluginRelease")
    operator = component_outputs(result, "gpushare:helm:GpuOperatorRelease")
    assert (plugin["releaseName"], plugin["status"], plugin["chartVersion"]) == (
        "nvidia-device-plugin",
        {"status": "deployed"},
        "0.17.1",
    )
    assert (operator["releaseName"], operator["status"], operator["chartVersion"]) == (
        "gpu-operator",
        {"status": "deployed"},
        "v26.7.0",
    )
