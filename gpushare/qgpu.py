"""TKE qGPU pools: sizing in qGPU units, the names TKE uses, and the shape of a well-formed qGPU request.

qGPU (TKE's add-on `qgpu`, shared/reference/tke-qgpu.md) slices a whole card in a kernel module: a pod
asks for `tke.cloud.tencent.com/qgpu-memory` (whole GiB) and `tke.cloud.tencent.com/qgpu-core` (percent
of the card, steps of 5), and the module enforces both. The card's allocatable qGPU memory is below its
nominal size and comes from the catalog (`catalog.QGPU_CARDS`, each figure with its confidence) or the
pool's own `allocatableGiB`.

Sizing uses the time-slicing headroom rule (`gpushare.tuning`): a time-sliced slot holds the measured
process with the ceiling's headroom, memory / replicas >= measured / ceiling, so a qGPU slice gets
ceil(measured / ceiling) MiB rounded up to whole GiB. Slots per card are then bounded by the allocatable
memory and by qGPU's 16 slices a card; compute is the card's 100 % shared evenly, rounded down to a
multiple of 5 (`size`). `size` is what `plan` and `advise` call.

Pure domain: the catalog and the tuning rule; no Pulumi, no cluster.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal

from gpushare import catalog, kube_names
from gpushare.catalog import GpuModel, QgpuConfidence
from gpushare.errors import GpushareError
from gpushare.tuning import DEFAULT_CEILING, check_ceiling, check_measured
from gpushare.wire_numbers import whole_number

MODE: Final = "qgpu"

# What pods request (VERIFIED, 457/65734).
RESOURCE_CORE: Final = "tke.cloud.tencent.com/qgpu-core"
RESOURCE_MEMORY: Final = "tke.cloud.tencent.com/qgpu-memory"
# Offline pods of TKE's co-location use this instead of qgpu-core (457/81034): whole-card semantics as core.
RESOURCE_CORE_GREEDY: Final = "tke.cloud.tencent.com/qgpu-core-greedy"
RESOURCES: Final = (RESOURCE_CORE, RESOURCE_MEMORY)

# Node labels (VERIFIED, qcloud-documents `使用qGPU.md`): the qgpu-manager DaemonSet's nodeSelector, and
# the pool's isolation policy (full names; TKE also takes be/fs/bs).
LABEL_DEVICE_ENABLE: Final = kube_names.LABEL_QGPU_DEVICE_ENABLE
DEVICE_ENABLE_VALUE: Final = "enable"
LABEL_SCHEDULE_POLICY: Final = kube_names.LABEL_QGPU_SCHEDULE_POLICY
SchedulePolicy = Literal["fixed-share", "burst-share", "best-effort"]
SCHEDULE_POLICIES: Final[tuple[SchedulePolicy, ...]] = ("fixed-share", "burst-share", "best-effort")
# The GPU Operator's per-node switch for all its operands (VERIFIED as a working label, NVIDIA/gpu-operator#661).
LABEL_OPERATOR_OPERANDS: Final = kube_names.LABEL_OPERATOR_DEPLOY_PREFIX + "operands"
# The node label the add-on (>= v1.1.1) sets with its kernel module's version (VERIFIED, 457/117759).
LABEL_VERSION: Final = "tke.cloud.tencent.com/qgpu.version"

# The add-on (console "QGPU（GPU 隔离组件）"). Name VERIFIED (3P tccli guide and a TF file); 1.1.3 is the
# version a third-party install saw on 2026-06-23 (3P), pinned until `tccli tke DescribeAddonValues`
# says otherwise on the cluster; the values schema {"config": {"priority": ...}} is INFERRED from
# DescribeAddonValues' default output (3P).
ADDON_NAME: Final = "qgpu"
DEFAULT_ADDON_VERSION: Final = "1.1.3"
AddonPriority = Literal["binpack", "spread"]
DEFAULT_ADDON_PRIORITY: AddonPriority = "binpack"
# What the add-on runs (VERIFIED, 457/65734): a privileged DaemonSet on every qGPU node, which installs the
# kernel module, and a scheduler extender.
MANAGER_NAMESPACE: Final = "kube-system"
MANAGER_DAEMONSET: Final = "qgpu-manager"
SCHEDULER_DEPLOYMENT: Final = "qgpu-scheduler"
# TKE's exporter on qGPU nodes (VERIFIED in the notes, 457/90912): DaemonSet elastic-gpu-exporter, port 5678.
EXPORTER_DAEMONSET: Final = "elastic-gpu-exporter"
EXPORTER_PORT: Final = 5678

# What `measure` says of a qGPU pool: the reference names the exporter and its port but no series, so no
# reading of it would be more than a guess.
NOT_MEASURED: Final = (
    f"qGPU pool: TKE's {EXPORTER_DAEMONSET} (port {EXPORTER_PORT}) serves its memory, but the names of its "
    "series are not published, so gpushare does not read it: run `nvidia-smi --query-compute-apps` on the "
    "node (it does not work inside a qGPU pod) and set sharing.measuredMiB"
)

# The TKE pool kind qGPU needs: native nodes only (VERIFIED, 457/65734).
NATIVE_POOL_TYPE: Final = "Native"


def node_labels(
    own: Mapping[str, str], pool: str, gpu: str, schedule_policy: str, *, gpu_operator: bool
) -> dict[str, str]:
    """Every label a qGPU pool puts on its nodes: its own, qGPU's switch and policy, gpushare's pool and GPU
    labels, TKE's NVIDIA switch `disable` (TKE's plugin would advertise the same cards as nvidia.com/gpu:
    double-allocatable), and under the GPU Operator `nvidia.com/gpu.deploy.operands=false` (none of its
    operands, the device plugin among them, on these nodes). No `nvidia.com/device-plugin.config`: no
    NVIDIA plugin config is this pool's."""
    labels = {
        **own,
        LABEL_DEVICE_ENABLE: DEVICE_ENABLE_VALUE,
        LABEL_SCHEDULE_POLICY: schedule_policy,
        kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_DISABLE_VALUE,
        kube_names.LABEL_GPU_MODEL: gpu,
        kube_names.LABEL_POOL: pool,
    }
    if gpu_operator:
        labels[LABEL_OPERATOR_OPERANDS] = "false"
    return dict(sorted(labels.items()))


