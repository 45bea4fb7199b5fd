"""QgpuAddon: TKE's qGPU add-on (`qgpu`), once per cluster that has a qGPU pool.

The add-on deploys `kube-system/qgpu-manager` (the kernel module, on nodes labelled
`qgpu-device-enable=enable`) and the `qgpu-scheduler` extender (shared/reference/tke-qgpu.md A.1). Its
`raw_values` go to the provider as plain JSON, which base64-encodes them itself; the pinned provider
(TF v1.82.42) stores the values TKE merged after create and has no JSON diff-suppression, so changes
of `rawValues` are ignored after create (docs/qgpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from gpushare import qgpu
from gpushare.stack.native_pool import QgpuAddon as QgpuAddonSettings

# TKE merges values of its own into what it returns: without this every refresh shows a diff.
IGNORE_CHANGES = ("rawValues",)


@dataclass(frozen=True)
class QgpuAddonArgs:
    cluster_id: pulumi.Input[str]
    settings: QgpuAddonSettings


class QgpuAddon(pulumi.ComponentResource):
    addon: tencentcloud.kubernetes.Addon
    """The add-on resource, which every qGPU node pool depends on."""
    phase: pulumi.Output[str]
    """TKE's phase of the add-on (`Succeeded` once installed)."""

    def __init__(self, name: str, args: QgpuAddonArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:tke:QgpuAddon", name, None, opts)
        self.addon = tencentcloud.kubernetes.Addon(
            f"{name}-addon",
            tencentcloud.kubernetes.AddonArgs(
                cluster_id=args.cluster_id,
                addon_name=qgpu.ADDON_NAME,
                addon_version=args.settings.addon_version,
                raw_values=qgpu.addon_raw_values(args.settings.priority),
            ),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=list(IGNORE_CHANGES)),
        )
        self.phase = self.addon.phase
        self.register_outputs({"addonName": qgpu.ADDON_NAME, "phase": self.phase})
