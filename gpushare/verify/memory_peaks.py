"""What `measure` can establish per pool: the peak memory of one pod (the tuning's per-process figure).

Exact only where one number belongs to one pod: a GPU (or MIG instance) its node does not share (the
node advertises no more slots than it has GPUs: the seed's starting point, before time-slicing), a
single-GPU node with one pod on it, or dcgm-exporter's per-pod series. Elsewhere the GPU's memory is
several pods' and cannot be split: the pool is refused with the reason. A pod with several processes
counts as one (the per-pod figure is what the pods need; it is at least the largest process).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare import kube_names, qgpu
from gpushare.errors import GpushareError
from gpushare.plan import GPU_RESOURCE, PoolPlan, SharingPlan
from gpushare.stack.model import Exclusive, Mig
from gpushare.tuning import tune
from gpushare.verify.memory_observation import LiveMemory
from gpushare.verify.memory_series import PodUse, Readings


@dataclass(frozen=True)
class _Target:
    """One kind of unit a pool's measurement covers: whole GPUs, or the MIG instances of one profile."""

    resource: str
    profile: str | None
    per_node: int  # units of this kind on one node


@dataclass(frozen=True)
class Candidate:
    node: str
    mib: float
    how: str


@dataclass(frozen=True)
class PoolPeak:
    pool: str
    gpu: str
    measured_mib: int | None  # what the stack says now
    replicas_now: str
    peak: Candidate | None
    replicas_then: str | None
    reason: str  # how the peak was established, or why the pool is refused
    writable: bool

    @property
    def peak_mib(self) -> int | None:
        # Rounded up: a measurement below the real peak would over-share the GPU.
        return None if self.peak is None else math.ceil(self.peak.mib)


def _targets(plan: PoolPlan) -> list[_Target] | str:
    sharing = plan.pool.sharing
    gpus = plan.pool.gpus_per_node_effective
    if plan.qgpu is not None:
        return qgpu.NOT_MEASURED
    if not isinstance(sharing, Mig):
        return [_Target(GPU_RESOURCE, None, gpus)]
    if sharing.time_slicing is None:
        return "its MIG instances are not time-sliced: there is no measurement to take"
    return [
        _Target(plan.gpu.mig_profile(profile).resource_name, profile, gpus * count)
        for profile, count in sorted(sharing.mig_layout.items())
    ]


def _allocatable(node: Mapping[str, Any], resource: str) -> int:
    # The client's quantity parser, as every reader of the cluster reads quantities (`1k` is 1000). Imported
    # here: the CLI imports this module for every command, the Kubernetes client only for the live ones.
    from gpushare.verify.objects import resource_count

    return resource_count(((node.get("status") or {}).get("allocatable") or {}).get(resource, 0))