def addon_raw_values(priority: str) -> str:
    """The add-on's `raw_values` as plain JSON: the provider base64-encodes it itself (VERIFIED in
    `resource_tc_kubernetes_addon.go` @ v1.82.42); encoding it here would send it twice encoded."""
    return '{"config":{"priority":"' + priority + '"}}'


@dataclass(frozen=True)
class QgpuSizing:
    """One qGPU pool's slices for one card model and one measurement."""

    gpu: str
    measured_mib: int
    ceiling: float
    allocatable_gib: int
    allocatable_confidence: QgpuConfidence | Literal["stack file"]
    allocatable_source: str
    memory_gib: int
    """Per pod: qgpu-memory, ceil(measured / ceiling) in whole GiB."""
    slots_per_gpu: int
    """min(16, floor(allocatable / memory_gib)); 0 when one slice does not fit."""
    core_percent: int
    """Per pod: qgpu-core, the card's 100 shared by the slots, rounded down to a multiple of 5."""
    bound: Literal["memory", "slices"]
    """Which limit set slots_per_gpu: the allocatable memory, or qGPU's 16 slices a card."""

    @property
    def inferred(self) -> bool:
        """The allocatable figure is not a Tencent-verified one (nor the stack's own)."""
        return self.allocatable_confidence in ("third-party", "inferred")

    @property
    def fits(self) -> bool:
        return self.slots_per_gpu >= 1

    def describe(self) -> str:
        mark = "" if not self.inferred else f" ({self.allocatable_confidence})"
        return (
            f"{self.slots_per_gpu} x ({self.memory_gib} GiB, core {self.core_percent}) of "
            f"{self.allocatable_gib} GiB{mark}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "gpu": self.gpu,
            "measuredMiB": self.measured_mib,
            "ceiling": self.ceiling,
            "allocatableGiB": self.allocatable_gib,
            "allocatableConfidence": self.allocatable_confidence,
            "allocatableSource": self.allocatable_source,
            "memoryGiB": self.memory_gib,
            "corePercent": self.core_percent,
            "slotsPerGpu": self.slots_per_gpu,
            "boundBy": self.bound,
        }


def memory_gib(measured_mib: int, ceiling: float = DEFAULT_CEILING) -> int:
    """A pod's qgpu-memory: ceil(measured / ceiling) MiB in whole GiB, computed exactly."""
    check_ceiling(ceiling)
    check_measured(measured_mib)
    return math.ceil(Fraction(measured_mib) / Fraction(str(ceiling)) / catalog.QGPU_MEMORY_UNIT_MIB)


