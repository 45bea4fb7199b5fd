"""GpuSharingCluster as the component package hosts it (package/): typed `pulumi.Input` args, documented outputs.

Other programs, in any language, create it through the generated SDK (`pulumi package add`, see
docs/component-package.md). The args mirror the stack file's keys (`cluster`, `sharing`, `pools`,
`protectPools`) in the stack file's own spelling, and are validated into the same frozen `StackConfig`
the stack loader builds, by the same function (`from_config_values`): a bad value fails with the same
key path and message. The children are built by the standalone component's `compose`, so both register
the same resources under the same token.

Pulumi's schema analyzer reads this module's annotations at run time: it must not use
`from __future__ import annotations`, and every type below is one the analyzer accepts (TypedDicts of
`pulumi.Input`s, lists, `dict[str, ...]`; no tuples, unions or `Mapping[str, object]`). The attribute
docstrings become the schema's descriptions.
"""

import asyncio
import re
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any, NotRequired, TypedDict, cast

import pulumi

# Private SDK names, where there is no public way (tests/test_public_sdk_names.py lists each): deciding before
# any registration which inputs are unknown or secret needs a synchronous view of an Output's data, which the
# Python SDK does not offer (pulumi/pulumi#12104); registering inside an apply instead loses every child at
# preview (pulumi/pulumi#16140).
from pulumi.output import Unknown, _OutputData
from pulumi.runtime import rpc

from components.gpu_node_pool import PoolPlacement
from components.gpu_sharing_cluster import TYPE_TOKEN
from components.gpu_sharing_cluster import GpuSharingCluster as StandaloneGpuSharingCluster
from gpushare.errors import ConfigError
from gpushare.stack.loading import from_config_values
from gpushare.stack.model import PROJECT, StackConfig


# The closed sets of the stack file, as schema enums: a generated SDK offers exactly these values (and a typed
# language refuses any other at compile time). String enums: `stack_file_names` hands the loader their values.
class DevicePluginMode(StrEnum):
    """Who runs NVIDIA's device plugin."""

    DAEMONSETS = "daemonsets"
    """One DaemonSet per GPU pool (TKE's v0.14.5 image by default)."""
    HELM = "helm"
    """NVIDIA's device-plugin chart."""
    GPU_OPERATOR = "gpu-operator"
    """NVIDIA's GPU Operator."""


class ManagedPluginAction(StrEnum):
    """What gpushare does about TKE's own device-plugin DaemonSet."""

    PARK = "park"
    """Patch it onto no node."""
    ADOPT = "adopt"
    """Make it one pool's plugin."""
    OPT_OUT = "optOut"
    """Label the pools out of it; patch nothing."""


class MigStrategy(StrEnum):
    """The device plugin's MIG strategy."""

    NONE = "none"
    """No MIG devices."""
    SINGLE = "single"
    """One MIG profile per node, advertised as `nvidia.com/gpu`."""
    MIXED = "mixed"
    """Each MIG profile as its own resource."""


class SharingMode(StrEnum):
    """How a pool's GPUs are shared."""

    TIME_SLICING = "time-slicing"
    """Time-slicing, with replicas derived from the measurement."""
    MIG = "mig"
    """MIG partitions (`migLayout`)."""
    EXCLUSIVE = "exclusive"
    """No sharing: one pod per GPU."""
    MPS = "mps"
    """NVIDIA MPS (helm and gpu-operator modes)."""
    QGPU = "qgpu"
    """TKE's qGPU on a native node pool (kernel-enforced memory and compute slices)."""


class QgpuSchedulePolicy(StrEnum):
    """qGPU's isolation policy on a pool (`tke.cloud.tencent.com/qgpu-schedule-policy`)."""

    FIXED_SHARE = "fixed-share"
    """Each pod gets its core share, no more."""
    BURST_SHARE = "burst-share"
    """Each pod gets its core share and may use idle compute."""
    BEST_EFFORT = "best-effort"
    """Busy pods share the card about evenly (TKE's default)."""


class TaintEffect(StrEnum):
    """A node taint's effect."""

    NO_SCHEDULE = "NoSchedule"
    """New pods without a toleration are not scheduled."""
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    """The scheduler avoids the node."""
    NO_EXECUTE = "NoExecute"
    """Running pods without a toleration are evicted too."""


class Cluster(TypedDict):
    """The TKE cluster the GPU node pools join (the stack file's `gpushare:cluster`)."""

    id: pulumi.Input[str]
    """The TKE cluster id, `cls-...`; may be another resource's output."""
    vpcId: pulumi.Input[str]
    """The cluster's VPC, `vpc-...`."""
    subnetIds: pulumi.Input[list[pulumi.Input[str]]]
    """The subnets the node pools' instances are placed in, `subnet-...` (at least one)."""
    kubernetesVersion: pulumi.Input[str]
    """The cluster's Kubernetes minor version, like `1.30`."""


