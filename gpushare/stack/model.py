"""The stack configuration (`Pulumi.<stack>.yaml`) as frozen, typed models, validated once.

The same models serve the Pulumi program (values from `pulumi.Config`) and the offline commands
(values read from the stack file), so a bad value fails the same way in both, naming the file and
the key path: `Pulumi.prod.yaml: gpushare:pools[1].sharing.measuredMiB: must be > 0`. Reading a stack
file is `gpushare.stack.loading`'s; the `devicePlugin` models are `gpushare.stack.plugin_settings`'.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpushare import catalog, gpu_driver, kube_names, mps, plugin_tolerations, qgpu
from gpushare.errors import GpushareError
from gpushare.mig.geometry import fit_layout
from gpushare.stack import kube_syntax, tke_limits
from gpushare.stack.fields import (
    MAX_GPUS_PER_NODE,
    _at,
    _catalog_gpu,
    _is_pool_name,
    _is_region,
    _is_subnet,
    _match_cluster_id,
    _match_minor_version,
    _match_node_os,
    _match_vpc_id,
    _Model,
    _today,
    measurement_date,
)
from gpushare.stack.native_pool import NativePool, QgpuAddon
from gpushare.stack.plugin_settings import MIG_CONFIG_ALL_DISABLED, DevicePlugin
from gpushare.tuning import DEFAULT_CEILING, MIN_SHARED_REPLICAS, max_replicas, measurement_problem

PROJECT = "gpushare"


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
        return _subnet_ids(value)


def _subnet_ids(value: tuple[str, ...]) -> tuple[str, ...]:
    for subnet in value:
        if not _is_subnet(subnet):
            raise ValueError(f"{subnet!r} is not a subnet id (subnet-...)")
    return value


class Sharing(_Model):
    utilization_ceiling: float = Field(
        default=DEFAULT_CEILING, alias="utilizationCeiling", gt=0, le=1, allow_inf_nan=False
    )
    max_measurement_age_days: int = Field(default=180, alias="maxMeasurementAgeDays", gt=0)
    device_plugin: DevicePlugin = Field(default_factory=DevicePlugin, alias="devicePlugin")
    # Defined below with the measurements; pydantic resolves the name when the model is first built.
    fallback: Fallback | None = None
    # TKE's qGPU add-on, declared when a pool is `mode: qgpu` (gpushare.stack.native_pool).
    qgpu: QgpuAddon = Field(default_factory=QgpuAddon)


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


class Mps(Measurement):
    """Whole GPUs shared with NVIDIA's MPS: replicas by the tuning rule, each client limited to the card's
    memory / replicas (`gpushare.mps`)."""

    mode: Literal["mps"]


class Qgpu(Measurement):
    """TKE's qGPU on a native node pool: each pod gets a kernel-enforced slice of a card's memory (whole
    GiB, from the measurement with the ceiling's headroom) and compute (`gpushare.qgpu.size`)."""

    mode: Literal["qgpu"]
    schedule_policy: qgpu.SchedulePolicy = Field(alias="schedulePolicy")
    # The card's allocatable qgpu-memory as the pool's nodes show it, over the catalog's figure (which
    # for L20 is third-party and for H20 inferred); GiB, at most a 141 GiB H200 could show.
    allocatable_gib: int | None = Field(default=None, alias="allocatableGiB", gt=0, le=141)


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

    @model_validator(mode="before")
    @classmethod
    def _no_mps_on_mig(cls, data: object) -> object:
        if isinstance(data, dict) and "mps" in data:
            raise _at(
                "mps",
                "MPS shares whole GPUs only, not MIG instances (the plugin refuses MPS on MIG devices); "
                "time-slice the instances (timeSlicing) or use mode mps on a pool without MIG",
            )
        return data

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


PoolSharing = Annotated[TimeSlicing | Mps | Mig | Exclusive | Qgpu, Field(discriminator="mode")]


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
    # The pool's own subnets over `cluster.subnetIds`: TKE replaces a pool whose subnets change (ForceNew),
    # so a subnet is added one pool at a time by giving that pool its own list.
    subnet_ids: tuple[str, ...] | None = Field(default=None, alias="subnetIds", min_length=1)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    driver: GpuDriver | None = None
    # A TKE native node pool's own settings: qGPU pools only, which need native nodes.
    native: NativePool | None = None

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

    @field_validator("subnet_ids")
    @classmethod
    def _own_subnets(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else _subnet_ids(value)

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
        self._native_only_for_qgpu()
        if isinstance(sharing, TimeSlicing | Mps | Qgpu) and sharing.measured_mib > model.memory_mib:
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

    def _native_only_for_qgpu(self) -> None:
        """A qGPU pool is a native pool (native keys, no regular-pool keys); no other pool is."""
        sharing = self.sharing
        if not isinstance(sharing, Qgpu):
            if self.native is not None:
                raise _at("native", "only a pool in sharing.mode qgpu is a TKE native node pool")
            return
        if self.native is None:
            raise _at(
                "native",
                "required for sharing.mode qgpu (TKE runs qGPU on native nodes only): securityGroupIds and "
                "systemDisk at least",
            )
        if self.driver is not None:
            raise _at(
                "driver",
                "a native node pool has no driver field in the pinned provider: TKE picks the driver "
                f"(qGPU needs series {', '.join(catalog.QGPU_DRIVER_SERIES)}; see docs/qgpu.md)",
            )
        if "node_os" in self.model_fields_set:
            raise _at(
                "nodeOs", "a native node pool runs TKE's own image: the pinned provider has no OS field"
            )
        try:
            qgpu.allocatable(catalog.gpu(self.gpu), sharing.allocatable_gib)
        except GpushareError as err:
            key = "sharing.allocatableGiB" if catalog.qgpu_supported(self.gpu) else "gpu"
            raise _at(key, err.message) from None

    @property
    def gpus_per_node_effective(self) -> int:
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        known = catalog.instance_type(self.instance_type)
        assert known is not None, "_consistent requires gpusPerNode for a type the catalog lacks"
        return known.gpus_per_node

    @property
    def config_key(self) -> str:
        """The device-plugin config key this pool's nodes select: the pool's name."""
        return self.name

    @property
    def measurement(self) -> Measurement | None:
        """What the pool's time-slicing replicas rest on; None for exclusive GPUs and unshared MIG instances."""
        sharing = self.sharing
        if isinstance(sharing, TimeSlicing | Mps | Qgpu):
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
    provider_keys: tuple[str, ...] = Field(default=(), alias="providerKeys")
    """The `tencentcloud:` keys the stack sets besides `region` (names only: values may be secrets), each a
    key of `gpushare.stack.tencentcloud_keys.PROVIDER_KEYS`; the program hands them to its provider."""
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
            if isinstance(pool.sharing, Qgpu):
                continue  # always `disable`: `_qgpu_pools`
            if labelled is not None and labelled != managed.device_enable_value:
                raise _at(
                    f"pools[{index}].labels.{kube_names.LABEL_DEVICE_ENABLE}",
                    f"{labelled!r} contradicts managedPlugin.action {managed.action}, which labels every GPU "
                    f"pool {kube_names.LABEL_DEVICE_ENABLE}={managed.device_enable_value}"
                    + (" (TKE's plugin would run beside gpushare's)" if managed.action == "optOut" else ""),
                )
        for index, pool in enumerate(self.pools):
            if isinstance(pool.sharing, Qgpu):
                continue  # no NVIDIA plugin serves it: its taints and operand labels are its own
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
            if isinstance(self.pool(managed.pool).sharing, Qgpu):
                raise _at(
                    "sharing.devicePlugin.managedPlugin.pool",
                    f"{managed.pool} is a qGPU pool: no NVIDIA device plugin may serve it",
                )
        if plugin.mode == "gpu-operator":
            self._one_layout_per_mig_config_name()
        self._mps_pools_supported()
        self._qgpu_pools()
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

    def _mps_pools_supported(self) -> None:
        """MPS pools only where the pinned plugin runs MPS, never under a mixed/single override, and only
        when the per-client limit holds the measured process (`gpushare.mps`)."""
        plugin = self.sharing.device_plugin
        ceiling = self.sharing.utilization_ceiling
        for index, pool in enumerate(self.pools):
            sharing = pool.sharing
            if not isinstance(sharing, Mps):
                continue
            problem = mps.version_problem(plugin.mode, plugin.plugin_version)
            if problem:
                raise _at(f"pools[{index}].sharing.mode", problem)
            problem = mps.mig_strategy_problem(plugin.mig_strategy)
            if problem:
                raise _at("sharing.devicePlugin.migStrategy", f"{problem} (pool {pool.name} uses MPS)")
            gpu = catalog.gpu(pool.gpu)
            problem = mps.compute_capability_problem(gpu.key, gpu.compute_capability)
            if problem:
                raise _at(f"pools[{index}].sharing.mode", problem)
            replicas = max_replicas(gpu.memory_mib, sharing.measured_mib, ceiling)
            if replicas < MIN_SHARED_REPLICAS:
                raise _at(
                    f"pools[{index}].sharing.measuredMiB",
                    f"{sharing.measured_mib} MiB leaves room for {replicas} MPS client on {gpu.key} at ceiling "
                    f"{ceiling:g} (the plugin needs >= {MIN_SHARED_REPLICAS} replicas): use mode exclusive",
                )
            problem = mps.client_limit_problem(gpu.memory_mib, replicas, sharing.measured_mib, ceiling)
            if problem:
                raise _at(f"pools[{index}].sharing.measuredMiB", problem)

    def _qgpu_pools(self) -> None:
        """qGPU pools keep NVIDIA's plugins off (TKE's by its switch `disable`, whatever the managed-plugin
        action); `sharing.qgpu` only where a pool uses it."""
        qgpu_pools = [index for index, pool in enumerate(self.pools) if isinstance(pool.sharing, Qgpu)]
        for index in qgpu_pools:
            labelled = self.pools[index].labels.get(kube_names.LABEL_DEVICE_ENABLE)
            if labelled is not None and labelled != kube_names.DEVICE_DISABLE_VALUE:
                raise _at(
                    f"pools[{index}].labels.{kube_names.LABEL_DEVICE_ENABLE}",
                    f"{labelled!r} would put TKE's NVIDIA plugin on a qGPU pool, advertising the cards qGPU "
                    f"slices as nvidia.com/gpu too; gpushare labels qGPU pools "
                    f"{kube_names.LABEL_DEVICE_ENABLE}={kube_names.DEVICE_DISABLE_VALUE}",
                )
        ceiling = self.sharing.utilization_ceiling
        for index in qgpu_pools:
            pool = self.pools[index]
            sharing = pool.sharing
            assert isinstance(sharing, Qgpu)
            sizing = qgpu.size(catalog.gpu(pool.gpu), sharing.measured_mib, ceiling, sharing.allocatable_gib)
            if not sizing.fits:
                raise _at(
                    f"pools[{index}].sharing.measuredMiB",
                    f"{sharing.measured_mib} MiB at ceiling {ceiling:g} needs a {sizing.memory_gib} GiB slice, "
                    f"more than {pool.gpu}'s {sizing.allocatable_gib} GiB of allocatable qGPU memory: use mode "
                    "exclusive",
                )
        if not qgpu_pools and "qgpu" in self.sharing.model_fields_set:
            raise _at("sharing.qgpu", "no pool is sharing.mode qgpu: remove the key")

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
