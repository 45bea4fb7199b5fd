"""The stack configuration (`Pulumi.<stack>.yaml`) as frozen, typed models, validated once.

The same models serve the Pulumi program (values from `pulumi.Config`) and the offline commands
(values read from the stack file), so a bad value fails the same way in both, naming the file and
the key path: `Pulumi.prod.yaml: gpushare:pools[1].sharing.measuredMiB: must be > 0`.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpushare import catalog, gpu_driver, input_files, kube_names, plugin_tolerations, yaml_bounds
from gpushare.errors import ConfigError, GpushareError, UnreadableConfigError
from gpushare.mig.geometry import fit_layout
from gpushare.stack import kube_syntax, tke_limits
from gpushare.stack.yaml import load_cli_yaml
from gpushare.suggest import did_you_mean
from gpushare.tuning import DEFAULT_CEILING, measurement_problem

PROJECT = "gpushare"
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
# Config keys that must only ever arrive as `secure:` values.
SECRET_KEYS = frozenset(
    {"tencentcloud:secretId", "tencentcloud:secretKey", "tencentcloud:securityToken", f"{PROJECT}:kubeconfig"}
)
# RFC 1123 label: a pool name becomes a label value, a ConfigMap key and part of object names.
_is_pool_name = kube_syntax.anchored(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _at(path: str, message: str) -> ValueError:
    """A cross-field error that belongs to a key below the model being validated."""
    return ValueError(f"@{path}|{message}")


# No GPU server carries more (HGX-2/DGX-2: 16); a larger number is a typo that would size the plan.
MAX_GPUS_PER_NODE = 16
# TencentCloud region ids: ap-singapore, na-siliconvalley, ap-shanghai-fsi.
_is_region = kube_syntax.anchored(r"[a-z]{2}-[a-z]+(-[a-z0-9]+)*")


def _syntax(rule: Callable[[str], str | None], value: str) -> str:
    """Run one of `kube_syntax`'s rules as a pydantic validator."""
    problem = rule(value)
    if problem:
        raise ValueError(problem)
    return value


def _matching(pattern: str) -> Callable[[str], str]:
    """A check of one anchored ASCII rule (`kube_syntax.anchored`) for a field validator. pydantic's own
    `pattern=` takes Unicode digits for `\\d` (`1.\uff13\uff10`), so no field uses it."""
    matches = kube_syntax.anchored(pattern)

    def check(value: str) -> str:
        if not matches(value):
            raise ValueError(f"does not match ^{pattern}$")
        return value

    return check


_match_cluster_id = _matching(r"cls-[a-z0-9]+")
_match_vpc_id = _matching(r"vpc-[a-z0-9]+")
_match_minor_version = _matching(r"1\.[0-9]+")
_match_dns_label = _matching(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_match_runtime_class = _matching(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_is_subnet = kube_syntax.anchored(r"subnet-[a-z0-9]+")
_match_node_os = _matching(r"\S(.*\S)?")


def measurement_date(value: str) -> date | None:
    """The calendar day of a `measuredAt` (a date, or an ISO 8601 date and time); None if it is not one."""
    try:
        return date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value).date()
    except ValueError:
        return None


def latest_date_on_earth() -> date:
    """The calendar day in the earliest time zone (UTC+14): no date up to it is in the future anywhere."""
    return (datetime.now(UTC) + timedelta(hours=14)).date()


def _today(info: ValidationInfo) -> date:
    # Tests pass `today` through the validation context so that they do not depend on the calendar.
    context = info.context if isinstance(info.context, dict) else {}
    today = context.get("today")
    return today if isinstance(today, date) else latest_date_on_earth()


def _catalog_gpu(value: str) -> str:
    try:
        catalog.gpu(value)
    except GpushareError as err:
        raise ValueError(err.message) from None
    return value


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)