def core_percent(slots_per_gpu: int) -> int:
    """The card's 100 % shared by `slots_per_gpu` pods, rounded down to qGPU's step of 5 (at least 5)."""
    if slots_per_gpu < 1:
        return 0
    step = catalog.QGPU_CORE_STEP
    return max(step, catalog.QGPU_CORE_PER_GPU // slots_per_gpu // step * step)


def allocatable(gpu: GpuModel, allocatable_gib: int | None = None) -> tuple[int, str, str]:
    """(GiB, confidence, source) of the card's allocatable qgpu-memory: the stack's own figure over the
    catalog's. Raises for a GPU qGPU does not support or whose figure nobody has seen."""
    if not catalog.qgpu_supported(gpu.key):
        raise GpushareError(
            f"{gpu.key} is not on Tencent's qGPU list (T4, L20/PNV5b, H20/PNV6, V100, A100, A10, L40S)"
        )
    if allocatable_gib is not None:
        return allocatable_gib, "stack file", "sharing.allocatableGiB"
    card = catalog.qgpu_card(gpu.key)
    if card is None:
        raise GpushareError(
            f"no allocatable qGPU memory is known for {gpu.key}: set sharing.allocatableGiB to what "
            "`kubectl get node -o jsonpath='{.status.allocatable}'` shows for tke.cloud.tencent.com/qgpu-memory"
        )
    return card.allocatable_gib, card.confidence, card.source


def size(
    gpu: GpuModel,
    measured_mib: int,
    ceiling: float = DEFAULT_CEILING,
    allocatable_gib: int | None = None,
) -> QgpuSizing:
    """Slots, per-pod memory (GiB) and core (%) of a qGPU pool of `gpu` for a process of `measured_mib`.

    L20 (44 GiB, third-party), 4621 MiB at 0.9: ceil(5134.4 MiB) = 6 GiB, floor(44 / 6) = 7 slices,
    core 100 / 7 = 14.3 -> 10. T4 (14 GiB), 4401 MiB: 5 GiB, 2 slices, core 50."""
    gib, confidence, source = allocatable(gpu, allocatable_gib)
    memory = memory_gib(measured_mib, ceiling)
    by_memory = gib // memory
    slots = min(catalog.QGPU_MAX_SLICES_PER_GPU, by_memory)
    return QgpuSizing(
        gpu=gpu.key,
        measured_mib=measured_mib,
        ceiling=ceiling,
        allocatable_gib=gib,
        allocatable_confidence=confidence,  # type: ignore[arg-type]
        allocatable_source=source,
        memory_gib=memory,
        slots_per_gpu=slots,
        core_percent=core_percent(slots),
        bound="slices" if by_memory > catalog.QGPU_MAX_SLICES_PER_GPU else "memory",
    )


# --------------------------------------------------------------------------------------------------------
# A workload's qGPU request (the pack's qgpu-request-shape and `verify` read it the same way)


def request_problems(
    requests: Mapping[str, object], limits: Mapping[str, object], slice_: QgpuSizing | None = None
) -> list[str]:
    """What is wrong with one container's qGPU resources (empty when well-formed, or when it asks for none).

    - requests equal limits (qGPU needs them equal; Kubernetes takes a limit alone as the request, and
      refuses a request alone for an extended resource);
    - qgpu-core a multiple of 5 from 5 to 100 per card (N x 100 for whole cards, split over at most 2);
    - qgpu-memory whole GiB, at least 1;
    - with the pool's sizing: no more than one planned slice (memory and core), so the planned slots hold.
    """
    problems: list[str] = []
    for resource in RESOURCES:
        if resource in requests and resource not in limits:
            problems.append(
                f"{resource}: a request without a limit (an extended resource needs its limit, equal to it)"
            )
        if resource in requests and resource in limits and requests[resource] != limits[resource]:
            problems.append(
                f"{resource}: requests {requests[resource]} != limits {limits[resource]} (qGPU needs them equal)"
            )
    asked = {**requests, **limits}
    core = asked.get(RESOURCE_CORE)
    if core is not None:
        value = whole_number(core)
        step, card = catalog.QGPU_CORE_STEP, catalog.QGPU_CORE_PER_GPU
        if value is None or value < step or value % step:
            problems.append(
                f"{RESOURCE_CORE}: {core} is not a multiple of {step} from {step} (percent of a card)"
            )
        elif value > card and value % card and value > 2 * card:
            problems.append(
                f"{RESOURCE_CORE}: {core} is more than 2 cards (qGPU splits above 100 over at most 2)"
            )
        elif slice_ is not None and slice_.fits and value > slice_.core_percent:
            problems.append(
                f"{RESOURCE_CORE}: {core} is more than the pool's slice of {slice_.core_percent} "
                f"({slice_.slots_per_gpu} slices a card)"
            )
    memory = asked.get(RESOURCE_MEMORY)
    if memory is not None:
        value = whole_number(memory)
        if value is None or value < 1:
            problems.append(f"{RESOURCE_MEMORY}: {memory} is not a whole number of GiB (at least 1)")
        elif slice_ is not None and slice_.fits and value > slice_.memory_gib:
            problems.append(
                f"{RESOURCE_MEMORY}: {memory} GiB is more than the pool's slice of {slice_.memory_gib} GiB "
                f"({slice_.slots_per_gpu} slices of {slice_.allocatable_gib} GiB)"
            )
    return problems
