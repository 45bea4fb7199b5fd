"""QgpuNodePool: one TKE native node pool whose cards TKE's qGPU slices (`sharing.mode: qgpu`).

qGPU runs on native nodes only, so this is the provider's `NativeNodePool`, not the regular `NodePool`
of `GpuNodePool`: labels a list of `{name, value}`, no `gpu_args` (no driver pin, no MIG), its own
security groups and disks (`pools[].native`). Its labels turn qGPU on for the nodes and keep every
NVIDIA plugin off them (`gpushare.qgpu.node_labels`); the pool waits for the add-on, whose manager
DaemonSet selects those labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from components.gpu_node_pool import PoolPlacement
from gpushare.stack import tke_limits
from gpushare.stack.model import Pool

# An autoscaled pool's node count belongs to TKE's autoscaler after create (as `GpuNodePool`'s
# desiredCapacity): a managed `replicas` would scale busy GPU nodes back at the next `pulumi up`.
AUTOSCALED_IGNORE_CHANGES = ("native.replicas",)


@dataclass(frozen=True)
class QgpuNodePoolArgs:
    pool: Pool
    labels: dict[str, str]
    """Every node label (`gpushare.qgpu.node_labels`)."""
    placement: PoolPlacement
    addon: pulumi.Resource
    """The qGPU add-on the pool depends on."""
    protect: bool = False
    delete_before_replace: bool = False


def native_args(pool: Pool, placement: PoolPlacement) -> tencentcloud.kubernetes.NativeNodePoolNativeArgs:
    """The pool's `native` block from the stack file's keys, through the SDK's typed classes (an unknown
    key is a TypeError at construction, not a silent extra)."""
    native = pool.native
    assert native is not None  # the stack model requires it for qGPU pools
    autoscaled = pool.nodes.min != pool.nodes.max
    return tencentcloud.kubernetes.NativeNodePoolNativeArgs(
        instance_charge_type=native.instance_charge_type,
        instance_types=[pool.instance_type],
        security_group_ids=list(native.security_group_ids),
        subnet_ids=placement.subnet_ids,
        system_disk=tencentcloud.kubernetes.NativeNodePoolNativeSystemDiskArgs(
            disk_type=native.system_disk.disk_type, disk_size=native.system_disk.disk_size
        ),
        data_disks=[
            tencentcloud.kubernetes.NativeNodePoolNativeDataDiskArgs(
                auto_format_and_mount=True,
                disk_type=disk.disk_type,
                disk_size=disk.disk_size,
                file_system=disk.file_system,
                mount_target=disk.mount_target,
            )
            for disk in native.data_disks
        ]
        or None,
        enable_autoscaling=autoscaled,
        scaling=tencentcloud.kubernetes.NativeNodePoolNativeScalingArgs(
            min_replicas=pool.nodes.min,
            max_replicas=pool.nodes.max,
            create_policy=native.scaling_policy,
        ),
        replicas=pool.nodes.desired,
        machine_type=native.machine_type,
        key_ids=list(native.key_ids) or None,
        auto_repair=native.auto_repair,
    )


class QgpuNodePool(pulumi.ComponentResource):
    node_pool_id: pulumi.Output[str]
    """The TKE native node pool's id."""
    labels: dict[str, str]
    """The node labels the pool's nodes carry."""

    def __init__(self, name: str, args: QgpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:tke:QgpuNodePool", name, None, opts)
        pool = args.pool
        self.labels = dict(args.labels)
        autoscaled = pool.nodes.min != pool.nodes.max
        node_pool = tencentcloud.kubernetes.NativeNodePool(
            f"{name}-pool",
            tencentcloud.kubernetes.NativeNodePoolArgs(
                cluster_id=args.placement.cluster_id,
                type="Native",
                name=tke_limits.node_pool_name(pool.name),
                native=native_args(pool, args.placement),
                labels=[
                    tencentcloud.kubernetes.NativeNodePoolLabelArgs(name=key, value=value)
                    for key, value in self.labels.items()
                ],
                taints=[
                    tencentcloud.kubernetes.NativeNodePoolTaintArgs(
                        key=t["key"], value=t["value"], effect=t["effect"]
                    )
                    for t in pool.taints
                ]
                or None,
                deletion_protection=args.protect,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[args.addon],
                protect=args.protect,
                ignore_changes=list(AUTOSCALED_IGNORE_CHANGES) if autoscaled else None,
                delete_before_replace=True if args.delete_before_replace else None,
            ),
        )
        self.node_pool_id = node_pool.id
        self.register_outputs({"nodePoolId": self.node_pool_id, "labels": self.labels})
