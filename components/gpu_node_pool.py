"""GpuNodePool: one TKE node pool of one GPU model, labelled for the device plugin that serves it."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpushare import kube_names
from gpushare.stack_config import Cluster, Pool


@dataclass(frozen=True)
class GpuNodePoolArgs:
    cluster: Cluster
    pool: Pool
    # Extra node labels decided by the composition (e.g. `nvidia.com/gpu.present` for the Helm chart).
    extra_labels: dict[str, str]
    # MIG pools: the shell script that partitions the GPUs before the kubelet starts.
    pre_start_script: str | None = None
    protect: bool = False
    # TKE's `gpu_args.mig_enable`; None: on exactly when a pre-start script partitions the GPUs.
    mig_enable: bool | None = None
    # TKE's switch label for its own device plugin: `disable` opts the pool out of it (managedPlugin optOut).
    device_enable: str = kube_names.DEVICE_ENABLE_VALUE


def node_labels(args: GpuNodePoolArgs) -> dict[str, str]:
    pool = args.pool
    labels = {
        **pool.labels,
        kube_names.LABEL_DEVICE_ENABLE: args.device_enable,
        kube_names.LABEL_PLUGIN_CONFIG: pool.config_key,
        kube_names.LABEL_GPU_MODEL: pool.gpu,
        kube_names.LABEL_POOL: pool.name,
        **args.extra_labels,
    }
    return dict(sorted(labels.items()))


class GpuNodePool(pulumi.ComponentResource):
    node_pool_id: pulumi.Output[str]
    labels: dict[str, str]

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:tke:GpuNodePool", name, None, opts)
        pool = args.pool
        self.labels = node_labels(args)
        mig = args.mig_enable if args.mig_enable is not None else args.pre_start_script is not None
        node_config = tencentcloud.kubernetes.NodePoolNodeConfigArgs(
            gpu_args=tencentcloud.kubernetes.NodePoolNodeConfigGpuArgsArgs(mig_enable=mig),
            pre_start_user_script=(
                base64.b64encode(args.pre_start_script.encode()).decode() if args.pre_start_script else None
            ),
        )
        node_pool = tencentcloud.kubernetes.NodePool(
            f"{name}-pool",
            tencentcloud.kubernetes.NodePoolArgs(
                name=f"gpushare-{pool.name}",
                cluster_id=args.cluster.id,
                vpc_id=args.cluster.vpc_id,
                subnet_ids=list(args.cluster.subnet_ids),
                min_size=pool.nodes.min,
                max_size=pool.nodes.max,
                desired_capacity=pool.nodes.desired,
                enable_auto_scale=pool.nodes.min != pool.nodes.max,
                node_os=pool.node_os,
                retry_policy="INCREMENTAL_INTERVALS",
                # The default (True) keeps the CVMs when the pool goes: GPU instances would go on billing
                # outside any pool. Production pools are guarded by deletion protection and `protect`.
                delete_keep_instance=False,
                deletion_protection=args.protect,
                auto_scaling_config=tencentcloud.kubernetes.NodePoolAutoScalingConfigArgs(
                    instance_type=pool.instance_type,
                ),
                # instance_type and everything in node_config are ForceNew: changing them replaces the pool.
                node_config=node_config,
                labels=self.labels,
                taints=[
                    tencentcloud.kubernetes.NodePoolTaintArgs(
                        key=t["key"], value=t["value"], effect=t["effect"]
                    )
                    for t in pool.taints
                ]
                or None,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.node_pool_id = node_pool.id
        self.register_outputs({"nodePoolId": node_pool.id, "labels": self.labels})
