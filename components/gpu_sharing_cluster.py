"""GpuSharingCluster: the whole GPU-sharing set-up of one cluster, composed from the validated stack."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components.device_plugin_daemonsets import DevicePluginDaemonSets, DevicePluginDaemonSetsArgs
from components.device_plugin_release import CHART as DEVICE_PLUGIN_RELEASE
from components.device_plugin_release import DevicePluginRelease, DevicePluginReleaseArgs
from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs, PoolPlacement
from components.gpu_operator_release import GpuOperatorRelease, GpuOperatorReleaseArgs
from components.managed_device_plugin import ManagedDevicePlugin, ManagedDevicePluginArgs
from components.mig_partition import MigPartition, MigPartitionArgs
from components.qgpu_addon import QgpuAddon, QgpuAddonArgs
from components.qgpu_node_pool import QgpuNodePool, QgpuNodePoolArgs
from components.time_slicing_config import TimeSlicingConfig, TimeSlicingConfigArgs
from gpushare import gpu_operator, kube_names, mps, qgpu
from gpushare.plan import FALLBACK_KEY, SharingPlan, build_plan, capacity_json
from gpushare.plugin_configs import plugin_config_entries
from gpushare.stack.model import Mig, Mps, Qgpu, StackConfig

TYPE_TOKEN = "gpushare:index:GpuSharingCluster"


@dataclass(frozen=True)
class GpuSharingClusterArgs:
    stack: StackConfig


@dataclass(frozen=True)
class Composition:
    """What `GpuSharingCluster.compose` built: the plan and the handles a component's outputs are made of."""

    plan: SharingPlan
    capacity: dict[str, Any]
    node_pool_ids: dict[str, pulumi.Output[str]]
    # The ConfigMap the device plugin reads; None in helm mode, where the chart names its own.
    config_map_name: pulumi.Input[str] | None
    helm_release_names: list[str]