class Cluster(_Model):
    id: str
    vpc_id: str = Field(alias="vpcId")
    subnet_ids: tuple[str, ...] = Field(alias="subnetIds", min_length=1)
    kubernetes_version: str = Field(alias="kubernetesVersion")

    @field_validator("id")
    @classmethod
    def _cluster_id(cls, value: str) -> str:
        return _match_cluster_id(value)

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id(cls, value: str) -> str:
        return _match_vpc_id(value)

    @field_validator("kubernetes_version")
    @classmethod
    def _minor_version(cls, value: str) -> str:
        return _match_minor_version(value)

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for subnet in value:
            if not _is_subnet(subnet):
                raise ValueError(f"{subnet!r} is not a subnet id (subnet-...)")
        return value


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

    @field_validator("name")
    @classmethod
    def _daemonset_name(cls, value: str) -> str:
        return _syntax(kube_syntax.dns1123_subdomain_problem, value)

    @field_validator("namespace", "container_name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        return _syntax(kube_syntax.dns1123_label_problem, value)

    @model_validator(mode="after")
    def _adopt_needs_pool(self) -> ManagedPlugin:
        if self.action == "adopt" and not self.pool:
            raise ValueError("adopt needs `pool`: the pool whose plugin TKE's DaemonSet becomes")
        if self.action != "adopt" and self.pool:
            raise ValueError("`pool` only applies to action adopt")
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
        return f"nvcr.io/nvidia/k8s-device-plugin:v{self.plugin_version}"

    @property
    def node_feature_discovery(self) -> bool:
        """GFD brings NFD with the chart, the GPU Operator always brings or needs it; `nfdPresent` says the
        cluster runs its own."""
        return self.mode == "gpu-operator" or self.gfd_enabled or self.nfd_present


class Sharing(_Model):
    utilization_ceiling: float = Field(
        default=DEFAULT_CEILING, alias="utilizationCeiling", gt=0, le=1, allow_inf_nan=False
    )
    max_measurement_age_days: int = Field(default=180, alias="maxMeasurementAgeDays", gt=0)
    device_plugin: DevicePlugin = Field(default_factory=DevicePlugin, alias="devicePlugin")
    # Defined below with the measurements; pydantic resolves the name when the model is first built.
    fallback: Fallback | None = None


class Nodes(_Model):
    min: int = Field(ge=0, le=2000)
    max: int = Field(ge=0, le=2000)
    desired: int = Field(ge=0, le=2000)

    @model_validator(mode="after")
    def _ordered(self) -> Nodes:
        if not self.min <= self.desired <= self.max:
            raise ValueError(f"need min <= desired <= max, got {self.min} <= {self.desired} <= {self.max}")
        return self


class Measurement(_Model):
    """One measurement of the largest process's GPU memory (nvidia-smi --query-compute-apps)."""

    measured_mib: int = Field(alias="measuredMiB", gt=0)
    measured_at: str | None = Field(default=None, alias="measuredAt")
    source: str | None = None

    @field_validator("measured_mib")
    @classmethod
    def _plausible(cls, value: int) -> int:
        problem = measurement_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("measured_at")
    @classmethod
    def _iso_date(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        day = measurement_date(value)
        if day is None:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD, or an ISO 8601 date and time)")
        today = _today(info)
        if day > today:
            # A future date would count as fresh for as long as the freshness policy allows and longer.
            raise ValueError(f"{value} is in the future (today is {today.isoformat()})")
        return value


class TimeSlicing(Measurement):
    mode: Literal["time-slicing"]


class Fallback(Measurement):
    """Opt-in sharing for the fallback key `any` (nodes whose label names no key): tuned for the one GPU
    the stack names. Without it `any` shares nothing, since the GPU such a node carries is unknown."""

    gpu: str

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str) -> str:
        return _catalog_gpu(value)

    @model_validator(mode="after")
    def _fits(self) -> Fallback:
        memory = catalog.gpu(self.gpu).memory_mib
        if self.measured_mib > memory:
            raise _at("measuredMiB", f"{self.measured_mib} MiB is more than {self.gpu}'s {memory} MiB")
        return self


class Exclusive(_Model):
    mode: Literal["exclusive"]


class Mig(_Model):
    mode: Literal["mig"]
    mig_layout: dict[str, int] = Field(alias="migLayout", min_length=1)
    layout_name: str | None = Field(default=None, alias="layoutName")
    time_slicing: Measurement | None = Field(default=None, alias="timeSlicing")

    @field_validator("layout_name")
    @classmethod
    def _layout_label_value(cls, value: str | None) -> str | None:
        # It becomes the value of the node label nvidia.com/mig.config, a mig-parted config name and a
        # word in the node's pre-start script: a label value, lowercase like mig-parted's own names.
        if value is not None and (
            kube_syntax.label_value_problem(value) or not value or value != value.lower()
        ):
            raise ValueError(
                f"{value!r} is not a layout name (at most 63 lowercase letters, digits, '-', '_' and '.', "
                "alphanumeric at both ends: it becomes the node label value of nvidia.com/mig.config)"
            )
        return value

    @property
    def config_name(self) -> str:
        """The mig-parted config name the node label `nvidia.com/mig.config` selects. Default like
        the GPU Operator's `all-<profile>` names (`+` written as `.`) for a single-profile layout."""
        if self.layout_name:
            return self.layout_name
        parts = [f"{profile.replace('+', '.')}x{count}" for profile, count in sorted(self.mig_layout.items())]
        return "custom-" + "-".join(parts)

    @property
    def strategy(self) -> Literal["single", "mixed"]:
        # Time-sliced MIG instances are advertised as nvidia.com/mig-<profile>, which only `mixed` does.
        return "single" if len(self.mig_layout) == 1 and self.time_slicing is None else "mixed"


PoolSharing = Annotated[TimeSlicing | Mig | Exclusive, Field(discriminator="mode")]


class SoftwareVersion(_Model):
    """A `{name, version}` pair of TKE's `gpu_args` (the provider needs both when either is set)."""

    version: str = Field(min_length=1)
    name: str = Field(min_length=1)


