"""`verify`'s checks of MPS pools (`sharing.mode: mps`): the control daemon and the labels GFD sets.

Besides the checks every pool gets (the node labels gpushare sets, `nvidia.com/mps.capable=true` among
them; `slots-allocatable`: the planned replicas x GPUs of `nvidia.com/gpu`), an MPS pool needs NVIDIA's
MPS control daemon on each of its nodes: without it the plugin's MPS clients cannot start. The chart runs
it as the DaemonSet `<release>-mps-control-daemon` in the plugin's namespace, the GPU Operator as
`nvidia-device-plugin-mps-control-daemon` in its own (`gpushare.mps`), both on nodes labelled
`nvidia.com/mps.capable=true`. Where GFD runs (gpu-operator mode, or `gfdEnabled`), it labels each node
with the strategy the plugin applies (`nvidia.com/gpu.sharing-strategy`, 0.17.1 and later) and the
replicas (`nvidia.com/gpu.replicas`): `mps` and the planned count, or the plugin serves another config.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction

from gpushare import mps
from gpushare.verify.expectations import ClusterExpectation, PoolExpectation
from gpushare.verify.objects import _dig, _labels, _name
from gpushare.verify.report import ClusterSnapshot, Finding, K8sObject

MPS_CONTROL_DAEMON = "mps-control-daemon"
MPS_SHARING_LABELS = "mps-sharing-labels"


def _running_on(pods: Sequence[K8sObject]) -> set[str]:
    return {
        str(_dig(pod, "spec", "nodeName"))
        for pod in pods
        if _dig(pod, "status", "phase") == "Running" and not _dig(pod, "metadata", "deletionTimestamp")
    }


def _label_findings(pool: PoolExpectation, node: K8sObject, gfd_runs: bool) -> Iterator[Finding]:
    labels = _labels(node)
    where = f"node/{_name(node)}"
    strategy = labels.get(mps.LABEL_SHARING_STRATEGY)
    if strategy is not None and strategy != mps.SHARING_STRATEGY_VALUE:
        yield Finding(
            MPS_SHARING_LABELS,
            "error",
            where,
            f"pool {pool.name}: {mps.LABEL_SHARING_STRATEGY}={strategy}, the plan shares with MPS: the plugin on "
            "this node serves another config (see plugin-config-current), and its clients get no memory limit",
        )
    elif strategy is None and gfd_runs:
        yield Finding(
            MPS_SHARING_LABELS,
            "warning",
            where,
            f"pool {pool.name}: no {mps.LABEL_SHARING_STRATEGY} label although GFD runs: whether the plugin "
            "applies MPS here is not shown (GFD writes it from the plugin's config)",
        )
    replicas = labels.get(mps.LABEL_GPU_REPLICAS)
    planned = pool.plan.slots_per_gpu
    if replicas is not None and replicas != str(planned):
        yield Finding(
            MPS_SHARING_LABELS,
            "error",
            where,
            f"pool {pool.name}: {mps.LABEL_GPU_REPLICAS}={replicas}, the plan has {planned} MPS clients per GPU "
            f"of {pool.plan.client_memory_limit_mib} MiB each: the plugin runs a stale config, and its clients' "
            "memory limit is not the one planned",
        )


def mps_findings(
    expected: ClusterExpectation,
    snapshot: ClusterSnapshot,
    by_pool: Mapping[str, list[K8sObject]],
) -> Iterator[Finding]:
    """The control daemon on every MPS pool node, and GFD's strategy and replicas labels."""
    pools = [p for p in expected.pools if p.plan.mps]
    daemon = expected.mps_daemon
    if daemon is None or not pools:
        return
    if daemon in snapshot.missing:
        yield Finding(
            MPS_CONTROL_DAEMON,
            "error",
            str(daemon),
            f"not found: MPS pool(s) {', '.join(p.name for p in pools)} have no MPS control daemon, so no MPS "
            "client starts; the device-plugin chart (0.17.1) or the GPU Operator creates it",
        )
        return
    known = daemon in snapshot.objects
    running = _running_on(snapshot.daemonset_pods.get(daemon, ()))
    for pool in pools:
        for node in sorted(by_pool.get(pool.name, []), key=_name):
            if known and _name(node) not in running:
                yield Finding(
                    MPS_CONTROL_DAEMON,
                    "error",
                    f"node/{_name(node)}",
                    f"pool {pool.name}: no running pod of {daemon} on this node: its MPS clients cannot start "
                    f"(the daemon runs only on nodes labelled {mps.LABEL_MPS_CAPABLE}={mps.MPS_CAPABLE_VALUE}; "
                    "see node-labels, and `kubectl describe daemonset`)",
                )
            yield from _label_findings(pool, node, expected.gfd_runs)


def client_budget_finding(
    pool: PoolExpectation, per_slot_mib: float, how: str, where: str, exporter: str
) -> Finding | None:
    """`memory-budget` on an MPS pool: the budget of a slot is its client's pinned-memory limit (the card's
    memory / replicas), not a share of the GPU. Above ceiling x that limit the headroom the tuning promised
    is gone, and at the limit the client's allocations fail (MPS enforces it)."""
    limit = pool.plan.client_memory_limit_mib
    if limit is None or not pool.plan.shared:
        return None
    ceiling = pool.plan.shared[0].tuning.ceiling
    budget = Fraction(str(ceiling)) * limit
    if per_slot_mib <= budget:
        return None
    shown = int(per_slot_mib) if float(per_slot_mib).is_integer() else round(per_slot_mib, 1)
    return Finding(
        "memory-budget",
        "error",
        where,
        f"pool {pool.name}: {shown} MiB per MPS client ({how}, {exporter}), above the ceiling {ceiling:g} x the "
        f"per-client limit {limit} MiB (= {int(budget)} MiB): the headroom the tuning promised is gone, and at "
        f"{limit} MiB the client's allocations fail (`gpushare measure`, then `pulumi preview`)",
    )
