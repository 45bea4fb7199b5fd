"""The stack file's settings of a TKE native node pool (`pools[].native`) and of TKE's qGPU add-on
(`sharing.qgpu`), as frozen models.

qGPU runs on native nodes only (shared/reference/tke-qgpu.md A.2), and the pinned provider's
`tencentcloud.kubernetes.NativeNodePool` needs what a regular pool takes from TKE's defaults: security
groups, a system disk, a charge type. Every key maps to one argument of the SDK's typed classes
(`NativeNodePoolNativeArgs`, `...SystemDiskArgs`, `...DataDiskArgs`, `...ScalingArgs`;
tests/test_qgpu_stack.py holds each key to the SDK's signature), and the closed sets are the values the
SDK's docstrings list. What the SDK cannot set (the pool's `QGPUEnable`, its driver, the cluster's
`QGPUShareEnable`) is not a key: docs/qgpu.md says who sets it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from gpushare import qgpu
from gpushare.stack import kube_syntax
from gpushare.stack.fields import _Model

# NativeNodePoolNativeSystemDiskArgs.disk_type (SDK docstring of tencentcloud-iac-pulumi 0.2.3).
SystemDiskType = Literal["CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_BSSD", "CLOUD_HSSD"]
# NativeNodePoolNativeDataDiskArgs.disk_type: the system disk's and two more.
DataDiskType = Literal["CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_BSSD", "CLOUD_HSSD", "CLOUD_TSSD", "LOCAL_NVME"]
# NativeNodePoolNativeDataDiskArgs.file_system: ext3/ext4/xfs.
FileSystem = Literal["ext3", "ext4", "xfs"]
# NativeNodePoolNativeArgs.instance_charge_type: pay-as-you-go only here. PREPAID needs
# `instance_charge_prepaid` (period, renewal), which gpushare does not model.
InstanceChargeType = Literal["POSTPAID_BY_HOUR"]
# NativeNodePoolNativeScalingArgs.create_policy: spread over zones, or the first zone first.
ScalingPolicy = Literal["ZoneEquality", "ZonePriority"]
# NativeNodePoolNativeArgs.machine_type: `Native` (default) or `NativeCVM`.
MachineType = Literal["Native", "NativeCVM"]

_is_security_group = kube_syntax.anchored(r"sg-[a-z0-9]+")
_is_key_id = kube_syntax.anchored(r"skey-[a-z0-9]+")
_is_mount_target = kube_syntax.anchored(r"/[A-Za-z0-9._/-]*")


class SystemDisk(_Model):
    disk_type: SystemDiskType = Field(alias="diskType")
    # The TKE console's range for a native node's system disk (20-2048 GB; UNVERIFIED against the API).
    disk_size: int = Field(alias="diskSize", ge=20, le=2048)


class DataDisk(_Model):
    """A data disk TKE formats and mounts (`auto_format_and_mount` is always true: an unmounted disk on a
    GPU node holds nothing gpushare plans for)."""

    disk_type: DataDiskType = Field(alias="diskType")
    disk_size: int = Field(alias="diskSize", ge=10, le=32000)
    file_system: FileSystem = Field(default="ext4", alias="fileSystem")
    mount_target: str = Field(default="/var/lib/containerd", alias="mountTarget")

    @field_validator("mount_target")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not _is_mount_target(value) or ".." in value.split("/"):
            raise ValueError(f"{value!r} is not an absolute path (like /var/lib/containerd)")
        return value


class NativePool(_Model):
    """`pools[].native`: what a TKE native node pool needs beyond the pool's instance type, subnets and
    node counts (which come from `instanceType`, `subnetIds` and `nodes` as for every pool)."""

    security_group_ids: tuple[str, ...] = Field(alias="securityGroupIds", min_length=1)
    system_disk: SystemDisk = Field(alias="systemDisk")
    data_disks: tuple[DataDisk, ...] = Field(default=(), alias="dataDisks")
    instance_charge_type: InstanceChargeType = Field(default="POSTPAID_BY_HOUR", alias="instanceChargeType")
    scaling_policy: ScalingPolicy | None = Field(default=None, alias="scalingPolicy")
    machine_type: MachineType | None = Field(default=None, alias="machineType")
    key_ids: tuple[str, ...] = Field(default=(), alias="keyIds")
    auto_repair: bool | None = Field(default=None, alias="autoRepair")

    @field_validator("security_group_ids")
    @classmethod
    def _security_groups(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for group in value:
            if not _is_security_group(group):
                raise ValueError(f"{group!r} is not a security group id (sg-...)")
        return value

    @field_validator("key_ids")
    @classmethod
    def _keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for key in value:
            if not _is_key_id(key):
                raise ValueError(f"{key!r} is not an SSH key id (skey-...)")
        return value


class QgpuAddon(_Model):
    """`sharing.qgpu`: TKE's qGPU add-on, declared once per cluster when a pool is `mode: qgpu`. The version
    is pinned (a third-party install saw 1.1.3); the values schema is INFERRED (docs/qgpu.md)."""

    addon_version: str = Field(default=qgpu.DEFAULT_ADDON_VERSION, alias="addonVersion")
    priority: qgpu.AddonPriority = qgpu.DEFAULT_ADDON_PRIORITY

    @field_validator("addon_version")
    @classmethod
    def _dotted(cls, value: str) -> str:
        if not kube_syntax.anchored(r"[0-9]+(\.[0-9]+){1,3}")(value):
            raise ValueError(f"{value!r} is not an add-on version (like 1.1.3)")
        return value
