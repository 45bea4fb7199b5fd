"""`verify`'s checks of the workloads waiting for GPUs: GPU-Pending pods and the rollouts they freeze."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpushare.verify.expectations import ObjectRef
from gpushare.verify.objects import _annotations, _dig, _name, _pod_ref, _since
from gpushare.verify.report import (
    GPU_PENDING_PODS,
    ROLLOUT_STUCK,
    ClusterSnapshot,
    Finding,
    K8sObject,
)
from gpushare.verify.workload_capacity import owner_of

_INSUFFICIENT_GPU = "Insufficient nvidia.com/"
_REVISION = "deployment.kubernetes.io/revision"


def _gpu_wait_reason(pod: K8sObject, events: Sequence[K8sObject]) -> str | None:
    for condition in _dig(pod, "status", "conditions") or []:
        message = condition.get("message") or ""
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and _INSUFFICIENT_GPU in message
        ):
            return str(message)
    uid = _dig(pod, "metadata", "uid")
    namespace = _dig(pod, "metadata", "namespace")
    for event in sorted(events, key=lambda e: str(e.get("lastTimestamp") or ""), reverse=True):
        involved = event.get("involvedObject") or {}
        same = (
            involved.get("uid") == uid
            if involved.get("uid")
            else (involved.get("name") == _name(pod) and involved.get("namespace") == namespace)
        )
        if same and involved.get("kind") == "Pod" and _INSUFFICIENT_GPU in (event.get("message") or ""):
            return str(event.get("message"))
    return None


def gpu_pending_pods(pods: Sequence[K8sObject], events: Sequence[K8sObject]) -> list[tuple[K8sObject, str]]:
    """(pod, scheduler message) of every unscheduled Pending pod that waits for an `nvidia.com/` resource."""
    found = []
    for pod in pods:
        if _dig(pod, "status", "phase") != "Pending" or _dig(pod, "spec", "nodeName"):
            continue
        reason = _gpu_wait_reason(pod, events)
        if reason is not None:
            found.append((pod, reason))
    return found


def _pending_findings(
    pending: Sequence[tuple[K8sObject, str]], snapshot: ClusterSnapshot
) -> Iterator[Finding]:
    for pod, reason in pending:
        waited = _since(snapshot, _dig(pod, "metadata", "creationTimestamp")) or "an unknown time"
        owner = owner_of(pod, snapshot)
        of = f"; it belongs to {owner}" if owner else ""
        yield Finding(
            GPU_PENDING_PODS,
            "error",
            _pod_ref(pod),
            f"Pending for {waited}: {reason.strip()}{of} — add slots (a pool's nodes or replicas) or free them",
        )


def _owner(obj: K8sObject, kinds: tuple[str, ...]) -> ObjectRef | None:
    namespace = str(_dig(obj, "metadata", "namespace"))
    for owner in _dig(obj, "metadata", "ownerReferences") or []:
        if owner.get("kind") in kinds and owner.get("controller", True):
            return ObjectRef(str(owner["kind"]), namespace, str(owner["name"]))
    return None


def _condition(obj: K8sObject, kind: str) -> K8sObject | None:
    return next((c for c in _dig(obj, "status", "conditions") or [] if c.get("type") == kind), None)


def _deployment_stuck(
    deployment: K8sObject, replica_set: K8sObject, pod: K8sObject, snapshot: ClusterSnapshot
) -> str | None:
    progressing = _condition(deployment, "Progressing")
    status = deployment.get("status") or {}
    revision = _annotations(deployment).get(_REVISION)
    new_rs = revision is not None and _annotations(replica_set).get(_REVISION) == revision
    old_pods_left = int(status.get("replicas") or 0) > int(status.get("updatedReplicas") or 0)
    deadline = progressing is not None and progressing.get("status") == "False"
    if not deadline and not (new_rs and old_pods_left):
        return None
    # How long the rollout has been going: since its new ReplicaSet was created.
    since = _dig(replica_set, "metadata", "creationTimestamp")
    ready = int(_dig(replica_set, "status", "readyReplicas") or 0)
    wanted = int(_dig(replica_set, "spec", "replicas") or 0)
    why = f" ({progressing.get('reason')})" if deadline and progressing else ""
    frozen = _since(snapshot, since)
    old = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
    return (
        f"rollout to revision {revision or '?'} has not progressed{f' for {frozen}' if frozen else ''}{why}: "
        f"ReplicaSet {_name(replica_set)} has {ready}/{wanted} ready, its pod {_name(pod)} waits for a GPU"
        + (f", and {old} old pod(s) keep running" if old > 0 else "")
    )


def _statefulset_stuck(statefulset: K8sObject, pod: K8sObject) -> str | None:
    status = statefulset.get("status") or {}
    if status.get("updateRevision") and status.get("updateRevision") != status.get("currentRevision"):
        return (
            f"rolling update to {status['updateRevision']} has not finished: pod {_name(pod)} waits for a GPU, "
            f"{int(status.get('updatedReplicas') or 0)}/{int(_dig(statefulset, 'spec', 'replicas') or 0)} updated"
        )
    return None


def _rollout_findings(
    pending: Sequence[tuple[K8sObject, str]], snapshot: ClusterSnapshot
) -> Iterator[Finding]:
    seen: set[ObjectRef] = set()
    for pod, _ in pending:
        owner = _owner(pod, ("ReplicaSet", "StatefulSet"))
        if owner is None:
            continue
        owner_object = snapshot.objects.get(owner)
        if owner_object is None:
            continue
        message: str | None
        if owner.kind == "ReplicaSet":
            workload = _owner(owner_object, ("Deployment",))
            deployment = snapshot.objects.get(workload) if workload else None
            if workload is None or deployment is None:
                continue
            message = _deployment_stuck(deployment, owner_object, pod, snapshot)
        else:
            workload = owner
            message = _statefulset_stuck(owner_object, pod)
        if message is None or workload in seen:
            continue
        seen.add(workload)
        yield Finding(
            ROLLOUT_STUCK,
            "error",
            str(workload),
            f"{message} — the release is frozen behind a GPU-Pending pod; give it a slot and it continues",
        )