class Cudnn(SoftwareVersion):
    doc_name: str | None = Field(default=None, alias="docName")
    dev_name: str | None = Field(default=None, alias="devName")


class GpuDriver(SoftwareVersion):
    """`pools[].driver`: what TKE installs on the pool's nodes (`node_config.gpu_args`). The valid strings
    per instance type and OS come from TKE's DescribeGPUInfo."""

    cuda: SoftwareVersion | None = None
    cudnn: Cudnn | None = None

    @field_validator("version")
    @classmethod
    def _dotted(cls, value: str) -> str:
        # NVIDIA numbers drivers in ASCII (535.161.07); the MIG minimum-driver check compares those numbers.
        if not gpu_driver.is_dotted_version(value):
            raise ValueError(f"{value!r} is not a driver version (ASCII digits and dots, like 535.161.07)")
        return value


class Pool(_Model):
    name: str
    gpu: str
    instance_type: str = Field(alias="instanceType")
    gpus_per_node: int | None = Field(default=None, alias="gpusPerNode", gt=0, le=MAX_GPUS_PER_NODE)
    nodes: Nodes
    sharing: PoolSharing
    protect: bool | None = None
    # A replacement (see REPLACE_ON_CHANGES in components/gpu_node_pool.py) creates the new TKE pool, under
    # the same name, before deleting the old one unless the provider asks otherwise: no capacity gap, but
    # two pools share the name for a while. Whether TKE allows that is UNVERIFIED; if it refuses, the
    # create fails and nothing is deleted. True deletes the old pool and its nodes first (the pool's
    # capacity is gone until new nodes join).
    delete_before_replace: bool = Field(default=False, alias="deleteBeforeReplace")
    node_os: str = Field(default="tlinux3.1x86_64", alias="nodeOs")
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    driver: GpuDriver | None = None

    @field_validator("name")
    @classmethod
    def _label_safe(cls, value: str) -> str:
        if not _is_pool_name(value) or value == "any":
            raise ValueError(
                f"{value!r} must be a lowercase RFC 1123 label (it becomes a ConfigMap key and a label "
                "value) and not 'any' (the fallback key)"
            )
        return value

    @field_validator("node_os")
    @classmethod
    def _node_os(cls, value: str) -> str:
        return _match_node_os(value)

    @field_validator("labels")
    @classmethod
    def _node_labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            if tke_limits.key_problem(key):
                continue  # TKE's own limit names it (`_tke_label_and_taint_limits`)
            problem = kube_syntax.qualified_name_problem(key)
            if problem is None and key in kube_names.NODE_LABELS_SET_BY_GPUSHARE:
                problem = (
                    f"gpushare sets {key} on this pool's nodes itself; a value here would be overwritten"
                )
            if problem is None:
                problem = kube_syntax.label_value_problem(label)
            if problem:
                raise _at(f"[{json.dumps(key)}]", problem)
        return value

    @field_validator("taints")
    @classmethod
    def _node_taints(cls, value: tuple[dict[str, str], ...]) -> tuple[dict[str, str], ...]:
        # Kubernetes' syntax of the key and value; which fields a taint needs and its effects are TKE's
        # limits (`_tke_label_and_taint_limits`).
        for index, taint in enumerate(value):
            key = taint.get("key")
            if key and not tke_limits.key_problem(key):
                problem = kube_syntax.qualified_name_problem(key)
                if problem:
                    raise _at(f"[{index}].key", problem)
            problem = kube_syntax.label_value_problem(taint.get("value", ""))
            if problem:
                raise _at(f"[{index}].value", problem)
        return value

    @field_validator("name")
    @classmethod
    def _fits_tke_node_pool_name(cls, value: str) -> str:
        problem = tke_limits.node_pool_name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _tke_label_and_taint_limits(self) -> Pool:
        for key in self.labels:
            problem = tke_limits.key_problem(key)
            if problem:
                raise _at("labels", problem)
        for index, taint in enumerate(self.taints):
            for field, problem in tke_limits.taint_problems(taint):
                raise _at(f"taints[{index}].{field}", problem)
        return self

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str) -> str:
        return _catalog_gpu(value)

    @model_validator(mode="after")
    def _consistent(self) -> Pool:
        model = catalog.gpu(self.gpu)
        known = catalog.instance_type(self.instance_type)
        if known is not None and known.gpu != self.gpu:
            raise _at("instanceType", f"{self.instance_type} carries {known.gpu}, not {self.gpu}")
        if known is None and self.gpus_per_node is None:
            raise _at("gpusPerNode", f"required: instanceType {self.instance_type} is not in the catalog")
        if known is not None and self.gpus_per_node not in (None, known.gpus_per_node):
            raise _at("gpusPerNode", f"{self.instance_type} has {known.gpus_per_node} GPU(s) per node")
        sharing = self.sharing
        if isinstance(sharing, TimeSlicing) and sharing.measured_mib > model.memory_mib:
            raise _at(
                "sharing.measuredMiB",
                f"{sharing.measured_mib} MiB is more than {self.gpu}'s {model.memory_mib} MiB",
            )
        if isinstance(sharing, Mig):
            if not model.mig_capable:
                raise _at("sharing.mode", f"mig: {self.gpu} does not support MIG")
            try:
                fit_layout(model, sharing.mig_layout)
            except GpushareError as err:
                raise _at("sharing.migLayout", err.message) from None
            if self.driver is not None:
                problem = gpu_driver.mig_driver_problem(model, self.driver.version)
                if problem:
                    raise _at("driver.version", problem)
            if sharing.time_slicing is not None:
                smallest = min(model.mig_profile(p).memory_mib for p in sharing.mig_layout)
                if sharing.time_slicing.measured_mib > smallest:
                    raise _at(
                        "sharing.timeSlicing.measuredMiB",
                        f"{sharing.time_slicing.measured_mib} MiB is more than the smallest MIG instance's "
                        f"{smallest} MiB",
                    )
        return self

    @property
    def gpus_per_node_effective(self) -> int:
        known = catalog.instance_type(self.instance_type)
        return self.gpus_per_node or (known.gpus_per_node if known else 1)

    @property
    def config_key(self) -> str:
        """The device-plugin config key this pool's nodes select: the pool's name."""
        return self.name

    @property
    def measurement(self) -> Measurement | None:
        """What the pool's time-slicing replicas rest on; None for exclusive GPUs and unshared MIG instances."""
        sharing = self.sharing
        if isinstance(sharing, TimeSlicing):
            return sharing
        return sharing.time_slicing if isinstance(sharing, Mig) else None


