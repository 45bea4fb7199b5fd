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

from gpushare import kube_names
from gpushare.errors import GpushareError
from gpushare.plan import GPU_RESOURCE, PoolPlan, SharingPlan
from gpushare.stack.model import Exclusive, Mig
from gpushare.tuning import tune
from gpushare.verify.memory_observation import LiveMemory
from gpushare.verify.memory_series import Readings


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
    if not isinstance(sharing, Mig):
        return [_Target(GPU_RESOURCE, None, gpus)]
    if sharing.time_slicing is None:
        return "its MIG instances are not time-sliced: there is no measurement to take"
    return [
        _Target(plan.gpu.mig_profile(profile).resource_name, profile, gpus * count)
        for profile, count in sorted(sharing.mig_layout.items())
    ]


def _allocatable(node: Mapping[str, Any], resource: str) -> int:
    try:
        return int(str(((node.get("status") or {}).get("allocatable") or {}).get(resource, 0)))
    except ValueError:
        return 0


def _node_candidates(
    node: Mapping[str, Any], target: _Target, readings: Readings, live: LiveMemory
) -> list[Candidate] | str:
    name = str((node.get("metadata") or {}).get("name"))
    units = sorted(u for u in readings.used_mib if u.mig_profile == target.profile)
    what = f"MIG {target.profile} instance" if target.profile else "GPU"
    if not units:
        return f"node {name}: {readings.exporter} reports no {what} memory"
    pods = [p for p in readings.pods if p.unit in units]
    if pods:
        return [Candidate(name, p.per_slot_mib, f"pod {p.pod}'s own series on node {name}") for p in pods]
    holders = live.gpu_pods.get(name)
    holding = holders.holders(target.resource) if holders else []
    if not holding:
        return f"node {name}: no pod holds a {target.resource} slot, so no memory there is a pod's"
    advertised = _allocatable(node, target.resource)
    if advertised <= target.per_node:
        return [Candidate(name, readings.used_mib[u], f"one pod per {what} on node {name}") for u in units]
    if len(units) == 1 and len(holding) == 1 and holders and holders.pods[holding[0]][target.resource] == 1:
        return [Candidate(name, readings.used_mib[units[0]], f"pod {holding[0]} alone on node {name}")]
    return (
        f"node {name}: {len(holding)} pods share its {what}s ({advertised} slots advertised) and "
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
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, "1", None, None, targets, False))
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
            if readings is None:
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
        if peak is None or peak.mib <= 0:
            why = "; ".join(reasons) or "its GPUs use no memory: run the workload, then measure"
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, now, None, None, why, False))
            continue
        try:
            then = _replicas(pool_plan, targets, math.ceil(peak.mib), ceiling)
        except GpushareError as err:
            peaks.append(PoolPeak(pool.name, pool.gpu, measured, now, None, None, err.message, False))
            continue
        unread = f" (not read: {'; '.join(reasons)})" if reasons else ""
        peaks.append(
            PoolPeak(pool.name, pool.gpu, measured, now, peak, then, f"{peak.how}{unread}", writable)
        )
    return peaks
