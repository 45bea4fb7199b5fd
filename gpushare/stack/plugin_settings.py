"""The stack file's `sharing.devicePlugin` settings as frozen models: the plugin mode, NVIDIA's chart
and the GPU Operator pinned versions, and what happens to TKE's own plugin (`managedPlugin`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from gpushare import kube_names, plugin_pod
from gpushare.stack import kube_syntax
from gpushare.stack.fields import _at, _match_dns_label, _match_runtime_class, _Model, _syntax

DEFAULT_CHART_VERSION = "0.17.1"
DEFAULT_CHART_REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"
# NVIDIA's GPU Operator chart, pinned: chart version -> the device-plugin version its values.yaml deploys
# (`devicePlugin.version`). Only versions whose values gpushare was checked against are accepted.
OPERATOR_CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
OperatorChartVersion = Literal["v26.7.0"]
OPERATOR_CHART_PLUGIN_VERSIONS: dict[str, str] = {"v26.7.0": "0.20.0"}
DEFAULT_OPERATOR_CHART_VERSION: OperatorChartVersion = "v26.7.0"
TKE_PLUGIN_IMAGE = "sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5"
# The GPU Operator MIG manager's config for MIG-capable nodes without a `nvidia.com/mig.config` label.
MIG_CONFIG_ALL_DISABLED = "all-disabled"


ManagedAction = Literal["park", "adopt", "optOut"]


def default_managed_action(mode: str) -> ManagedAction:
    """optOut for every mode but daemonsets: it changes nothing TKE owns (no patch for TKE to revert).
    daemonsets keeps park, what its stacks meant before optOut existed."""
    return "park" if mode == "daemonsets" else "optOut"


class ManagedPlugin(_Model):
    """What to do with TKE's own `kube-system/nvidia-device-plugin-daemonset`: park it (a patched
    nodeSelector no node carries), adopt it as one pool's plugin (a patch), or opt every GPU pool out of
    it with TKE's own switch label `nvidia-device-enable=disable` (no patch)."""

    action: ManagedAction = "park"
    pool: str | None = None
    name: str = "nvidia-device-plugin-daemonset"
    namespace: str = "kube-system"
    # As in NVIDIA's static manifest, which TKE's DaemonSet follows (UNVERIFIED: check with kubectl).
    container_name: str = Field(default="nvidia-device-plugin-ctr", alias="containerName")
    # With optOut: give TKE's DaemonSet back as TKE shipped it (the patch park or adopt left is re-applied
    # with TKE's own nodeSelector and `tkeArgs`, and retained), docs/tke-device-plugin.md.
    hand_back: bool = Field(default=False, alias="handBack")
    # TKE's own args, which the hand-back and park set (a container's args list is atomic: whoever applies
    # it owns all of it).
    tke_args: tuple[str, ...] = Field(default=kube_names.TKE_PLUGIN_ARGS, alias="tkeArgs")

    @field_validator("name")
    @classmethod
    def _daemonset_name(cls, value: str) -> str:
        return _syntax(kube_syntax.dns1123_subdomain_problem, value)

    @field_validator("namespace", "container_name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        return _syntax(kube_syntax.dns1123_label_problem, value)

    @field_validator("tke_args", mode="before")
    @classmethod
    def _args_list(cls, value: Any) -> Any:
        # DevicePlugin's mode-default validator hands this model a Python dict (strict: no list -> tuple).
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _adopt_needs_pool(self) -> ManagedPlugin:
        if self.action == "adopt" and not self.pool:
            raise ValueError("adopt needs `pool`: the pool whose plugin TKE's DaemonSet becomes")
        if self.action != "adopt" and self.pool:
            raise ValueError("`pool` only applies to action adopt")
        if self.hand_back and self.action != "optOut":
            raise ValueError(
                f"`handBack` only applies to action optOut (it gives TKE's DaemonSet back), not {self.action}"
            )
        return self

    @property
    def device_enable_value(self) -> str:
        """The value of TKE's switch label on every GPU pool: `disable` opts the pool out of TKE's plugin."""
        return kube_names.DEVICE_DISABLE_VALUE if self.action == "optOut" else kube_names.DEVICE_ENABLE_VALUE


class GpuOperator(_Model):
    """`devicePlugin.gpuOperator`: NVIDIA's GPU Operator on TKE (facts and confidence: docs/modes.md, GPU Operator mode).

    Defaults follow TKE's node set-up: TKE installs the driver and points containerd's `runc` runtime at
    NVIDIA's, so the operator's driver and toolkit stay off, CDI stays off (containerd 1.6), and the operands
    run under the RuntimeClass `runc` (INFERRED: check `/etc/containerd/config.toml` on a node).
    """

    chart_version: OperatorChartVersion = Field(default=DEFAULT_OPERATOR_CHART_VERSION, alias="chartVersion")
    chart_repository: str = Field(default=OPERATOR_CHART_REPOSITORY, alias="chartRepository")
    namespace: str = Field(default="gpu-operator", max_length=63)
    runtime_class: str = Field(default="runc", alias="runtimeClass", max_length=63)
    driver_enabled: bool = Field(default=False, alias="driverEnabled")
    toolkit_enabled: bool = Field(default=False, alias="toolkitEnabled")
    cdi_enabled: bool = Field(default=False, alias="cdiEnabled")
    # The cluster runs the Prometheus Operator: the DCGM exporter gets a ServiceMonitor.
    prometheus_operator: bool = Field(default=False, alias="prometheusOperator")
    # Cloud VMs are GPU pass-through: changing MIG mode needs a VM reboot, which the MIG manager then does.
    mig_manager_with_reboot: bool = Field(default=True, alias="migManagerWithReboot")
    # Also set TKE's `gpu_args.mig_enable` on MIG pools (MIG mode on from first boot, but TKE's own layout
    # and reboot behaviour are UNKNOWN; the MIG manager alone owns the layout when false).
    tke_mig_enable: bool = Field(default=False, alias="tkeMigEnable")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return _match_dns_label(value)

    @field_validator("runtime_class")
    @classmethod
    def _runtime_class(cls, value: str) -> str:
        return _match_runtime_class(value)

    @property
    def plugin_version(self) -> str:
        return OPERATOR_CHART_PLUGIN_VERSIONS[self.chart_version]


# Keys of `devicePlugin` that configure the device-plugin chart or our DaemonSets, not the GPU Operator.
_NOT_OPERATOR_KEYS = ("version", "image", "chart_repository", "namespace", "gfd_enabled", "mig_strategy")


class DevicePlugin(_Model):
    mode: Literal["daemonsets", "helm", "gpu-operator"] = "daemonsets"
    version: Literal["0.14.5", "0.17.1", "0.20.0"] | None = None
    image: str | None = None
    chart_repository: str = Field(default=DEFAULT_CHART_REPOSITORY, alias="chartRepository")
    namespace: str = "nvidia-device-plugin"
    gfd_enabled: bool = Field(default=False, alias="gfdEnabled")
    nfd_present: bool = Field(default=False, alias="nfdPresent")
    mig_strategy: Literal["none", "single", "mixed"] | None = Field(default=None, alias="migStrategy")
    managed_plugin: ManagedPlugin = Field(default_factory=ManagedPlugin, alias="managedPlugin")
    gpu_operator: GpuOperator = Field(default_factory=GpuOperator, alias="gpuOperator")

    @model_validator(mode="after")
    def _mode_keys(self) -> DevicePlugin:
        if self.mode == "gpu-operator":
            for name in _NOT_OPERATOR_KEYS:
                if name in self.model_fields_set:
                    alias = DevicePlugin.model_fields[name].alias or name
                    raise _at(
                        alias,
                        "does not apply to mode gpu-operator (the operator chart decides it; see gpuOperator)",
                    )
        elif "gpu_operator" in self.model_fields_set:
            raise _at("gpuOperator", f"only applies to mode gpu-operator, not {self.mode}")
        return self

    @field_validator("image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        return None if value is None else _syntax(kube_syntax.image_reference_problem, value)

    @field_validator("chart_repository")
    @classmethod
    def _chart_repository(cls, value: str) -> str:
        return _syntax(kube_syntax.chart_repository_problem, value)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return _syntax(kube_syntax.dns1123_label_problem, value)

    @model_validator(mode="before")
    @classmethod
    def _mode_default_action(cls, data: Any) -> Any:
        """`managedPlugin.action` defaults by mode (`default_managed_action`), so fill it in before the
        fields are validated; anything malformed is left for the field validators to name."""
        if not isinstance(data, dict):
            return data
        key = "managed_plugin" if "managed_plugin" in data else "managedPlugin"
        managed = data.get(key, {})
        mode = data.get("mode", "daemonsets")
        if isinstance(managed, dict) and "action" not in managed and isinstance(mode, str):
            return {**data, key: {**managed, "action": default_managed_action(mode)}}
        return data

    @property
    def plugin_version(self) -> str:
        if self.mode == "gpu-operator":
            return self.gpu_operator.plugin_version
        if self.version:
            return self.version
        return "0.14.5" if self.mode == "daemonsets" else DEFAULT_CHART_VERSION

    @property
    def plugin_image(self) -> str:
        if self.image:
            return self.image
        if self.mode == "daemonsets" and self.plugin_version == "0.14.5":
            return TKE_PLUGIN_IMAGE
        return f"{plugin_pod.NVIDIA_PLUGIN_REPOSITORY}:v{self.plugin_version}"

    @property
    def node_feature_discovery(self) -> bool:
        """GFD brings NFD with the chart, the GPU Operator always brings or needs it; `nfdPresent` says the
        cluster runs its own."""
        return self.mode == "gpu-operator" or self.gfd_enabled or self.nfd_present