class GpuSharingCluster(pulumi.ComponentResource):
    plan: SharingPlan
    """The sharing plan the stack's measurements give: every pool's replicas and slots."""
    capacity: dict[str, Any]
    """The plan as the stack exports it (`capacity`): slots per pool, in all, and before sharing."""
    node_pool_ids: dict[str, pulumi.Output[str]]
    """Each TKE node pool's id, by pool name."""

    def __init__(
        self, name: str, args: GpuSharingClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        composition = self.compose(self, name, args.stack)
        self.plan = composition.plan
        self.capacity = composition.capacity
        self.node_pool_ids = composition.node_pool_ids
        self.register_outputs(
            {
                "pools": self.capacity["pools"],
                "totalSlots": self.capacity["totalSlots"],
                "slotsBefore": self.capacity["slotsBefore"],
                "nodePoolIds": self.node_pool_ids,
            }
        )

    @staticmethod
    def compose(
        cluster: pulumi.ComponentResource,
        name: str,
        stack: StackConfig,
        placements: Mapping[str, PoolPlacement] | None = None,
    ) -> Composition:
        """Every child of one GPU-sharing cluster, under `cluster` and named after `name`. The hosted
        package's component (components/hosted_gpu_sharing_cluster.py) builds its children here too, so
        both register the same resources; it passes `placements` (pool name -> cluster and subnets as
        Inputs) where those come from other resources."""
        plugin = stack.plugin
        plan = build_plan(stack)
        entries = plugin_config_entries(plan)
        child = pulumi.ResourceOptions(parent=cluster)
        node_pool_ids: dict[str, pulumi.Output[str]] = {}
        config_map_name: pulumi.Input[str] | None = None
        helm_release_names: list[str] = []
        # The cluster the objects are tied to: a hosted consumer's cluster id may be another resource's output
        # (unknown at preview), which every pool's placement carries; the stack's own id otherwise.
        cluster_id: pulumi.Input[str] = (
            next(iter(placements.values())).cluster_id if placements else stack.cluster.id
        )
        identity: dict[str, pulumi.Input[str]] = {
            kube_names.ANNOTATION_STACK: stack.stack,
            kube_names.ANNOTATION_CLUSTER: cluster_id,
        }

        managed = plugin.managed_plugin
        opt_out = managed.action == "optOut"
        node_pools: list[pulumi.Resource] = []
        # TKE's qGPU add-on, once, before any qGPU pool (its manager selects the pools' label).
        addon = (
            QgpuAddon(f"{name}-qgpu", QgpuAddonArgs(cluster_id, stack.sharing.qgpu), child)
            if any(isinstance(pool.sharing, Qgpu) for pool in stack.pools)
            else None
        )
        for pool in stack.pools:
            if isinstance(pool.sharing, Qgpu):
                assert addon is not None
                qgpu_pool = QgpuNodePool(
                    f"{name}-{pool.name}",
                    QgpuNodePoolArgs(
                        pool=pool,
                        labels=qgpu.node_labels(
                            pool.labels,
                            pool.name,
                            pool.gpu,
                            pool.sharing.schedule_policy,
                            gpu_operator=plugin.mode == "gpu-operator",
                        ),
                        placement=(placements or {}).get(pool.name)
                        or PoolPlacement(
                            cluster_id=stack.cluster.id,
                            vpc_id=stack.cluster.vpc_id,
                            subnet_ids=list(pool.subnet_ids or stack.cluster.subnet_ids),
                        ),
                        addon=addon.addon,
                        protect=pool.protect if pool.protect is not None else stack.protect_pools,
                        delete_before_replace=pool.delete_before_replace,
                    ),
                    child,
                )
                node_pool_ids[pool.name] = qgpu_pool.node_pool_id
                node_pools.append(qgpu_pool)
                continue
            extra: dict[str, str] = {}
            script = None
            mig_enable = None
            if isinstance(pool.sharing, Mig) and plugin.mode == "gpu-operator":
                # The operator's MIG manager applies the label's layout, and again after every reboot.
                extra[kube_names.LABEL_MIG_CONFIG] = pool.sharing.config_name
                mig_enable = plugin.gpu_operator.tke_mig_enable
            elif isinstance(pool.sharing, Mig):
                partition = MigPartition(f"{name}-{pool.name}-mig", MigPartitionArgs(pool), child)
                extra[kube_names.LABEL_MIG_CONFIG] = partition.config_name
                # daemonsets and helm modes run no MIG manager: the nodes partition their own GPUs at
                # every boot. A mode with a MIG manager passes no script.
                script = partition.pre_start_script
            if plugin.mode == "helm" and not plugin.node_feature_discovery:
                extra[kube_names.LABEL_GPU_PRESENT] = "true"
            if isinstance(pool.sharing, Mps):
                # The MPS control daemon's DaemonSet selects this label (the stack model allows MPS pools
                # only in helm and gpu-operator modes).
                extra[kube_names.LABEL_MPS_CAPABLE] = mps.MPS_CAPABLE_VALUE
            node_pool = GpuNodePool(
                f"{name}-{pool.name}",
                GpuNodePoolArgs(
                    cluster=stack.cluster,
                    pool=pool,
                    extra_labels=extra,
                    pre_start_script=script,
                    mig_enable=mig_enable,
                    protect=pool.protect if pool.protect is not None else stack.protect_pools,
                    delete_before_replace=pool.delete_before_replace,
                    device_enable=managed.device_enable_value,
                    placement=placements.get(pool.name) if placements else None,
                ),
                child,
            )
            node_pool_ids[pool.name] = node_pool.node_pool_id
            node_pools.append(node_pool)

        adopted = (
            next((e for e in entries if e.key == managed.pool), None) if managed.action == "adopt" else None
        )
        # Our plugins and TKE's serve the same kubelet socket, which the departing one deletes when it stops:
        # every plugin workload waits for the patch that parks or adopts TKE's DaemonSet. optOut patches
        # nothing of TKE's (the pools' `nvidia-device-enable=disable` keeps its plugin off): nothing to wait for.
        handover: list[pulumi.Resource] = []
        if opt_out and managed.hand_back:
            # After the pools say `disable` (TKE's plugin, back on its own selector, must not land on them).
            ManagedDevicePlugin(
                f"{name}-managed-plugin",
                ManagedDevicePluginArgs(managed),
                pulumi.ResourceOptions(parent=cluster, depends_on=list(node_pools)),
            )
        if plugin.mode == "daemonsets":
            config_map = TimeSlicingConfig(
                f"{name}-config", TimeSlicingConfigArgs(entries, identity=identity), child
            )
            config_map_name = config_map.config_map_name
            if not opt_out:
                handover.append(
                    ManagedDevicePlugin(
                        f"{name}-managed-plugin",
                        ManagedDevicePluginArgs(managed, adopted, config_map.config_map_name, identity),
                        pulumi.ResourceOptions(parent=cluster, depends_on=[config_map]),
                    ).patch
                )
            DevicePluginDaemonSets(
                f"{name}-plugins",
                DevicePluginDaemonSetsArgs(
                    entries=[e for e in entries if e.key not in (FALLBACK_KEY, managed.pool)],
                    image=plugin.plugin_image,
                    config_map_name=config_map.config_map_name,
                    select_tke_switch=not opt_out,
                    identity=identity,
                ),
                pulumi.ResourceOptions(parent=cluster, depends_on=[config_map, *handover]),
            )
        else:
            if not opt_out:
                handover.append(
                    ManagedDevicePlugin(
                        f"{name}-managed-plugin", ManagedDevicePluginArgs(managed, identity=identity), child
                    ).patch
                )
            after_handover = pulumi.ResourceOptions(parent=cluster, depends_on=handover)
            if plugin.mode == "helm":
                DevicePluginRelease(
                    f"{name}-device-plugin",
                    DevicePluginReleaseArgs(
                        plugin,
                        entries,
                        [
                            taint
                            for pool in plan.stack.pools
                            if not isinstance(pool.sharing, Qgpu)  # no NVIDIA plugin goes there
                            for taint in pool.taints
                        ],
                        identity,
                    ),
                    after_handover,
                )
                helm_release_names.append(DEVICE_PLUGIN_RELEASE)
            else:
                operator = GpuOperatorRelease(
                    f"{name}-gpu-operator", GpuOperatorReleaseArgs(plan, entries, identity), after_handover
                )
                config_map_name = operator.device_plugin_config_name
                helm_release_names.append(gpu_operator.RELEASE_NAME)
        return Composition(
            plan=plan,
            capacity=capacity_json(plan),
            node_pool_ids=node_pool_ids,
            config_map_name=config_map_name,
            helm_release_names=helm_release_names,
        )