class StackConfig(_Model):
    stack: str
    source: str
    region: str | None = None
    cluster: Cluster
    sharing: Sharing = Field(default_factory=Sharing)
    pools: tuple[Pool, ...] = Field(min_length=1)
    protect_pools: bool = Field(default=False, alias="protectPools")
    has_kubeconfig: bool = Field(default=False, alias="hasKubeconfig")
    config_env_bytes: int = Field(default=0, alias="configEnvBytes")
    """The size of the config as the CLI hands it to a policy pack (PULUMI_CONFIG); 0 if not known."""

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not _is_region(value):
            raise ValueError(
                f"{value!r} is not a TencentCloud region (like ap-singapore or na-siliconvalley)"
            )
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> StackConfig:
        seen: set[str] = set()
        for index, pool in enumerate(self.pools):
            if pool.name in seen:
                raise _at(f"pools[{index}].name", f"duplicate pool name {pool.name!r}")
            seen.add(pool.name)
        plugin = self.sharing.device_plugin
        managed = plugin.managed_plugin
        for index, pool in enumerate(self.pools):
            # gpushare sets TKE's switch label from the action; a pool's own value may only agree with it.
            labelled = pool.labels.get(kube_names.LABEL_DEVICE_ENABLE)
            if labelled is not None and labelled != managed.device_enable_value:
                raise _at(
                    f"pools[{index}].labels.{kube_names.LABEL_DEVICE_ENABLE}",
                    f"{labelled!r} contradicts managedPlugin.action {managed.action}, which labels every GPU "
                    f"pool {kube_names.LABEL_DEVICE_ENABLE}={managed.device_enable_value}"
                    + (" (TKE's plugin would run beside gpushare's)" if managed.action == "optOut" else ""),
                )
        for index, pool in enumerate(self.pools):
            untolerated = plugin_tolerations.untolerated_taint(plugin.mode, pool.taints)
            if untolerated is not None:
                raise _at(f"pools[{index}].taints[{untolerated[0]}]", untolerated[1])
            disabled = plugin_tolerations.disabled_operand(
                plugin.mode, pool.labels, isinstance(pool.sharing, Mig)
            )
            if disabled is not None:
                raise _at(f"pools[{index}].labels[{json.dumps(disabled[0])}]", disabled[1])
        if managed.action == "adopt":
            if plugin.mode != "daemonsets":
                raise _at(
                    "sharing.devicePlugin.managedPlugin.action",
                    f"adopt only works in daemonsets mode, not {plugin.mode} (the {plugin.mode} plugin serves "
                    "every pool; TKE's DaemonSet must stay off them)",
                )
            if managed.pool not in seen:
                raise _at("sharing.devicePlugin.managedPlugin.pool", f"no pool named {managed.pool!r}")
        if plugin.mode == "gpu-operator":
            self._one_layout_per_mig_config_name()
        if plugin.mig_strategy is not None:
            # The chart renders a top-level migStrategy as MIG_STRATEGY env, which overrides every per-node
            # config file: it must agree with what every pool's file says.
            for pool in self.pools:
                wanted = pool_mig_strategy(pool)
                if wanted != plugin.mig_strategy:
                    raise _at(
                        "sharing.devicePlugin.migStrategy",
                        f"{plugin.mig_strategy} would override pool {pool.name}'s {wanted} (the chart passes "
                        "it as MIG_STRATEGY env, which beats every per-node config file); leave it unset",
                    )
        return self

    def _one_layout_per_mig_config_name(self) -> None:
        """The GPU Operator's MIG manager reads ONE mig-parted file for all pools: a name in it (the
        `nvidia.com/mig.config` label value) can mean one layout only."""
        layouts: dict[str, dict[str, int]] = {MIG_CONFIG_ALL_DISABLED: {}}
        for index, pool in enumerate(self.pools):
            sharing = pool.sharing
            if not isinstance(sharing, Mig):
                continue
            name = sharing.config_name
            if name in layouts and layouts[name] != sharing.mig_layout:
                why = (
                    "is the MIG manager's config for unlabelled nodes"
                    if name == MIG_CONFIG_ALL_DISABLED
                    else "names another pool's different layout"
                )
                raise _at(
                    f"pools[{index}].sharing.layoutName",
                    f"{name!r} {why}; the GPU Operator's one mig-parted file needs one layout per name",
                )
            layouts[name] = dict(sharing.mig_layout)

    @property
    def plugin(self) -> DevicePlugin:
        return self.sharing.device_plugin

    def pool(self, name: str) -> Pool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)