class ManagedPlugin(TypedDict):
    """What to do with TKE's own `kube-system/nvidia-device-plugin-daemonset`."""

    action: NotRequired[pulumi.Input[ManagedPluginAction]]
    """`park` (patch it onto no node), `adopt` (one pool's plugin) or `optOut` (label pools, patch nothing)."""
    pool: NotRequired[pulumi.Input[str]]
    """With `adopt`: the pool whose plugin TKE's DaemonSet becomes."""
    name: NotRequired[pulumi.Input[str]]
    """The DaemonSet's name (default `nvidia-device-plugin-daemonset`)."""
    namespace: NotRequired[pulumi.Input[str]]
    """The DaemonSet's namespace (default `kube-system`)."""
    containerName: NotRequired[pulumi.Input[str]]
    """The plugin container's name in it (default `nvidia-device-plugin-ctr`; UNVERIFIED on TKE)."""
    handBack: NotRequired[pulumi.Input[bool]]
    """With `optOut`: give TKE's DaemonSet back as TKE shipped it (after `park` or `adopt`)."""
    tkeArgs: NotRequired[pulumi.Input[list[pulumi.Input[str]]]]
    """TKE's own plugin args, which `handBack` restores (default the seed's cluster's three)."""


class GpuOperator(TypedDict):
    """`devicePlugin.gpuOperator`: NVIDIA's GPU Operator on TKE (mode `gpu-operator` only)."""

    chartVersion: NotRequired[pulumi.Input[str]]
    """The pinned GPU Operator chart version (`v26.7.0`)."""
    chartRepository: NotRequired[pulumi.Input[str]]
    """The chart repository (default NVIDIA's NGC repository)."""
    namespace: NotRequired[pulumi.Input[str]]
    """The operator's namespace (default `gpu-operator`)."""
    runtimeClass: NotRequired[pulumi.Input[str]]
    """The RuntimeClass the operands run under (default `runc`; INFERRED for TKE nodes)."""
    driverEnabled: NotRequired[pulumi.Input[bool]]
    """Let the operator install the driver (default false: TKE installs it)."""
    toolkitEnabled: NotRequired[pulumi.Input[bool]]
    """Let the operator install the container toolkit (default false)."""
    cdiEnabled: NotRequired[pulumi.Input[bool]]
    """Turn on CDI (default false: containerd 1.6 on TKE)."""
    prometheusOperator: NotRequired[pulumi.Input[bool]]
    """The cluster runs the Prometheus Operator: the DCGM exporter gets a ServiceMonitor."""
    migManagerWithReboot: NotRequired[pulumi.Input[bool]]
    """Let the MIG manager reboot a node to change MIG mode (default true: cloud VMs need it)."""
    tkeMigEnable: NotRequired[pulumi.Input[bool]]
    """Also set TKE's `gpu_args.mig_enable` on MIG pools (default false)."""


class Measurement(TypedDict):
    """One measurement of the largest process's GPU memory (`nvidia-smi --query-compute-apps`)."""

    measuredMib: pulumi.Input[int]
    """The largest process's GPU memory in MiB (stack file: `measuredMiB`); replicas derive from it."""
    measuredAt: NotRequired[pulumi.Input[str]]
    """When it was measured (ISO 8601 date); the policy pack flags stale measurements."""
    source: NotRequired[pulumi.Input[str]]
    """Where the number came from, for reviewers."""


class Fallback(TypedDict):
    """Opt-in sharing for the fallback key `any` (nodes whose label names no pool), tuned for one GPU."""

    gpu: pulumi.Input[str]
    """The catalog GPU the fallback is tuned for (`T4`, `L20`, `H20`, ...)."""
    measuredMib: pulumi.Input[int]
    """The largest process's GPU memory in MiB (the stack file's `measuredMiB`)."""
    measuredAt: NotRequired[pulumi.Input[str]]
    """When it was measured (ISO 8601 date)."""
    source: NotRequired[pulumi.Input[str]]
    """Where the number came from."""


