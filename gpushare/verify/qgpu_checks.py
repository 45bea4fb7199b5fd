"""`verify`'s checks of qGPU pools (`sharing.mode: qgpu`): TKE's qGPU, not an NVIDIA plugin, serves them.

Besides the labels every pool's nodes must carry (`node-labels`: qGPU's switch and policy, TKE's NVIDIA
switch `disable`), each node of a qGPU pool must show (shared/reference/tke-qgpu.md):
- `qgpu-allocatable`: allocatable `tke.cloud.tencent.com/qgpu-core` (100 a card) and `qgpu-memory`; a
  memory figure other than the plan's (the catalog's, third-party for L20 and inferred for H20, or the
  pool's `allocatableGiB`) is a warning naming the figure to put in the stack file, since slices were
  planned from it;
- `qgpu-manager`: a Ready pod of `kube-system/qgpu-manager` (the add-on's DaemonSet, which loads the
  kernel module) on the node;
- `qgpu-no-nvidia-gpu`: no `nvidia.com/gpu` advertised: an NVIDIA plugin there hands out the cards qGPU
  slices a second time;
- `qgpu-version`: the node's `tke.cloud.tencent.com/qgpu.version` label (add-on v1.1.1 on), shown in the
  table; a warning when it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gpushare import catalog, qgpu
from gpushare.plan import GPU_RESOURCE
from gpushare.verify.expectations import ClusterExpectation, PoolExpectation
from gpushare.verify.objects import _count, _dig, _labels, _name
from gpushare.verify.report import ClusterSnapshot, Finding, K8sObject

QGPU_ALLOCATABLE = "qgpu-allocatable"
QGPU_MANAGER = "qgpu-manager"
QGPU_NO_NVIDIA_GPU = "qgpu-no-nvidia-gpu"
QGPU_VERSION = "qgpu-version"


def planned_memory_gib(pool: PoolExpectation) -> int:
    """The allocatable qgpu-memory the plan expects on one node of the pool (every card's)."""
    sizing = pool.plan.qgpu
    assert sizing is not None
    return sizing.allocatable_gib * pool.plan.pool.gpus_per_node_effective


def node_memory_gib(node: K8sObject) -> int:
    return _count((_dig(node, "status", "allocatable") or {}).get(qgpu.RESOURCE_MEMORY, 0))


def version_of(node: K8sObject) -> str | None:
    return _labels(node).get(qgpu.LABEL_VERSION)


def _ready_on(pods: Sequence[K8sObject]) -> set[str]:
    ready = set()
    for pod in pods:
        if _dig(pod, "status", "phase") != "Running" or _dig(pod, "metadata", "deletionTimestamp"):
            continue
        conditions = _dig(pod, "status", "conditions") or []
        if any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict)
        ):
            ready.add(str(_dig(pod, "spec", "nodeName")))
    return ready


def _allocatable_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    sizing = pool.plan.qgpu
    assert sizing is not None
    where = f"node/{_name(node)}"
    allocatable = _dig(node, "status", "allocatable") or {}
    gpus = pool.plan.pool.gpus_per_node_effective
    core, memory = _count(allocatable.get(qgpu.RESOURCE_CORE, 0)), node_memory_gib(node)
    if core <= 0 or memory <= 0:
        missing = [r for r, n in ((qgpu.RESOURCE_CORE, core), (qgpu.RESOURCE_MEMORY, memory)) if n <= 0]
        yield Finding(
            QGPU_ALLOCATABLE,
            "error",
            where,
            f"pool {pool.name}: no allocatable {' or '.join(missing)}: qGPU does not serve this node, and no "
            f"qGPU pod can land on it (is the qgpu add-on installed, the node labelled "
            f"{qgpu.LABEL_DEVICE_ENABLE}={qgpu.DEVICE_ENABLE_VALUE}, the qgpu-manager pod Ready, the driver "
            f"within {catalog.QGPU_DRIVER_SERIES[0]}-{catalog.QGPU_DRIVER_SERIES[-1]}?)",
        )
        return
    if core != catalog.QGPU_CORE_PER_GPU * gpus:
        yield Finding(
            QGPU_ALLOCATABLE,
            "warning",
            where,
            f"pool {pool.name}: allocatable {qgpu.RESOURCE_CORE} is {core}, {catalog.QGPU_CORE_PER_GPU} x {gpus} "
            "card(s) expected: some of its cards are not sliced by qGPU",
        )
    planned = planned_memory_gib(pool)
    if memory != planned:
        per_card = memory // gpus if memory % gpus == 0 else None
        advice = (
            f"set pools[].sharing.allocatableGiB: {per_card} (`gpushare plan` then sizes the slices from it)"
            if per_card
            else "its cards differ"
        )
        yield Finding(
            QGPU_ALLOCATABLE,
            "warning",
            where,
            f"pool {pool.name}: allocatable {qgpu.RESOURCE_MEMORY} is {memory} GiB, the plan counts {planned} "
            f"({sizing.allocatable_gib} GiB a card, {sizing.allocatable_confidence}): {advice}",
        )


def qgpu_findings(
    expected: ClusterExpectation,
    snapshot: ClusterSnapshot,
    by_pool: Mapping[str, list[K8sObject]],
) -> Iterator[Finding]:
    pools = [p for p in expected.pools if p.plan.qgpu is not None]
    manager = expected.qgpu_manager
    if manager is None or not pools:
        return
    if manager in snapshot.missing:
        yield Finding(
            QGPU_MANAGER,
            "error",
            str(manager),
            f"not found: qGPU pool(s) {', '.join(p.name for p in pools)} have no qgpu-manager, so no node gets "
            "the qgpu kernel module or a qGPU resource; the qgpu add-on creates it (`pulumi up`)",
        )
    known = manager in snapshot.objects
    ready = _ready_on(snapshot.daemonset_pods.get(manager, ()))
    for pool in pools:
        for node in sorted(by_pool.get(pool.name, []), key=_name):
            where = f"node/{_name(node)}"
            yield from _allocatable_findings(pool, node)
            if known and _name(node) not in ready:
                yield Finding(
                    QGPU_MANAGER,
                    "error",
                    where,
                    f"pool {pool.name}: no Ready pod of {manager} on this node: the qgpu kernel module is not "
                    f"managed here (it runs only on nodes labelled {qgpu.LABEL_DEVICE_ENABLE}="
                    f"{qgpu.DEVICE_ENABLE_VALUE}; `kubectl -n {manager.namespace} describe daemonset "
                    f"{manager.name}`)",
                )
            advertised = max(
                _count((_dig(node, "status", field) or {}).get(GPU_RESOURCE, 0))
                for field in ("capacity", "allocatable")
            )
            if advertised > 0:
                yield Finding(
                    QGPU_NO_NVIDIA_GPU,
                    "error",
                    where,
                    f"pool {pool.name}: advertises {GPU_RESOURCE} ({advertised}) beside qGPU: an NVIDIA device "
                    "plugin runs on this node and hands out the cards qGPU slices a second time (TKE's needs "
                    "nvidia-device-enable=disable; the GPU Operator's nvidia.com/gpu.deploy.operands=false)",
                )
            if version_of(node) is None:
                yield Finding(
                    QGPU_VERSION,
                    "warning",
                    where,
                    f"pool {pool.name}: no {qgpu.LABEL_VERSION} label: the qGPU add-on is older than v1.1.1, "
                    "or its kernel module is not loaded (`cat /proc/qgpu/version` on the node)",
                )
