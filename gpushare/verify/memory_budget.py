"""`verify`'s `memory-budget` check: the GPU memory the cluster uses against what the tuning assumed.

Pure, from the expected cluster, the nodes and a `MemoryObservation`. Per shared resource of a pool's
node (time-sliced GPUs, or time-sliced MIG instances of one profile):
- error when a GPU (instance) uses more than ceiling x its memory: the headroom the rule promised is gone;
- warning when the memory per allocated slot exceeds the pool's measurement: the workload outgrew it.
  Per slot is each pod's own memory where dcgm-exporter gives per-pod series, otherwise the average:
  the memory used on the node over the slots its pods hold.
What could not be read is a warning of this check too, never a failure of the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare import kube_names
from gpushare.plan import SharedResource
from gpushare.tuning import MIN_PLAUSIBLE_PROCESS_MIB, max_replicas
from gpushare.verify.expectations import ClusterExpectation, PoolExpectation
from gpushare.verify.memory_observation import MemoryObservation
from gpushare.verify.memory_series import Readings, Unit
from gpushare.verify.mps_checks import client_budget_finding
from gpushare.verify.report import Finding

MEMORY_BUDGET = "memory-budget"


def mib(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def replicas_for(shared: SharedResource, per_slot_mib: float) -> int:
    """What `tune` gives for a measurement of `per_slot_mib` (rounded up to whole MiB), 0 if it does not fit.
    An observed figure below the plausibility floor (an idle GPU) is read as the floor, which `tune` takes."""
    measured = max(MIN_PLAUSIBLE_PROCESS_MIB, math.ceil(per_slot_mib))
    if measured > shared.tuning.memory_mib:
        return 0
    return max_replicas(shared.tuning.memory_mib, measured, shared.tuning.ceiling)


def describe_replicas(shared: SharedResource, per_slot_mib: float) -> str:
    replicas = replicas_for(shared, per_slot_mib)
    sharing_off = " (fewer than 2: sharing off)" if replicas < 2 else ""
    return f"`tune` would give {replicas} replicas{sharing_off}, the plan has {shared.tuning.slots}"


def _ceiling_mib(shared: SharedResource) -> Fraction:
    return Fraction(str(shared.tuning.ceiling)) * shared.tuning.memory_mib


def _what(shared: SharedResource) -> str:
    profile = shared.tuning.mig_profile
    return f"MIG {profile} instance" if profile else "GPU"


@dataclass(frozen=True)
class _PerSlot:
    mib: float
    how: str
    where: str


def _per_slot(
    shared: SharedResource, units: Sequence[Unit], readings: Readings, allocated: Mapping[str, int]
) -> _PerSlot | None:
    pods = [p for p in readings.pods if p.unit in units]
    if pods:
        top = max(pods, key=lambda p: (p.per_slot_mib, p.pod))
        held = f" over its {top.slots} slots" if top.slots > 1 else ""
        return _PerSlot(top.per_slot_mib, f"pod {top.pod} uses {mib(top.used_mib)} MiB{held}", str(top.unit))
    slots = allocated.get(shared.resource, 0)
    if not slots:
        return None
    used = sum(readings.used_mib[u] for u in units)
    node = units[0].node
    return _PerSlot(
        used / slots,
        f"average: {mib(used)} MiB used over the {slots} {shared.resource} slots pods hold on node {node}",
        f"node/{node}",
    )


def _resource_findings(
    pool: PoolExpectation,
    shared: SharedResource,
    node: str,
    readings: Readings,
    allocated: Mapping[str, int],
) -> Iterator[Finding]:
    profile = shared.tuning.mig_profile
    units = sorted(u for u in readings.used_mib if u.mig_profile == profile)
    gpus = pool.plan.pool.gpus_per_node_effective
    wanted = gpus * (pool.mig.mig_layout.get(profile, 0) if pool.mig and profile else 1)
    if not units:
        yield Finding(
            MEMORY_BUDGET,
            "warning",
            f"node/{node}",
            f"pool {pool.name}: {readings.exporter} reports no {_what(shared)} memory on this node "
            f"({'it reports whole GPUs only' if profile else 'only MIG instances'}); not checked",
        )
        return
    measured = shared.tuning.measured_mib
    per_slot = _per_slot(shared, units, readings, allocated) if len(units) >= wanted else None
    slot_text = (
        f"{mib(per_slot.mib)} MiB per allocated slot ({per_slot.how}) against the measured {measured} MiB; "
        f"{describe_replicas(shared, per_slot.mib)}"
        if per_slot
        else f"the pool's measurement is {measured} MiB"
    )
    limit = _ceiling_mib(shared)
    over = [u for u in units if readings.used_mib[u] > limit]
    for unit in over:
        memory = shared.tuning.memory_mib
        yield Finding(
            MEMORY_BUDGET,
            "error",
            str(unit),
            f"pool {pool.name}: {mib(readings.used_mib[unit])} MiB used, above the ceiling "
            f"{shared.tuning.ceiling} x {memory} = {math.floor(limit)} MiB of this {_what(shared)} "
            f"({readings.exporter}): the headroom the tuning promised is gone and allocations start failing "
            f"for every pod on it; {slot_text}",
        )
    if len(units) < wanted:
        yield Finding(
            MEMORY_BUDGET,
            "warning",
            f"node/{node}",
            f"pool {pool.name}: {readings.exporter} reports {len(units)} of the node's {wanted} "
            f"{_what(shared)}s; the others are not checked and the memory per slot cannot be worked out",
        )
        return
    if per_slot is not None and pool.plan.mps:
        # MPS: each slot's budget is its client's memory limit (gpushare.verify.mps_checks).
        client = client_budget_finding(pool, per_slot.mib, per_slot.how, per_slot.where, readings.exporter)
        if client is not None:
            yield client
            return
    if over or per_slot is None or per_slot.mib <= measured:
        return
    yield Finding(
        MEMORY_BUDGET,
        "warning",
        per_slot.where,
        f"pool {pool.name}: {mib(per_slot.mib)} MiB observed per allocated slot ({per_slot.how}, "
        f"{readings.exporter}), more than the {measured} MiB measured: the workload outgrew the measurement; "
        f"{describe_replicas(shared, per_slot.mib)} (`gpushare measure`, then `pulumi preview`)",
    )


def _pool_of(node: Mapping[str, Any]) -> str | None:
    labels = (node.get("metadata") or {}).get("labels") or {}
    pool = labels.get(kube_names.LABEL_POOL)
    return str(pool) if pool is not None else None


def shared_pool_nodes(expected: ClusterExpectation, nodes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Node name -> pool name, for the nodes of pools that time-slice something."""
    shared = {p.name for p in expected.pools if p.plan.shared}
    result = {}
    for node in nodes:
        pool = _pool_of(node)
        if pool in shared:
            result[str((node.get("metadata") or {}).get("name"))] = str(pool)
    return result


def budget_findings(
    expected: ClusterExpectation, nodes: Sequence[Mapping[str, Any]], observation: MemoryObservation
) -> list[Finding]:
    findings = [Finding(MEMORY_BUDGET, "warning", obj, message) for obj, message in observation.problems]
    for node, pool_name in sorted(shared_pool_nodes(expected, nodes).items()):
        pool = expected.pool(pool_name)
        if pool is None or node in observation.unread:
            continue
        readings = observation.readings.get(node)
        if readings is None:
            findings.append(
                Finding(
                    MEMORY_BUDGET,
                    "warning",
                    f"node/{node}",
                    f"pool {pool_name}: {observation.source} gave no GPU memory series for this node; not checked",
                )
            )
            continue
        allocated = observation.allocated.get(node, {})
        for shared in pool.plan.shared:
            findings.extend(_resource_findings(pool, shared, node, readings, allocated))
    return findings