class DevicePlugin(TypedDict):
    """Which device plugin serves the pools, and how."""

    mode: NotRequired[pulumi.Input[DevicePluginMode]]
    """`daemonsets` (a DaemonSet per GPU model, the default), `helm` (NVIDIA's chart) or `gpu-operator`."""
    version: NotRequired[pulumi.Input[str]]
    """The device-plugin version: `0.14.5`, `0.17.1` or `0.20.0` (not in mode gpu-operator)."""
    image: NotRequired[pulumi.Input[str]]
    """The plugin image reference (default TKE's v0.14.5 image in daemonsets mode, else NVIDIA's)."""
    chartRepository: NotRequired[pulumi.Input[str]]
    """The device-plugin chart repository (mode helm)."""
    namespace: NotRequired[pulumi.Input[str]]
    """The device-plugin chart's namespace (mode helm; default `nvidia-device-plugin`)."""
    gfdEnabled: NotRequired[pulumi.Input[bool]]
    """Run GPU Feature Discovery with the chart (mode helm)."""
    nfdPresent: NotRequired[pulumi.Input[bool]]
    """The cluster runs its own Node Feature Discovery."""
    migStrategy: NotRequired[pulumi.Input[MigStrategy]]
    """The chart's top-level `migStrategy` (`none`, `single`, `mixed`); best left unset."""
    managedPlugin: NotRequired[pulumi.Input[ManagedPlugin]]
    """What to do with TKE's own device-plugin DaemonSet."""
    gpuOperator: NotRequired[pulumi.Input[GpuOperator]]
    """The GPU Operator's settings (mode gpu-operator only)."""


class QgpuAddon(TypedDict):
    """TKE's qGPU add-on (`sharing.qgpu`), declared when a pool is `qgpu`."""

    addonVersion: NotRequired[pulumi.Input[str]]
    """The add-on version, pinned (default 1.1.3)."""
    priority: NotRequired[pulumi.Input[str]]
    """The qGPU scheduler's policy: `binpack` (default) or `spread` (values schema INFERRED)."""


class Sharing(TypedDict):
    """How GPUs are shared (the stack file's `gpushare:sharing`)."""

    utilizationCeiling: NotRequired[pulumi.Input[float]]
    """The share of GPU memory the replicas may plan to use, in (0, 1] (default 0.9)."""
    maxMeasurementAgeDays: NotRequired[pulumi.Input[int]]
    """How old a measurement may get before the policy pack calls it stale (default 180)."""
    devicePlugin: NotRequired[pulumi.Input[DevicePlugin]]
    """Which device plugin serves the pools."""
    fallback: NotRequired[pulumi.Input[Fallback]]
    """Opt-in sharing for nodes whose label names no pool; without it they share nothing."""
    qgpu: NotRequired[pulumi.Input[QgpuAddon]]
    """TKE's qGPU add-on settings (only with a `qgpu` pool)."""


class SystemDisk(TypedDict):
    """A native node's system disk."""

    diskType: pulumi.Input[str]
    """`CLOUD_PREMIUM`, `CLOUD_SSD`, `CLOUD_BSSD` or `CLOUD_HSSD`."""
    diskSize: pulumi.Input[int]
    """Its size in GB."""


class DataDisk(TypedDict):
    """A data disk TKE formats and mounts on a native node."""

    diskType: pulumi.Input[str]
    """The system disk's types, or `CLOUD_TSSD`, `LOCAL_NVME`."""
    diskSize: pulumi.Input[int]
    """Its size in GB."""
    fileSystem: NotRequired[pulumi.Input[str]]
    """`ext3`, `ext4` (default) or `xfs`."""
    mountTarget: NotRequired[pulumi.Input[str]]
    """Where it is mounted (default `/var/lib/containerd`)."""


class NativePool(TypedDict):
    """A TKE native node pool's own settings (`qgpu` pools only)."""

    securityGroupIds: pulumi.Input[list[pulumi.Input[str]]]
    """The nodes' security groups, `sg-...`."""
    systemDisk: pulumi.Input[SystemDisk]
    """The system disk."""
    dataDisks: NotRequired[pulumi.Input[list[pulumi.Input[DataDisk]]]]
    """Data disks."""
    instanceChargeType: NotRequired[pulumi.Input[str]]
    """`POSTPAID_BY_HOUR` (the default and only value)."""
    scalingPolicy: NotRequired[pulumi.Input[str]]
    """`ZoneEquality` or `ZonePriority`."""
    machineType: NotRequired[pulumi.Input[str]]
    """`Native` or `NativeCVM`."""
    keyIds: NotRequired[pulumi.Input[list[pulumi.Input[str]]]]
    """SSH key ids, `skey-...`."""
    autoRepair: NotRequired[pulumi.Input[bool]]
    """TKE's self-healing of the nodes."""


