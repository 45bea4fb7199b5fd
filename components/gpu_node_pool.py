"""GpuNodePool: one TKE node pool of one GPU model, labelled for the device plugin that serves it."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpushare import kube_names
from gpushare.stack import tke_limits
from gpushare.stack.model import Cluster, Mig, Pool, SoftwareVersion

# What replaces a pool and its nodes: every field gpushare sets that the pinned provider's node pool marks
# ForceNew (terraform-provider-tencentcloud `resource_tc_kubernetes_node_pool.go`, the bridge behind
# tencentcloud-iac-pulumi 0.2.3; the SDK itself carries no ForceNew marks). Listing them makes a preview
# say "replace" and name the field. `node_config` is ForceNew as a whole: the MIG set-up script, the user
# script, `gpu_args` (MIG mode, driver). docs/stack-file.md lists them.
REPLACE_ON_CHANGES = (
    "clusterId",
    "vpcId",
    "subnetIds",
    "retryPolicy",
    "nodeConfig",
    "autoScalingConfig.instanceType",
)

# An autoscaled pool's desired count belongs to TKE's autoscaler once the pool exists: the provider's Read
# stores TKE's current count, and a managed `desired_capacity` would reset it at the next `pulumi up`
# (scaling in a busy GPU node). Sent at create, ignored afterwards.
AUTOSCALED_IGNORE_CHANGES = ("desiredCapacity",)


@dataclass(frozen=True)
class PoolPlacement:
    """Where a pool's instances go. The hosted component passes other resources' outputs here (a cluster
    created by the same program, secret subnets): they decide no resource, so they flow into the node pool
    as Inputs, unknown at preview or secret as they come."""

    cluster_id: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]


@dataclass(frozen=True)
class GpuNodePoolArgs:
    cluster: Cluster
    pool: Pool
    # Extra node labels decided by the composition (e.g. `nvidia.com/gpu.present` for the Helm chart).
    extra_labels: dict[str, str]
    # MIG pools whose nodes partition their own GPUs (no MIG manager): the script TKE runs on a new node,
    # which installs the boot-time MIG unit. The composition decides; None leaves MIG to someone else.
    pre_start_script: str | None = None
    protect: bool = False
    # Delete the old TKE pool before creating its replacement (`pools[].deleteBeforeReplace`).
    delete_before_replace: bool = False
    # TKE's `gpu_args.mig_enable`; None: on for MIG pools (the GPU Operator mode decides it explicitly).
    mig_enable: bool | None = None
    # TKE's switch label for its own device plugin: `disable` opts the pool out of it (managedPlugin optOut).
    device_enable: str = kube_names.DEVICE_ENABLE_VALUE
    # None: the validated stack's cluster and subnets (the standalone program).
    placement: PoolPlacement | None = None

    def resolved_placement(self) -> PoolPlacement:
        if self.placement is not None:
            return self.placement
        return PoolPlacement(
            cluster_id=self.cluster.id,
            vpc_id=self.cluster.vpc_id,
            subnet_ids=list(self.pool.subnet_ids or self.cluster.subnet_ids),
        )


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


def _software(software: SoftwareVersion) -> dict[str, str]:
    return {"version": software.version, "name": software.name}


def gpu_args(
    pool: Pool, mig_enable: bool | None = None
) -> tencentcloud.kubernetes.NodePoolNodeConfigGpuArgsArgs:
    """TKE's `node_config.gpu_args`. Its driver, CUDA and cuDNN are string maps in the provider's schema,
    keyed as Terraform spells them (`doc_name`, `dev_name`)."""
    driver = pool.driver
    cudnn = driver.cudnn if driver else None
    return tencentcloud.kubernetes.NodePoolNodeConfigGpuArgsArgs(
        mig_enable=isinstance(pool.sharing, Mig) if mig_enable is None else mig_enable,
        driver=_software(driver) if driver else None,
        cuda=_software(driver.cuda) if driver and driver.cuda else None,
        cudnn=None
        if cudnn is None
        else {
            **_software(cudnn),
            **({"doc_name": cudnn.doc_name} if cudnn.doc_name else {}),
            **({"dev_name": cudnn.dev_name} if cudnn.dev_name else {}),
        },
    )


class GpuNodePool(pulumi.ComponentResource):
    node_pool_id: pulumi.Output[str]
    """The TKE node pool's id (`np-...`), for resources that name the pool."""
    auto_scaling_group_id: pulumi.Output[str]
    """The id of the auto-scaling group TKE creates for the pool."""
    labels: dict[str, str]
    """The node labels the pool's nodes carry (the device plugin's config key, the GPU model, the pool)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:tke:GpuNodePool", name, None, opts)
        pool = args.pool
        self.labels = node_labels(args)
        script = base64.b64encode(args.pre_start_script.encode()).decode() if args.pre_start_script else None
        node_config = tencentcloud.kubernetes.NodePoolNodeConfigArgs(
            gpu_args=gpu_args(pool, args.mig_enable),
            pre_start_user_script=script,
            # TKE runs the pre-start script only on existing instances added to the pool; its user script
            # runs after the Kubernetes components start, also (inferred) on nodes the scaling group
            # creates. The script is idempotent: both may run it.
            user_data=script,
        )
        autoscaled = pool.nodes.min != pool.nodes.max
        placement = args.resolved_placement()
        node_pool = tencentcloud.kubernetes.NodePool(
            f"{name}-pool",
            tencentcloud.kubernetes.NodePoolArgs(
                name=tke_limits.node_pool_name(pool.name),
                cluster_id=placement.cluster_id,
                vpc_id=placement.vpc_id,
                subnet_ids=placement.subnet_ids,
                min_size=pool.nodes.min,
                max_size=pool.nodes.max,
                desired_capacity=pool.nodes.desired,
                enable_auto_scale=autoscaled,
                node_os=pool.node_os,
                retry_policy="INCREMENTAL_INTERVALS",
                # The default (True) keeps the CVMs when the pool goes: GPU instances would go on billing
                # outside any pool. Production pools are guarded by deletion protection and `protect`.
                delete_keep_instance=False,
                deletion_protection=args.protect,
                auto_scaling_config=tencentcloud.kubernetes.NodePoolAutoScalingConfigArgs(
                    instance_type=pool.instance_type
                ),
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
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                replace_on_changes=list(REPLACE_ON_CHANGES),
                ignore_changes=list(AUTOSCALED_IGNORE_CHANGES) if autoscaled else None,
                # Unset unless asked for: an explicit False would override the provider's own answer.
                delete_before_replace=True if args.delete_before_replace else None,
            ),
        )
        self.node_pool_id = node_pool.id
        self.auto_scaling_group_id = node_pool.auto_scaling_group_id
        self.register_outputs(
            {
                "nodePoolId": self.node_pool_id,
                "autoScalingGroupId": self.auto_scaling_group_id,
                "labels": self.labels,
            }
        )