def pool_mig_strategy(pool: Pool) -> Literal["none", "single", "mixed"]:
    return pool.sharing.strategy if isinstance(pool.sharing, Mig) else "none"


# ---------------------------------------------------------------------------------------------------
# Loading

_CONFIG_FIELDS = {
    "cluster": "cluster",
    "sharing": "sharing",
    "pools": "pools",
    "protectPools": "protectPools",
}


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def from_config_values(
    values: Mapping[str, Any],
    *,
    stack: str,
    source: str,
    secret_keys: Iterable[str] = (),
    today: date | None = None,
) -> StackConfig:
    """Validate config values keyed `namespace:key` (already parsed from YAML/JSON). `today`: the day
    `measuredAt` may not be after (default: the latest calendar day anywhere on Earth)."""
    secrets = set(secret_keys)
    problems: list[str] = []
    for key in sorted(SECRET_KEYS & set(values)):
        if key not in secrets:
            problems.append(f"{source}: {key}: must be a secret (pulumi config set --secret {key} ...)")
    problems.extend(_credential_problems(values, secrets, source))
    problems.extend(_placeholder_problems(values, source))
    unknown = sorted(
        key
        for key in values
        if key.startswith(f"{PROJECT}:") and key.split(":", 1)[1] not in {*_CONFIG_FIELDS, "kubeconfig"}
    )
    known_keys = [f"{PROJECT}:{k}" for k in _CONFIG_FIELDS]
    for key in unknown:
        problems.append(
            f"{source}: {key}: unknown key{did_you_mean(key, known_keys)} (known: {', '.join(known_keys)})"
        )
    if problems:
        raise ConfigError("\n".join(problems))
    data: dict[str, Any] = {
        "stack": stack,
        "source": source,
        "hasKubeconfig": f"{PROJECT}:kubeconfig" in values,
        "configEnvBytes": config_env_bytes(values),
    }
    for field, alias in _CONFIG_FIELDS.items():
        key = f"{PROJECT}:{field}"
        if key in values:
            data[alias] = values[key]
    if "tencentcloud:region" in values:
        data["region"] = values["tencentcloud:region"]
    if f"{PROJECT}:cluster" not in values:
        raise ConfigError(
            "missing (set the TKE cluster: {id, vpcId, subnetIds, kubernetesVersion})",
            source=source,
            key=f"{PROJECT}:cluster",
        )
    try:
        return StackConfig.model_validate_json(
            json.dumps(data, default=_json_scalar), context={"today": today} if today else None
        )
    except ValidationError as err:
        raise ConfigError("\n".join(_describe(err, source))) from None


def _json_scalar(value: object) -> str:
    # YAML turns an unquoted `2025-06-01` into a date; the Pulumi CLI would hand it over as a string.
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(f"cannot pass {type(value).__name__} as config")


def load_stack(project_dir: Path, stack: str, *, today: date | None = None) -> StackConfig:
    """THE way every command (plan, render, check, verify) reads a stack: `Pulumi.<stack>.yaml` in
    `project_dir`, refused in one `ConfigError` naming the file and key before anything runs."""
    if not is_stack_name(stack):
        raise ConfigError(f"not a stack name: {stack!r} (letters, digits, '_', '.' and '-')")
    return load_stack_file(Path(project_dir) / stack_file_name(stack), stack, today=today)