class Nodes(TypedDict):
    """The pool's size: min <= desired <= max."""

    min: pulumi.Input[int]
    """The fewest nodes."""
    max: pulumi.Input[int]
    """The most nodes (autoscaling is on when it differs from min)."""
    desired: pulumi.Input[int]
    """The nodes the capacity plan counts."""


class PoolSharing(TypedDict):
    """How the pool's GPUs are shared: `mode` says which of the other keys apply."""

    mode: pulumi.Input[SharingMode]
    """`time-slicing`, `mig`, `exclusive`, `mps` or `qgpu`."""
    schedulePolicy: NotRequired[pulumi.Input[QgpuSchedulePolicy]]
    """qgpu: the pool's isolation policy."""
    allocatableGib: NotRequired[pulumi.Input[int]]
    """qgpu: the card's allocatable qGPU memory in GiB, over the catalog's (stack file: `allocatableGiB`)."""
    measuredMib: NotRequired[pulumi.Input[int]]
    """time-slicing: the largest process's GPU memory in MiB (the stack file's `measuredMiB`)."""
    measuredAt: NotRequired[pulumi.Input[str]]
    """time-slicing: when it was measured (ISO 8601 date)."""
    source: NotRequired[pulumi.Input[str]]
    """time-slicing: where the number came from."""
    migLayout: NotRequired[pulumi.Input[dict[str, pulumi.Input[int]]]]
    """mig: MIG profile -> instances per GPU, like `{"1g.12gb": 6, "1g.24gb": 1}`."""
    layoutName: NotRequired[pulumi.Input[str]]
    """mig: the layout's name (the `nvidia.com/mig.config` label value)."""
    timeSlicing: NotRequired[pulumi.Input[Measurement]]
    """mig: time-slice every MIG instance, tuned from this measurement."""


class Taint(TypedDict):
    """A node taint (TKE takes key, value and effect)."""

    key: NotRequired[pulumi.Input[str]]
    """The taint's key."""
    value: NotRequired[pulumi.Input[str]]
    """The taint's value (may be empty)."""
    effect: NotRequired[pulumi.Input[TaintEffect]]
    """`NoSchedule`, `PreferNoSchedule` or `NoExecute`."""


class SoftwareVersion(TypedDict):
    """A `{name, version}` pair of TKE's `gpu_args`, as DescribeGPUInfo lists them."""

    name: pulumi.Input[str]
    """The software's name."""
    version: pulumi.Input[str]
    """Its version."""


class Cudnn(TypedDict):
    """cuDNN for TKE's `gpu_args`."""

    name: pulumi.Input[str]
    """cuDNN's name."""
    version: pulumi.Input[str]
    """Its version."""
    docName: NotRequired[pulumi.Input[str]]
    """The doc package's name."""
    devName: NotRequired[pulumi.Input[str]]
    """The dev package's name."""


class GpuDriver(TypedDict):
    """What TKE installs on the pool's nodes (`node_config.gpu_args`)."""

    name: pulumi.Input[str]
    """The driver's name."""
    version: pulumi.Input[str]
    """The driver's version (MIG pools need one that supports MIG)."""
    cuda: NotRequired[pulumi.Input[SoftwareVersion]]
    """CUDA to install."""
    cudnn: NotRequired[pulumi.Input[Cudnn]]
    """cuDNN to install."""


class Pool(TypedDict):
    """One TKE node pool of one GPU model (an item of the stack file's `gpushare:pools`)."""

    name: pulumi.Input[str]
    """The pool's name: a lowercase RFC 1123 label, not `any` (it becomes a label value and config key)."""
    gpu: pulumi.Input[str]
    """The catalog GPU model (`L20`, `T4`, `H20`, ...)."""
    instanceType: pulumi.Input[str]
    """The TKE instance type, like `PNV5b.8XLARGE96`."""
    gpusPerNode: NotRequired[pulumi.Input[int]]
    """GPUs per node; required when the instance type is not in the catalog."""
    subnetIds: NotRequired[pulumi.Input[list[pulumi.Input[str]]]]
    """This pool's subnets, over the cluster's `subnetIds` (a change replaces this pool alone)."""
    nodes: pulumi.Input[Nodes]
    """The pool's size."""
    sharing: pulumi.Input[PoolSharing]
    """How the pool's GPUs are shared."""
    protect: NotRequired[pulumi.Input[bool]]
    """Protect this pool from deletion (default: `protectPools`)."""
    deleteBeforeReplace: NotRequired[pulumi.Input[bool]]
    """Delete the old TKE pool before creating its replacement (default false)."""
    nodeOs: NotRequired[pulumi.Input[str]]
    """The node OS image (default `tlinux3.1x86_64`)."""
    labels: NotRequired[pulumi.Input[dict[str, pulumi.Input[str]]]]
    """Extra node labels (gpushare sets its own)."""
    taints: NotRequired[pulumi.Input[list[pulumi.Input[Taint]]]]
    """Node taints."""
    driver: NotRequired[pulumi.Input[GpuDriver]]
    """The GPU driver (and CUDA, cuDNN) TKE installs."""
    native: NotRequired[pulumi.Input[NativePool]]
    """`qgpu` pools: the native node pool's security groups, disks and scaling policy."""


