"""`verify`'s checks of the nodes: pools, slots, labels, MIG state, nodes in no pool."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import kube_names
from gpushare.verify.expectations import (
    FALLBACK_KEY,
    MIG_RESOURCE_PREFIX,
    ClusterExpectation,
    PoolExpectation,
)
from gpushare.verify.objects import _count, _dig, _labels, _name
from gpushare.verify.report import (
    MIG_CONFIG_STATE,
    NODE_IN_NO_POOL,
    NODE_LABELS,
    SLOTS_ALLOCATABLE,
    ClusterSnapshot,
    Finding,
    K8sObject,
)


def _pool_nodes(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> dict[str, list[K8sObject]]:
    by_pool: dict[str, list[K8sObject]] = {p.name: [] for p in expected.pools}
    for node in snapshot.nodes:
        pool = _labels(node).get(kube_names.LABEL_POOL)
        if pool in by_pool:
            by_pool[pool].append(node)
    return by_pool


def _describe_plan(pool: PoolExpectation, resource: str) -> str:
    plan = pool.plan
    gpus = f"{plan.pool.gpus_per_node_effective} GPU(s)"
    if pool.mig is None:
        return f"{plan.slots_per_gpu} replicas x {gpus}"
    layout = pool.mig.mig_layout
    if not resource.startswith(MIG_RESOURCE_PREFIX):
        return f"{sum(layout.values())} MIG instances x {gpus}"
    instances = sum(n for p, n in layout.items() if plan.gpu.mig_profile(p).resource_name == resource)
    replicas = pool.per_node_resources[resource] // max(1, instances * plan.pool.gpus_per_node_effective)
    return f"{instances} instances x {replicas} replicas x {gpus}"


def _slot_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    allocatable = _dig(node, "status", "allocatable") or {}
    for resource, planned in pool.per_node_resources.items():
        have = _count(allocatable.get(resource, 0))
        if have != planned:
            yield Finding(
                SLOTS_ALLOCATABLE,
                "error",
                f"node/{_name(node)}",
                f"pool {pool.name}: allocatable {resource} is {have}, the plan gives {planned} "
                f"({_describe_plan(pool, resource)}); the plugin on this node does not serve the pool's config "
                "(see the plugin findings, or `kubectl describe node`)",
            )


def _label_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    labels = _labels(node)
    for key, value in pool.node_labels.items():
        if labels.get(key) != value:
            now = f"it has {key}={labels[key]}" if key in labels else "it has none"
            yield Finding(
                NODE_LABELS,
                "error",
                f"node/{_name(node)}",
                f"pool {pool.name}: needs label {key}={value} ({now}); the node pool sets it on new nodes "
                f"(`pulumi up`), a node that lost it needs `kubectl label node {_name(node)} {key}={value} --overwrite`",
            )


def _mig_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    if pool.mig is None:
        return
    state = _labels(node).get(kube_names.LABEL_MIG_CONFIG_STATE)
    if state is not None and state != "success":
        yield Finding(
            MIG_CONFIG_STATE,
            "error",
            f"node/{_name(node)}",
            f"pool {pool.name}: {kube_names.LABEL_MIG_CONFIG_STATE}={state} for {kube_names.LABEL_MIG_CONFIG}="
            f"{pool.mig.config_name}; the GPUs are not partitioned as planned (the MIG manager's or the "
            "pre-start script's log on the node says why)",
        )
    allocatable = _dig(node, "status", "allocatable") or {}
    unplanned = sorted(
        r for r in allocatable if r.startswith(MIG_RESOURCE_PREFIX) and r not in pool.per_node_resources
    )
    if unplanned:
        planned = ", ".join(pool.per_node_resources) or "none"
        yield Finding(
            MIG_CONFIG_STATE,
            "error",
            f"node/{_name(node)}",
            f"pool {pool.name}: advertises {', '.join(unplanned)}, which layout {pool.mig.config_name} "
            f"does not have (planned: {planned}); the node's MIG partition differs from the layout",
        )


def _is_gpu_node(node: K8sObject) -> bool:
    for field_name in ("capacity", "allocatable"):
        resources = _dig(node, "status", field_name) or {}
        if any(r.startswith("nvidia.com/") and _count(v) > 0 for r, v in resources.items()):
            return True
    return kube_names.LABEL_DEVICE_ENABLE in _labels(node)


def _node_warnings(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> Iterator[Finding]:
    pools = {p.name for p in expected.pools}
    for node in snapshot.nodes:
        pool = _labels(node).get(kube_names.LABEL_POOL)
        if pool is not None and pool not in pools:
            yield Finding(
                NODE_IN_NO_POOL,
                "warning",
                f"node/{_name(node)}",
                f"labelled {kube_names.LABEL_POOL}={pool}, a pool stack {expected.stack} does not have",
            )
        elif pool is None and _is_gpu_node(node):
            # Outside daemonsets mode a config-manager picks a key per node; without a label it is `any`.
            served = (
                f"; its plugin serves it the fallback key `{FALLBACK_KEY}`: {expected.fallback}"
                if expected.mode != "daemonsets"
                else ""
            )
            yield Finding(
                NODE_IN_NO_POOL,
                "warning",
                f"node/{_name(node)}",
                f"a GPU node in no gpushare pool (no {kube_names.LABEL_POOL} label): its GPUs are not "
                f"planned, and whatever plugin runs there is not checked{served}",
            )