def load_stack_file(path: Path, stack: str | None = None, *, today: date | None = None) -> StackConfig:
    """Read a stack file the way the Pulumi CLI does (keys without a namespace belong to the project)
    and validate it; `load_stack` for a stack by name."""
    stack = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    source = path.name
    document = _read_stack_document(path)
    if document is None:
        document = {}
    if not isinstance(document, dict) or not isinstance(document.get("config") or {}, dict):
        raise ConfigError("expected a mapping with a `config:` mapping", source=source)
    values: dict[str, Any] = {}
    secret_keys = []
    for key, value in (document.get("config") or {}).items():
        full = key if ":" in str(key) else f"{PROJECT}:{key}"
        if full in values:
            # The CLI reads `pools` as `gpushare:pools` (the project's namespace is implied): one would
            # silently replace the other.
            first = next(k for k in document["config"] if (k if ":" in str(k) else f"{PROJECT}:{k}") == full)
            raise ConfigError(
                f"given twice, as config.{first} and as config.{key} (a key without a namespace is the "
                f"project's: both are {full}); keep one",
                source=source,
                key=full,
            )
        if isinstance(value, dict) and "secure" in value:
            if set(value) != {"secure"} or not isinstance(value["secure"], str):
                raise ConfigError(
                    "`secure:` must be the one ciphertext string `pulumi config set --secret` writes",
                    source=source,
                    key=full,
                )
            secret_keys.append(full)
            value = "<secret>"
        elif not full.startswith(f"{PROJECT}:") and not isinstance(value, dict | list):
            value = _cli_string(value)  # the CLI hands other namespaces' scalars to providers as strings
        values[full] = value
    config = from_config_values(values, stack=stack, source=source, secret_keys=secret_keys, today=today)
    _check_kubernetes_schema(config)
    return config


# Pulumi stack names (optionally org/project/stack are not file names); anything else would make a path.
is_stack_name = kube_syntax.anchored(r"[A-Za-z0-9_.-]+")
# Linux's MAX_ARG_STRLEN: the most one environment variable (`PULUMI_CONFIG=...`) may hold.
CONFIG_ENV_LIMIT_BYTES = 128 * 1024
# plan and render warn from here on: `check` (and `pulumi preview --policy-pack`) stop at the limit.
CONFIG_ENV_WARN_BYTES = 96 * 1024
# Larger files are not stack files: refused before parsing (YAML parsing is not bounded otherwise).
MAX_STACK_FILE_BYTES = 4 * 1024 * 1024
# Values after alias expansion: a 2000-pool stack holds ~50 000; an alias bomb holds billions.
MAX_STACK_VALUES = 1_000_000


# Nothing a stack holds nests deeper (config > gpushare:pools > [i] > sharing > timeSlicing > ...); the
# JSON conversion and the models recurse per level.
MAX_STACK_DEPTH = 32
_TOO_DEEP = f"not valid YAML: nested more than {MAX_STACK_DEPTH} levels deep"
# What the reader's own words become in a stack file's line.
_STACK_FILE_WORDS = {
    "is a directory, not a file": "is a directory, not a stack file",
    f"larger than {MAX_STACK_FILE_BYTES // 1024 // 1024} MiB; not read": (
        f"larger than {MAX_STACK_FILE_BYTES // 1024 // 1024} MiB; not a stack file"
    ),
}


def _read_stack_document(path: Path) -> Any:
    source = path.name
    try:
        raw = input_files.read_bytes(path, MAX_STACK_FILE_BYTES)
    except input_files.InputFileError as err:
        if err.message == "no such file":
            raise UnreadableConfigError(
                f"no such stack file ({path}){_stacks_there(path)}", source=source
            ) from None
        raise UnreadableConfigError(_STACK_FILE_WORDS.get(err.message, err.message), source=source) from None
    try:
        text = raw.decode("utf-8-sig")  # the CLI strips a UTF-8 BOM too
    except UnicodeDecodeError as err:
        raise UnreadableConfigError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); save it as UTF-8",
            source=source,
        ) from None
    try:
        # Before the C parser: libyaml recurses per `[`, and 25 000 of them overflow its stack (a signal,
        # not an error).
        yaml_bounds.check_flow_depth(text)
        document = load_cli_yaml(text)
    except (yaml_bounds.YamlBoundError, yaml_bounds.YamlTooDeepError, RecursionError):
        raise ConfigError(_TOO_DEEP, source=source) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {yaml_bounds.yaml_problem(err)}", source=source) from None
    problem = yaml_bounds.shape_problem(document, max_values=MAX_STACK_VALUES, max_depth=MAX_STACK_DEPTH)
    if problem is not None:
        # PyYAML shares aliased objects, but everything after it (JSON, validation) would expand them.
        raise ConfigError(problem if problem.startswith("expands") else _TOO_DEEP, source=source)
    return document


def _stacks_there(path: Path) -> str:
    """`; did you mean 'prod'? (stacks in DIR: dev, prod, staging)` for a stack file that does not exist."""
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        stacks = sorted(
            found.name.removeprefix("Pulumi.").removesuffix(".yaml")
            for found in path.parent.glob("Pulumi.*.yaml")
        )
    except OSError:
        return ""
    if not stacks:
        return f"; no Pulumi.<stack>.yaml in {path.parent} (--dir names the project directory)"
    return f"{did_you_mean(stack, stacks)} (stacks in {path.parent}: {', '.join(stacks)})"


def _cli_string(value: Any) -> str:
    # How the CLI turns a YAML scalar into a config string: true/false, numbers as written, null as "".
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)