class GpuSharingClusterArgs(TypedDict):
    """The stack file's `gpushare:` keys, as component inputs."""

    cluster: pulumi.Input[Cluster]
    """The TKE cluster the GPU node pools join."""
    sharing: NotRequired[pulumi.Input[Sharing]]
    """How GPUs are shared: the utilization ceiling, the device plugin, the fallback."""
    pools: pulumi.Input[list[pulumi.Input[Pool]]]
    """The GPU node pools (at least one)."""
    protectPools: NotRequired[pulumi.Input[bool]]
    """Protect every node pool from deletion, in Pulumi and in TKE (default false)."""


class MigProfileCapacity(TypedDict):
    """One MIG profile of a pool's layout in the capacity plan."""

    profile: str
    """The MIG profile, like `1g.12gb`."""
    instancesPerGpu: int
    """Instances of it per GPU."""
    replicas: int
    """Time-slicing replicas per instance (1: not time-sliced)."""
    slotsPerGpu: int
    """Slots per GPU from this profile."""


class QgpuCapacity(TypedDict):
    """A qGPU pool's slices in the capacity plan."""

    gpu: str
    """The catalog GPU model."""
    measuredMib: int
    """The measurement the slice is sized from, in MiB."""
    ceiling: float
    """The utilization ceiling (the headroom rule)."""
    allocatableGib: int
    """The card's allocatable qGPU memory, in GiB."""
    allocatableConfidence: str
    """`verified`, `third-party`, `inferred` or `stack file`."""
    allocatableSource: str
    """Where that figure comes from."""
    memoryGib: int
    """Each pod's qgpu-memory, in GiB."""
    corePercent: int
    """Each pod's qgpu-core, percent of a card."""
    slotsPerGpu: int
    """Slices per card."""
    boundBy: str
    """`memory` or `slices` (qGPU's 16 a card)."""


class PoolCapacity(TypedDict):
    """One pool in the capacity plan."""

    name: str
    """The pool's name."""
    gpu: str
    """The catalog GPU model."""
    mode: str
    """How its GPUs are shared (`time-slicing`, `mig`, `exclusive`, `mps`)."""
    nodes: int
    """The nodes the plan counts (`nodes.desired`)."""
    gpus: int
    """GPUs in the pool."""
    replicas: int | None
    """Time-slicing replicas per GPU (none for MIG pools)."""
    migInstancesPerGpu: int
    """MIG instances per GPU (0 without MIG)."""
    migProfiles: list[MigProfileCapacity]
    """The MIG layout's profiles (empty without MIG)."""
    slots: int
    """GPU slots after sharing."""
    memoryUsedMib: int
    """GPU memory the planned processes use, in MiB."""
    memoryTotalMib: int
    """The pool's GPU memory, in MiB."""
    utilization: float | None
    """memoryUsedMib / memoryTotalMib."""
    headroomMibPerSlot: float | None
    """Unplanned memory per slot, in MiB."""
    slotsBefore: int
    """Slots without sharing (one per GPU)."""
    mpsClientMemoryLimitMib: NotRequired[int]
    """MPS pools only: each client's memory limit, in MiB."""
    qgpu: NotRequired[QgpuCapacity]
    """qGPU pools only: the slice each pod requests."""


class FallbackCapacity(TypedDict):
    """The fallback key `any` in the capacity plan."""

    key: str
    """`any`."""
    mode: str
    """`time-slicing` or `exclusive`."""
    replicas: int
    """Replicas per GPU (1: not shared)."""
    gpu: str | None
    """The GPU it is tuned for, if any."""
    measuredMib: int | None
    """The measurement it is tuned from, if any."""
    summary: str
    """In words."""


class Capacity(TypedDict):
    """The capacity plan (`gpushare plan --json`, with `MiB` spelt `Mib` in key names)."""

    stack: str
    """The stack (the Pulumi stack the component runs in)."""
    pools: list[PoolCapacity]
    """Per pool."""
    fallback: FallbackCapacity
    """The fallback key `any`."""
    totalSlots: int
    """GPU slots after sharing."""
    slotsBefore: int
    """GPU slots without sharing."""