def _node_candidates(
    node: Mapping[str, Any], target: _Target, readings: Readings, live: LiveMemory
) -> list[Candidate] | str:
    """The candidates one node gives, [] when no pod there holds a slot (nothing to measure), or why the
    memory of a pod that holds one cannot be known (which refuses the pool)."""
    name = str((node.get("metadata") or {}).get("name"))
    units = sorted(u for u in readings.used_mib if u.mig_profile == target.profile)
    what = f"MIG {target.profile} instance" if target.profile else "GPU"
    holders = live.gpu_pods.get(name)
    # The slots each pod holds as its spec says (the scheduler's count), not as series or labels say.
    slots_of = (
        {pod: holders.pods[pod][target.resource] for pod in holders.holders(target.resource)}
        if holders
        else {}
    )
    if not slots_of:
        return []
    if not units:
        return f"node {name}: {readings.exporter} reports no {what} memory"
    series = [p for p in readings.pods if p.unit in units]
    if series:
        uses: dict[str, list[PodUse]] = {}
        for use in series:
            # A series of a pod that holds no slot here (gone, or a GPU user outside the scheduler) is no
            # measurement of what a slot needs.
            if use.pod in slots_of:
                uses.setdefault(use.pod, []).append(use)
        unread = sorted(set(slots_of) - set(uses))
        if unread:
            return (
                f"node {name}: {', '.join(unread)} hold{'s' if len(unread) == 1 else ''} {target.resource} "
                f"slots but {readings.exporter} gives no per-pod series for "
                f"{'it' if len(unread) == 1 else 'them'}: the GPU's memory cannot be split"
            )
        candidates = []
        for pod, pod_uses in sorted(uses.items()):
            # Divided by the replicas the pod holds on that unit as its spec says (its slots over the units
            # it appears on), never by how many series list it: one pod under many indexes holds one slot.
            per_unit = max(1, slots_of[pod] // len(pod_uses))
            for use in pod_uses:
                divisor = max(1, min(use.slots, per_unit))
                candidates.append(
                    Candidate(name, use.used_mib / divisor, f"pod {pod}'s own series on node {name}")
                )
        return candidates
    advertised = _allocatable(node, target.resource)
    held = sum(slots_of.values())
    if advertised == target.per_node and held <= target.per_node:
        # Exclusive (one slot per unit, as the node advertises it): each unit serves at most one pod.
        return [Candidate(name, readings.used_mib[u], f"one pod per {what} on node {name}") for u in units]
    if len(units) == 1 and held == 1:
        only = next(iter(slots_of))
        return [Candidate(name, readings.used_mib[units[0]], f"pod {only} alone on node {name}")]
    return (
        f"node {name}: {len(slots_of)} pods hold {held} slots of its {what}s ({advertised} advertised) and "
        f"{readings.exporter} gives no per-pod series (dcgm-exporter does with KUBERNETES_VIRTUAL_GPUS=true); "
        "measure while the GPUs are exclusive, or enable per-pod series"
    )


def _replicas(plan: PoolPlan, targets: Sequence[_Target], measured: int | None, ceiling: float) -> str:
    """Slots per GPU (per MIG profile: `<profile> <slots>`) the tuning gives for `measured`."""
    if measured is None:
        return "-"
    parts = []
    for target in targets:
        tuning = tune(plan.gpu, measured, ceiling, mig_profile=target.profile)
        parts.append(f"{target.profile} {tuning.slots}" if target.profile else str(tuning.slots))
    return ", ".join(parts)


def pool_peaks(plan: SharingPlan, nodes: Sequence[Mapping[str, Any]], live: LiveMemory) -> list[PoolPeak]:
    ceiling = plan.stack.sharing.utilization_ceiling
    by_pool: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        pool = ((node.get("metadata") or {}).get("labels") or {}).get(kube_names.LABEL_POOL)
        by_pool.setdefault(str(pool), []).append(node)
    peaks = []
    for pool_plan in plan.pools:
        pool = pool_plan.pool
        measurement = pool.measurement
        measured = measurement.measured_mib if measurement is not None else None
        targets = _targets(pool_plan)
        writable = measurement is not None and not isinstance(pool.sharing, Exclusive)
        if isinstance(targets, str):
            slots = str(pool_plan.slots_per_gpu) if pool_plan.qgpu is not None else "1"
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, slots, None, None, targets, False))
            continue
        now = "1" if isinstance(pool.sharing, Exclusive) else _replicas(pool_plan, targets, measured, ceiling)
        candidates: list[Candidate] = []
        reasons: list[str] = []
        pool_nodes = sorted(
            by_pool.get(pool.name, []), key=lambda n: str((n.get("metadata") or {}).get("name"))
        )
        for node in pool_nodes:
            name = str((node.get("metadata") or {}).get("name"))
            readings = live.observation.readings.get(name)
            holders = live.gpu_pods.get(name)
            if holders is None:
                reasons.append(
                    f"node {name}: its pods could not be listed, so its slots' holders are unknown"
                )
                continue
            if readings is None:
                if holders.allocated():
                    reasons.append(f"node {name}: no GPU memory reading ({live.observation.source})")
                continue
            for target in targets:
                found = _node_candidates(node, target, readings, live)
                if isinstance(found, str):
                    reasons.append(found)
                else:
                    candidates += found
        if not pool_nodes:
            reasons.append(f"no node carries {kube_names.LABEL_POOL}={pool.name}")
        peak = max(candidates, key=lambda c: (c.mib, c.node), default=None)
        if reasons or peak is None or peak.mib <= 0:
            # Any pod holding a slot whose memory is unknown could be the peak: no figure for the pool.
            why = "; ".join(reasons) or (
                "no pod holds a slot on its nodes: run the workload, then measure"
                if peak is None
                else "its GPUs use no memory: run the workload, then measure"
            )
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, now, None, None, why, False))
            continue
        try:
            then = _replicas(pool_plan, targets, math.ceil(peak.mib), ceiling)
        except GpushareError as err:
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, now, None, None, err.message, False))
            continue
        peaks.append(PoolPeak(pool.name, pool.gpu, measured, now, peak, then, peak.how, writable))
    return peaks