def config_env_bytes(values: Mapping[str, Any]) -> int:
    """About how large `PULUMI_CONFIG` is when the CLI hands these values to a policy pack (structured
    values as compact JSON strings inside a JSON object)."""
    as_strings = {
        key: value
        if isinstance(value, str)
        else json.dumps(value, separators=(",", ":"), default=_json_scalar)
        for key, value in values.items()
    }
    return len("PULUMI_CONFIG=") + len(json.dumps(as_strings).encode("utf-8")) + 1


def _check_kubernetes_schema(config: StackConfig) -> None:
    """The offline commands validate manifests with kubernetes-validate's bundled schemas: a version it
    has none for is refused by every command alike (render cannot check its manifests, so none may pass)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return  # the Pulumi program alone (no offline tooling installed) has nothing to check against
    schemas = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    found = re.compile(r"v([0-9]+)\.([0-9]+)\.[0-9]+-local")
    minors = sorted(
        (int(m[1]), int(m[2])) for m in (found.fullmatch(p.name) for p in schemas.iterdir()) if m is not None
    )
    wanted = config.cluster.kubernetes_version
    if minors and tuple(int(n) for n in wanted.split(".")[:2]) not in minors:
        raise ConfigError(
            f"no Kubernetes {wanted} schema to check the manifests against (kubernetes-validate has "
            f"{minors[0][0]}.{minors[0][1]} to {minors[-1][0]}.{minors[-1][1]})",
            source=config.source,
            key=f"{PROJECT}:cluster.kubernetesVersion",
        )


# TencentCloud SecretIds: "AKID" and 32 letters and digits.
_is_secret_id = kube_syntax.anchored(r"AKID[A-Za-z0-9]{32}")
_CREDENTIAL_WORDS = ("secret", "token", "password", "credential", "accesskey", "apikey", "akid")


def _meant_secret_key(name: str) -> str | None:
    """The credential key a `tencentcloud:` key name probably meant (`secret_id` -> secretId), if any."""
    plain = re.sub(r"[^a-z0-9]", "", name.lower())
    if not any(word in plain for word in _CREDENTIAL_WORDS):
        return None
    if "token" in plain:
        return "tencentcloud:securityToken"
    return "tencentcloud:secretId" if plain.endswith("id") or "akid" in plain else "tencentcloud:secretKey"


def _credential_problems(values: Mapping[str, Any], secrets: set[str], source: str) -> list[str]:
    """Credentials under a misspelled `tencentcloud:` key are ignored by the provider and sit in the stack
    file in plain text; a SecretId-shaped value in plain text is refused under any `tencentcloud:` key."""
    problems = []
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace != "tencentcloud" or key in SECRET_KEYS:
            continue
        meant = _meant_secret_key(name)
        value = values[key]
        if meant is None and key not in secrets and isinstance(value, str) and _is_secret_id(value):
            meant = "tencentcloud:secretId"
        if meant is not None:
            state = "a secret" if key in secrets else "a credential in plain text"
            problems.append(
                f"{source}: {key}: looks like {state} under a key the provider does not read; probably meant "
                f"{meant} (pulumi config rm {key}; pulumi config set --secret {meant} ...)"
            )
    return problems


# What `advise --stack-snippet` writes where only the user knows the value (gpushare.advise.pool_snippet).
PLACEHOLDER_PREFIX = "FILL-IN"


def _placeholder_problems(values: Mapping[str, Any], source: str) -> list[str]:
    """A pasted snippet's `FILL-IN` values (source, measuredAt, instanceType) must be replaced: a stack
    holding one would record no real provenance, or ask TKE for an instance type that does not exist."""
    problems = []
    pending: list[tuple[str, Any]] = [(key, values[key]) for key in sorted(values, reverse=True)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str) and value.strip().startswith(PLACEHOLDER_PREFIX):
            problems.append(
                f"{source}: {path}: still the placeholder {value.strip()!r} from `gpushare advise "
                "--stack-snippet`: replace it with the real value"
            )
        elif isinstance(value, dict):
            pending.extend(
                (f"{path}.{k}" if _is_plain_key(str(k)) else f"{path}[{json.dumps(str(k))}]", v)
                for k, v in reversed(list(value.items()))
            )
        elif isinstance(value, list):
            pending.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return problems


def _describe(err: ValidationError, source: str) -> list[str]:
    lines = []
    details = err.errors()
    for detail in details:
        if detail["type"] == "too_short" and errors_below(detail["loc"], details):
            continue  # pydantic counts only the valid items: "needs at least 1" would be false
        loc: list[int | str] = list(detail["loc"])
        message = validation_message(detail)
        if detail["type"] == "extra_forbidden" and loc:
            message += did_you_mean(str(loc[-1]), _keys_beside(loc))
        if message.startswith("@"):
            subpath, message = message[1:].split("|", 1)
            loc += _subpath_parts(subpath)
        if detail["type"] in {"union_tag_invalid", "union_tag_not_found"}:
            loc.append("mode")  # the tag is what is wrong, not the whole `sharing` mapping
        lines.append(f"{source}: {_key_path(loc)}: {message}")
    return lines


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _keys_beside(loc: Sequence[int | str]) -> list[str]:
    """The keys the stack model allows where the key at `loc` was found (for "did you mean"); [] when the
    place is not one model's mapping (a dict of labels, say)."""
    candidates: list[type[BaseModel]] = [StackConfig]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an item of a list: the same model
        tagged = [
            m
            for m in candidates
            if "mode" in m.model_fields and part in get_args(m.model_fields["mode"].annotation)
        ]
        if len(candidates) > 1 and tagged:  # a discriminated union's tag (`sharing.time-slicing.<key>`)
            candidates = tagged
            continue
        if len(candidates) != 1:
            return []
        fields = candidates[0].model_fields
        field = next((f for name, f in fields.items() if part in (name, f.alias)), None)
        candidates = _models_in(field.annotation) if field is not None else []
    if len(candidates) != 1:
        return []
    return [field.alias or name for name, field in candidates[0].model_fields.items()]