class GpuSharingCluster(pulumi.ComponentResource):
    """GPU sharing on one TKE cluster: GPU node pools, time-slicing or MIG tuned from measurements, plugins."""

    capacity: pulumi.Output[Capacity]
    """The capacity plan (`gpushare plan --json`): per pool its GPUs, replicas and slots, and the totals."""
    total_slots: pulumi.Output[int]
    """GPU slots after sharing: how many `nvidia.com/gpu: 1` pods the pools can run at once."""
    slots_before: pulumi.Output[int]
    """GPU slots without sharing (one per GPU)."""
    node_pool_ids: pulumi.Output[dict[str, str]]
    """Pool name -> the TKE node pool's id."""
    config_map_name: pulumi.Output[str | None]
    """The ConfigMap the device plugin reads its per-pool configs from (none in helm mode: the chart's own)."""
    helm_release_names: pulumi.Output[list[str]]
    """The Helm releases installed (the device-plugin chart or the GPU Operator; none in daemonsets mode)."""

    def __init__(
        self, name: str, args: GpuSharingClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        raw = cast(dict[str, Any], dict(args))
        # The children are registered from the inputs' known structure, so a preview with a cluster or
        # subnets still to be created shows (and the policy pack judges) every child; those placement values
        # flow into the node pools as Outputs. What decides the resources must be known (and plain) here,
        # and is validated before anything is registered: a bad input leaves nothing half-built.
        known, placed = split_inputs(name, raw)
        stack = validated_stack(name, known)
        # The component depends on whatever produced its inputs (say the cluster that gives `cluster.id`):
        # its children come after it and are deleted before it.
        inputs_ready = cast(pulumi.Resource, pulumi.Output.from_input(raw).apply(lambda _: None))
        super().__init__(
            TYPE_TOKEN,
            name,
            None,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[inputs_ready])),
        )
        composition = StandaloneGpuSharingCluster.compose(self, name, stack, pool_placements(stack, placed))
        self.capacity = pulumi.Output.from_input(cast(Capacity, schema_names(composition.capacity)))
        self.total_slots = pulumi.Output.from_input(int(composition.capacity["totalSlots"]))
        self.slots_before = pulumi.Output.from_input(int(composition.capacity["slotsBefore"]))
        self.node_pool_ids = pulumi.Output.all(**composition.node_pool_ids)
        self.config_map_name = pulumi.Output.from_input(composition.config_map_name)
        self.helm_release_names = pulumi.Output.from_input(composition.helm_release_names)
        self.register_outputs(
            {
                "capacity": self.capacity,
                "totalSlots": self.total_slots,
                "slotsBefore": self.slots_before,
                "nodePoolIds": self.node_pool_ids,
                "configMapName": self.config_map_name,
                "helmReleaseNames": self.helm_release_names,
            }
        )


# The inputs that only say where the pools' instances go: they may be other resources' outputs (unknown at
# preview) or secrets, and reach the node pools as Outputs. While unknown, a well-formed stand-in of the
# same kind is validated in their place (a known value is validated as it is). Every other input decides
# what gpushare registers (the pools, their labels, the plugins' replicas) and must be known and plain.
_PLACEMENT_STAND_INS: dict[str, Any] = {
    "cluster.id": "cls-00000000",
    "cluster.vpcId": "vpc-00000000",
    "cluster.subnetIds": ["subnet-00000000"],
    "pools[].subnetIds": ["subnet-00000000"],
}
SECRET_REASON = (
    "is or holds a secret: gpushare writes it, or what it derives, in plain resource inputs "
    "(only cluster.id, cluster.vpcId and cluster.subnetIds may be secret)"
)
_POOL_INDEX = re.compile(r"^pools\[\d+\]")


@dataclass(frozen=True)
class _Peeked:
    """An input value as the host delivered it: plain, or an output that is known (maybe secret) or not."""

    state: str  # "plain", "known" or "unknown"
    value: Any = None
    secret: bool = False


def _peek(value: Any) -> _Peeked:
    """What an input value is, without awaiting: the host decodes the engine's output values into Outputs
    whose data is already there (pulumi.runtime.rpc.deserialize_output_value), and secrets nested in
    objects into the wire's secret form. An Output whose data is not there yet counts as unknown."""
    if isinstance(value, pulumi.Output):
        # The SDK offers no synchronous read of an Output, resolved or not: its data future is read here.
        data = value._data
        if not data.done() or data.exception() is not None:
            return _Peeked("unknown")
        resolved = data.result()
        if not resolved.is_known:
            return _Peeked("unknown", secret=resolved.is_secret)
        return _Peeked("known", resolved.value, secret=resolved.is_secret)
    if isinstance(value, Unknown):
        return _Peeked("unknown")
    if isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        inner = _peek(value.get("value"))
        return _Peeked(inner.state if inner.state != "plain" else "known", inner.value, secret=True)
    return _Peeked("plain", value)


