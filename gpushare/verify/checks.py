"""`verify`'s checks: pure functions from the expected cluster and a snapshot of the live one to findings.

The snapshot holds objects exactly as the API server returns them (camelCase JSON); nothing here talks
to a cluster, so every check runs in tests on hand-built or rendered objects. `run_checks` runs them all:
the nodes' (`node_checks`), the device plugins' (`plugin_checks`) and the waiting workloads'
(`workload_checks`), over the snapshot and into the report (`report`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gpushare import kube_names, qgpu
from gpushare.verify.expectations import ClusterExpectation
from gpushare.verify.mps_checks import mps_findings
from gpushare.verify.node_checks import (
    _label_findings,
    _mig_findings,
    _node_warnings,
    _pool_nodes,
    _slot_findings,
)
from gpushare.verify.objects import _count, _dig, _name
from gpushare.verify.plugin_checks import _config_map_findings, _managed_findings, _workload_findings
from gpushare.verify.qgpu_checks import node_memory_gib, planned_memory_gib, qgpu_findings, version_of
from gpushare.verify.report import (
    PERMISSION,
    POOL_WITHOUT_NODES,
    ClusterSnapshot,
    Finding,
    K8sObject,
    NodeRow,
    PoolRow,
    VerifyReport,
)
from gpushare.verify.workload_checks import _pending_findings, _rollout_findings, gpu_pending_pods


def _permission_findings(snapshot: ClusterSnapshot) -> Iterator[Finding]:
    for denial in snapshot.denied:
        skipped = f"; not checked: {', '.join(denial.checks)}" if denial.checks else ""
        yield Finding(
            PERMISSION,
            "warning",
            denial.resource,
            f"missing permission: {denial.permission} (the API server answered 403){skipped}; "
            "see the ClusterRole in docs/verify.md",
        )


def _pool_rows(expected: ClusterExpectation, by_pool: Mapping[str, list[K8sObject]]) -> tuple[PoolRow, ...]:
    rows = []
    for pool in expected.pools:
        nodes = []
        if pool.plan.qgpu is not None:
            # A qGPU pool's row: its nodes' allocatable qGPU memory (GiB) against the plan's, and their
            # qGPU version (`qgpu_checks`).
            rows.append(
                PoolRow(
                    pool.name,
                    (f"{qgpu.RESOURCE_MEMORY} (GiB)",),
                    tuple(
                        NodeRow(
                            _name(node), planned_memory_gib(pool), node_memory_gib(node), version_of(node)
                        )
                        for node in sorted(by_pool[pool.name], key=_name)
                    ),
                )
            )
            continue
        for node in sorted(by_pool[pool.name], key=_name):
            allocatable = _dig(node, "status", "allocatable") or {}
            have = sum(_count(allocatable.get(r, 0)) for r in pool.per_node_resources)
            nodes.append(NodeRow(_name(node), pool.slots_per_node, have))
        rows.append(PoolRow(pool.name, tuple(pool.per_node_resources), tuple(nodes)))
    return tuple(rows)


def run_checks(
    expected: ClusterExpectation, snapshot: ClusterSnapshot, extra: Sequence[Finding] = ()
) -> VerifyReport:
    """Every check over the snapshot, plus `extra` findings of checks that read more (memory-budget)."""
    findings: list[Finding] = list(extra)
    by_pool = _pool_nodes(expected, snapshot)
    for pool in expected.pools:
        nodes = sorted(by_pool[pool.name], key=_name)
        if not nodes and pool.plan.pool.nodes.desired > 0:
            findings.append(
                Finding(
                    POOL_WITHOUT_NODES,
                    "warning",
                    f"pool/{pool.name}",
                    f"no node carries {kube_names.LABEL_POOL}={pool.name} yet (desired "
                    f"{pool.plan.pool.nodes.desired}): the node pool is not created or its nodes have not joined",
                )
            )
        for node in nodes:
            findings.extend(_label_findings(pool, node))
            findings.extend(_slot_findings(pool, node))
            findings.extend(_mig_findings(pool, node))
    findings.extend(mps_findings(expected, snapshot, by_pool))
    findings.extend(qgpu_findings(expected, snapshot, by_pool))
    findings.extend(_config_map_findings(expected, snapshot))
    findings.extend(_workload_findings(expected, snapshot))
    findings.extend(_managed_findings(expected, snapshot))
    pending = gpu_pending_pods(snapshot.pending_pods, snapshot.scheduling_events)
    findings.extend(_pending_findings(pending, snapshot))
    findings.extend(_rollout_findings(pending, snapshot))
    findings.extend(_node_warnings(expected, snapshot))
    findings.extend(_permission_findings(snapshot))
    # Errors first, then by check and object, so two runs over the same cluster print the same.
    findings.sort(key=lambda f: (f.severity != "error", f.check, f.object))
    not_checked = tuple(
        f"{check} ({denial.permission})" for denial in snapshot.denied for check in denial.checks or ("-",)
    )
    return VerifyReport(expected.stack, _pool_rows(expected, by_pool), tuple(findings), not_checked)
