"""`verify`'s checks of the live GPU workloads against the plan, with the policy pack's judge
(gpushare/workload_fit.py) over the objects as the API server returns them:

- `workload-over-slots` (error): a Deployment or StatefulSet whose replicas x slots per pod exceed the slots
  its pools have at nodes.max: the pods beyond them wait for ever;
- `rollout-stuck-on-surge` (error while a rollout runs, warning before the next): a Deployment whose
  rolling update needs a surge pod on a pool with no free slot and may remove no old pod first;
- `gpu-pod-outside-pools` (warning): a pod holding an `nvidia.com/` resource on a node of no gpushare pool
  (no `gpushare.io/pool` label, or one naming a pool the stack lacks): capacity the plan does not count.

`gpu-pending-pods` names the workload that owns each pod (`owner_of`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from gpushare import kube_names, workload_fit
from gpushare.plan import build_plan
from gpushare.pool_offers import PoolOffer, pool_offers
from gpushare.stack.model import StackConfig
from gpushare.verify.objects import _dig, _labels, _name, _pod_ref
from gpushare.verify.report import ClusterSnapshot, Denial, Finding, K8sObject
from gpushare.wire_numbers import whole_number

WORKLOAD_OVER_SLOTS: Final = "workload-over-slots"
ROLLOUT_STUCK_ON_SURGE: Final = "rollout-stuck-on-surge"
GPU_POD_OUTSIDE_POOLS: Final = "gpu-pod-outside-pools"


@dataclass(frozen=True)
class WorkloadSnapshot:
    """What the workload checks read besides the snapshot (gpushare/verify/workload_reader.py)."""

    bound_pods: tuple[K8sObject, ...]
    """Pods with a node (`spec.nodeName` set), of every namespace."""
    deployments: tuple[K8sObject, ...]
    statefulsets: tuple[K8sObject, ...]
    denied: tuple[Denial, ...] = ()


def _workload_ref(kind: str, obj: Mapping[str, object]) -> str:
    return f"{kind.lower()}/{_dig(obj, 'metadata', 'namespace')}/{_name(obj)}"


def _rolling_out(deployment: Mapping[str, object]) -> bool:
    """A rollout in progress: fewer updated replicas than wanted, or old ones still running."""
    wanted = whole_number(_dig(deployment, "spec", "replicas"))
    status = _dig(deployment, "status") or {}
    updated = whole_number(_dig(status, "updatedReplicas")) or 0
    total = whole_number(_dig(status, "replicas")) or 0
    return (wanted if wanted is not None else 1) > updated or total > updated


def capacity_findings(
    offers: Sequence[PoolOffer], deployments: Sequence[K8sObject], statefulsets: Sequence[K8sObject]
) -> Iterator[Finding]:
    for kind, objects in (("Deployment", deployments), ("StatefulSet", statefulsets)):
        for obj in sorted(objects, key=lambda o: (str(_dig(o, "metadata", "namespace")), _name(o))):
            workload = workload_fit.workload_of(kind, obj)
            if workload is None:
                continue
            for found in workload_fit.judge(workload, offers):
                if found.kind == "replicas":
                    yield Finding(WORKLOAD_OVER_SLOTS, "error", _workload_ref(kind, obj), found.message)
                elif found.kind == "surge":
                    if _rolling_out(obj):
                        message = f"{found.message} A rollout is under way and waits for that slot now."
                        yield Finding(ROLLOUT_STUCK_ON_SURGE, "error", _workload_ref(kind, obj), message)
                    else:
                        message = f"{found.message} The next rollout will stop there."
                        yield Finding(ROLLOUT_STUCK_ON_SURGE, "warning", _workload_ref(kind, obj), message)


def _gpu_resources(pod: Mapping[str, object]) -> list[str]:
    workload = workload_fit.workload_of("Pod", pod)
    return list(workload.gpu_resources) if workload is not None else []


def owner_of(pod: Mapping[str, object], snapshot: ClusterSnapshot) -> str | None:
    """The workload a pod belongs to: its controller, and a ReplicaSet's Deployment where the snapshot
    holds the ReplicaSet."""
    namespace = str(_dig(pod, "metadata", "namespace"))
    for owner in _dig(pod, "metadata", "ownerReferences") or []:
        if not isinstance(owner, Mapping) or not owner.get("controller", True):
            continue
        kind, name = str(owner.get("kind")), str(owner.get("name"))
        if kind == "ReplicaSet":
            for ref, obj in snapshot.objects.items():
                if (ref.kind, ref.namespace, ref.name) == ("ReplicaSet", namespace, name):
                    for grand in _dig(obj, "metadata", "ownerReferences") or []:
                        if isinstance(grand, Mapping) and grand.get("kind") == "Deployment":
                            return f"Deployment {namespace}/{grand.get('name')}"
        return f"{kind} {namespace}/{name}"
    return None


def stray_pod_findings(
    offers: Sequence[PoolOffer], pods: Sequence[K8sObject], snapshot: ClusterSnapshot
) -> Iterator[Finding]:
    pools = {o.pool for o in offers}
    node_pool = {_name(n): _labels(n).get(kube_names.LABEL_POOL) for n in snapshot.nodes}
    for pod in sorted(pods, key=_pod_ref):
        resources = _gpu_resources(pod)
        node = _dig(pod, "spec", "nodeName")
        if not resources or not node or _dig(pod, "status", "phase") in ("Succeeded", "Failed"):
            continue
        pool = node_pool.get(str(node))
        if pool in pools:
            continue
        where = (
            f"names pool {pool!r}, which the stack lacks" if pool else f"has no {kube_names.LABEL_POOL} label"
        )
        owner = owner_of(pod, snapshot)
        of = f" (of {owner})" if owner else ""
        yield Finding(
            GPU_POD_OUTSIDE_POOLS,
            "warning",
            _pod_ref(pod),
            f"holds {', '.join(resources)} on node {node}, which {where}: capacity and memory the plan does "
            f"not size{of}. Select a pool: nodeSelector {kube_names.LABEL_POOL}: "
            f"<{'|'.join(sorted(pools))}>.",
        )


def workload_findings(
    stack: StackConfig, snapshot: ClusterSnapshot, workloads: WorkloadSnapshot
) -> tuple[ClusterSnapshot, list[Finding]]:
    """The snapshot with what the workload reads were denied merged in (so the verdict says PARTIAL), and
    the workload checks' findings."""
    offers = pool_offers(build_plan(stack))
    denied: dict[tuple[str, str, str | None], Denial] = {}
    for denial in (*snapshot.denied, *workloads.denied):
        key = (denial.verb, denial.resource, denial.namespace)
        known = denied.get(key)
        checks = (*known.checks, *denial.checks) if known else denial.checks
        denied[key] = replace(denial, checks=tuple(dict.fromkeys(checks)))
    merged = replace(snapshot, denied=tuple(denied.values()))
    found = [
        *capacity_findings(offers, workloads.deployments, workloads.statefulsets),
        *stray_pod_findings(offers, workloads.bound_pods, merged),
    ]
    return merged, found