def split_inputs(name: str, raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, pulumi.Input[Any]]]:
    """(the inputs as plain values to validate, the placement inputs that are outputs, by key path).
    Raises one `pulumi.InputPropertiesError` naming every input that decides the resources but is unknown,
    secret or a resource reference."""
    problems: list[tuple[str, str]] = []
    placed: dict[str, pulumi.Input[Any]] = {}

    def walk(value: Any, path: str) -> Any:
        pattern = _POOL_INDEX.sub("pools[]", path)
        peeked = _peek(value)
        if isinstance(peeked.value, pulumi.Resource):
            problems.append((path, "is a resource reference; pass one of its outputs (like its `id`)"))
            return None
        if pattern in _PLACEMENT_STAND_INS:
            if peeked.state == "plain" and not _contains_outputs(peeked.value):
                return walk_plain(peeked.value, path)
            placed[path] = _as_input(value)
            if peeked.state == "unknown" or _contains_unknowns(peeked.value):
                return _PLACEMENT_STAND_INS[pattern]
            return walk_plain(_known_value(peeked.value), path)
        if peeked.state == "unknown":
            problems.append((path, "must be known at preview: it decides which resources gpushare registers"))
            return None
        # The host marks a whole top-level input secret when any value in it is (which one is lost);
        # `kubernetesVersion` only validates the plugin's version and is written nowhere.
        if peeked.secret and path != "cluster.kubernetesVersion":
            problems.append((path, SECRET_REASON))
            return None
        return walk_plain(peeked.value, path)

    def walk_plain(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {key: walk(item, f"{path}.{key}") for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, f"{path}[{index}]") for index, item in enumerate(value)]
        return value

    known = {key: walk(spread_outputs(value, key), key) for key, value in raw.items()}
    if problems:
        source = f"GpuSharingCluster {name}"
        message = "\n".join(f"{source}: {path}: {reason}" for path, reason in problems)
        raise pulumi.InputPropertiesError(
            message, [{"property_path": path, "reason": reason} for path, reason in problems]
        )
    return known, placed


def spread_outputs(value: Any, path: str) -> Any:
    """`value` with each known output of an object or list turned into that object or list of outputs
    (each keeping the secret mark and dependencies), so that the SDK maps an object's fields (it would
    take an output for `{}`) and only the values that are outputs stay outputs. A secret object is spread
    only under `cluster` (its placement values may be secret); elsewhere it stays whole, to be refused."""
    peeked = _peek(value)
    if peeked.state == "known" and isinstance(peeked.value, dict | list):
        if peeked.secret and path.split(".")[0].split("[")[0] != "cluster":
            return value
        resources = _resources_of(value)
        items = peeked.value.items() if isinstance(peeked.value, dict) else enumerate(peeked.value)
        spread = {
            key: spread_outputs(
                item if _peek(item).state != "plain" else _resolved_output(item, peeked.secret, resources),
                f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]",
            )
            for key, item in items
        }
        return spread if isinstance(peeked.value, dict) else list(spread.values())
    if peeked.state == "plain" and isinstance(value, dict):
        return {key: spread_outputs(item, f"{path}.{key}") for key, item in value.items()}
    if peeked.state == "plain" and isinstance(value, list):
        return [spread_outputs(item, f"{path}[{index}]") for index, item in enumerate(value)]
    return value


def _resources_of(value: Any) -> set[pulumi.Resource]:
    if isinstance(value, pulumi.Output) and value._data.done():
        return set(value._data.result().resources)
    return set()


def _resolved_output(value: Any, secret: bool, resources: set[pulumi.Resource]) -> pulumi.Output[Any]:
    """An Output whose data is there at once, as the host's own decoded output values are."""
    data: asyncio.Future[_OutputData[Any]] = asyncio.get_event_loop().create_future()
    data.set_result(_OutputData(resources=resources, value=value, is_known=True, is_secret=secret))
    return pulumi.Output._from_data(data)


def _as_input(value: Any) -> pulumi.Input[Any]:
    """A placement input as an Input: a list stays a list (its known length), each item the output it is;
    the wire's nested secret form becomes a secret Output."""
    peeked = _peek(value)
    if peeked.state != "plain" and not isinstance(value, pulumi.Output):
        return pulumi.Output.secret(peeked.value)
    if isinstance(value, list):
        return [_as_input(item) for item in value]
    return value