def errors_below(loc: Sequence[int | str], details: Sequence[Mapping[str, Any]]) -> bool:
    """Whether another error sits inside `loc` (then pydantic's "needs at least 1 item" there is false)."""
    return any(len(d["loc"]) > len(loc) and tuple(d["loc"][: len(loc)]) == tuple(loc) for d in details)


_SUBPATH_PART = re.compile(r'\.?(?P<key>[^.\["]+)|\[(?P<index>\d+)\]|\[(?P<quoted>"(?:[^"\\]|\\.)*")\]')
# A map key that can be written after a dot in a `pulumi config set --path` path; others are quoted.
_is_plain_key = kube_syntax.anchored(r"[A-Za-z_][A-Za-z0-9_-]*")


def _subpath_parts(subpath: str) -> list[int | str]:
    """`sharing.migLayout`, `[1].effect`, `["nvidia.com/x"]` -> path parts (as `_at` writes them)."""
    parts: list[int | str] = []
    for match in _SUBPATH_PART.finditer(subpath):
        if match["index"] is not None:
            parts.append(int(match["index"]))
        elif match["quoted"] is not None:
            parts.append(json.loads(match["quoted"]))
        else:
            parts.append(match["key"])
    return parts


def _key_path(loc: Sequence[int | str]) -> str:
    parts = list(loc)
    # Discriminated unions put the tag in the path (`sharing.time-slicing.measuredMiB`): drop it.
    parts = [p for i, p in enumerate(parts) if not (i > 0 and parts[i - 1] == "sharing" and p in _MODES)]
    if not parts:
        return PROJECT
    if parts[0] == "region":
        return "tencentcloud:region"  # the one key of another namespace in the model
    text = f"{PROJECT}:{parts[0]}"
    for part in parts[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if _is_plain_key(part) else f"[{json.dumps(part)}]"
    return text


_MODES = {"time-slicing", "mig", "exclusive"}


def validation_message(detail: Mapping[str, Any]) -> str:
    """One pydantic error as the user reads it (`must be > 0`, `unknown key`, `must be one of ..., got ...`)."""
    kind = detail["type"]
    ctx = detail.get("ctx") or {}
    simple = {
        "greater_than": "must be > {gt}",
        "greater_than_equal": "must be >= {ge}",
        "less_than_equal": "must be <= {le}",
        "less_than": "must be < {lt}",
        "missing": "required",
        "extra_forbidden": "unknown key",
        "string_too_long": "at most {max_length} characters",
        "too_short": "needs at least {min_length} item(s)",
        "string_pattern_mismatch": "does not match {pattern}",
        "int_type": "must be an integer",
        "float_type": "must be a number",
        "finite_number": "must be a number, not NaN or infinity",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "dict_type": "must be a mapping",
        "tuple_type": "must be a list",
        "literal_error": "must be one of {expected}",
        "union_tag_invalid": "must be one of {expected_tags}",
        "union_tag_not_found": "needs `mode` (time-slicing, mig or exclusive)",
    }
    if kind in simple:
        plain = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}
        try:
            text = simple[kind].format(**plain)
        except KeyError:
            text = simple[kind]
        return text + _got(detail)
    message = str(detail["msg"])
    return message.removeprefix("Value error, ")


_QUOTED_CHOICE = re.compile(r"'([^']*)'")


def _got(detail: Mapping[str, Any]) -> str:
    """For a value outside a fixed set (a mode, an action): the value given and the nearest choice."""
    ctx = detail.get("ctx") or {}
    if detail["type"] == "literal_error":
        given, expected = detail.get("input"), str(ctx.get("expected", ""))
    elif detail["type"] == "union_tag_invalid":
        given, expected = ctx.get("tag"), str(ctx.get("expected_tags", ""))
    else:
        return ""
    if not isinstance(given, str):
        return f", got {json.dumps(given, default=str)}"
    return f", got {given!r}{did_you_mean(given, _QUOTED_CHOICE.findall(expected))}"