def _contains_outputs(value: Any) -> bool:
    if _peek(value).state != "plain":
        return True
    if isinstance(value, list):
        return any(_contains_outputs(item) for item in value)
    return False


def _contains_unknowns(value: Any) -> bool:
    peeked = _peek(value)
    if peeked.state == "unknown":
        return True
    if isinstance(peeked.value, list):
        return any(_contains_unknowns(item) for item in peeked.value)
    return False


def _known_value(value: Any) -> Any:
    """A known placement value with its outputs' values read (validated as the stack file's would be)."""
    if isinstance(value, list):
        return [_known_value(item) for item in value]
    peeked = _peek(value)
    return _known_value(peeked.value) if peeked.state != "plain" else value


def pool_placements(stack: StackConfig, placed: dict[str, pulumi.Input[Any]]) -> dict[str, PoolPlacement]:
    """Pool name -> where its instances go, with the placement inputs that are outputs in place of the
    validated stand-ins; empty when every placement input was plain (the validated values serve)."""
    if not placed:
        return {}
    cluster = stack.cluster
    cluster_subnets: pulumi.Input[Any] = placed.get("cluster.subnetIds", list(cluster.subnet_ids))
    placements: dict[str, PoolPlacement] = {}
    for index, pool in enumerate(stack.pools):
        own = f"pools[{index}].subnetIds"
        subnets = placed.get(own) or (list(pool.subnet_ids) if pool.subnet_ids else cluster_subnets)
        placements[pool.name] = PoolPlacement(
            cluster_id=placed.get("cluster.id", cluster.id),
            vpc_id=placed.get("cluster.vpcId", cluster.vpc_id),
            subnet_ids=subnets,
        )
    return placements


# `<key path>: <reason>` after the source, as `gpushare.stack.messages` writes each problem.
_PROBLEM = re.compile(r'^(?P<key>[a-z]+:(?:[^\s:"\[]|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*): (?P<reason>.*)$')


# Key names whose stack-file spelling the SDKs would mangle (`measuredMiB` -> Python `measured_mi_b`): the
# schema spells them `...Mib` (Python `measured_mib`), and they are translated at the boundary.
_STACK_FILE_SPELLING = {"measuredMib": "measuredMiB", "allocatableGib": "allocatableGiB"}
_SCHEMA_SPELLING = re.compile(r"(?<=[MG]i)B(?=[A-Z]|$)")


def schema_names(value: Any) -> Any:
    """A plan or stack value's keys as the schema spells them (`memoryUsedMiB` -> `memoryUsedMib`)."""
    if isinstance(value, dict):
        return {_SCHEMA_SPELLING.sub("b", key): schema_names(item) for key, item in value.items()}
    if isinstance(value, list):
        return [schema_names(item) for item in value]
    return value


def stack_file_names(value: Any) -> Any:
    """Input values with the stack file's key names (`measuredMib` -> `measuredMiB`) and enum members as
    their strings, for the stack loader."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {_STACK_FILE_SPELLING.get(key, key): stack_file_names(item) for key, item in value.items()}
    if isinstance(value, list):
        return [stack_file_names(item) for item in value]
    return value


def validated_stack(name: str, args: dict[str, Any]) -> StackConfig:
    """The args as the frozen `StackConfig` the stack loader builds, or a `pulumi.InputPropertiesError`
    whose message is the loader's (with this component as its source) and whose errors name each input
    path (`pools[1].sharing.measuredMiB`)."""
    source = f"GpuSharingCluster {name}"
    values = {
        f"{PROJECT}:{key}": _integral_numbers(stack_file_names(value))
        for key, value in args.items()
        if value is not None
    }
    try:
        return from_config_values(values, stack=pulumi.get_stack(), source=source)
    except ConfigError as err:
        errors: list[pulumi.InputPropertyErrorDetails] = []
        for line in str(err).splitlines():
            problem = _PROBLEM.match(line.removeprefix(f"{source}: "))
            if problem is None:
                errors.append({"property_path": "", "reason": line})
                continue
            path = _SCHEMA_SPELLING.sub("b", problem["key"].removeprefix(f"{PROJECT}:"))
            errors.append({"property_path": path, "reason": problem["reason"]})
        raise pulumi.InputPropertiesError(str(err), errors) from None


def _integral_numbers(value: Any) -> Any:
    """Numbers cross the wire as doubles: 4621.0 is the 4621 the stack file says (a strict integer field
    refuses a float); 4621.5 stays a float, for the model to refuse like the loader does."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_numbers(item) for item in value]
    return value
