"""GPU workloads on the seed's prod cluster (L20 node: 8 slots, T4 node: 3), in the states `verify`'s
workload checks look for, as the controllers leave them: a Deployment, the ReplicaSet it owns (revision
annotation, ownerReferences) and its pods, running on a node or Pending with the scheduler's
PodScheduled condition (apps/v1 and core/v1 field shapes, as in objects.py's `gpu_workload`).

- `pending_for_slots`: 8 replicas of a one-slot service on the L20 pool, whose 8 slots the seed's NLP
  service already shares: 7 run, 1 waits (it fits the pool at nodes.max; the slot is taken);
- `over_replicated`: 12 replicas on the same 8 slots: 8 run, 4 wait for ever;
- `stuck_surge`: 3 replicas on the T4 pool's 3 slots, in the middle of a rolling update with Kubernetes'
  defaults (maxSurge 1, maxUnavailable 0 at 3 replicas): the surge pod waits;
- `stray_pod`: a GPU node of no pool (TKE's own GPU node, no `gpushare.io/pool`) running a GPU pod.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fake_cluster.objects import Obj, node, owner, stamp, with_uid

NAMESPACE = "team-a"
L20_NODE, T4_NODE, STRAY_NODE = "10.0.1.11", "10.0.1.12", "10.0.2.21"
SCHEDULER = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."
REVISION = "deployment.kubernetes.io/revision"


def _template(app: str, pool: str | None, image: str) -> Obj:
    spec: dict[str, Any] = {
        "containers": [{"name": app, "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    }
    if pool:
        spec["nodeSelector"] = {"gpushare.io/pool": pool}
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def _pod(replica_set: Obj, index: int, node_name: str | None) -> Obj:
    template = replica_set["spec"]["template"]
    status: Obj = (
        {"phase": "Running"}
        if node_name
        else {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": SCHEDULER}
            ],
        }
    )
    spec = {**template["spec"], **({"nodeName": node_name} if node_name else {})}
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"{replica_set['metadata']['name']}-{index}",
            "namespace": NAMESPACE,
            "uid": f"uid-pod-{replica_set['metadata']['name']}-{index}",
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": owner("ReplicaSet", replica_set),
            # A day and more: `age` then shows days and hours, which a slow test run does not change.
            "creationTimestamp": stamp(timedelta(days=1, hours=2)),
        },
        "spec": spec,
        "status": status,
    }


def _replica_set(deployment: Obj, suffix: str, revision: str, replicas: int, ready: int) -> Obj:
    return with_uid(
        "ReplicaSet",
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{deployment['metadata']['name']}-{suffix}",
                "namespace": NAMESPACE,
                "annotations": {REVISION: revision},
                "ownerReferences": owner("Deployment", deployment),
                "creationTimestamp": stamp(timedelta(hours=2)),
            },
            "spec": {
                "replicas": replicas,
                "selector": deployment["spec"]["selector"],
                "template": deployment["spec"]["template"],
            },
            "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready},
        },
    )


def _deployment(name: str, pool: str, replicas: int, status: Obj, revision: str = "1") -> Obj:
    return with_uid(
        "Deployment",
        {
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "annotations": {REVISION: revision}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": _template(name, pool, f"registry.example/{name}:{revision}"),
            },
            "status": status,
        },
    )


def _steady(name: str, pool: str, node_name: str, replicas: int, running: int) -> list[Obj]:
    """A Deployment whose pods run on `node_name` as far as slots go: `running` run, the rest wait."""
    status = {
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": running,
        "availableReplicas": running,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}],
    }
    deployment = _deployment(name, pool, replicas, status)
    replica_set = _replica_set(deployment, "6c9f", "1", replicas, running)
    pods = [_pod(replica_set, i, node_name if i < running else None) for i in range(replicas)]
    return [deployment, replica_set, *pods]


def pending_for_slots() -> list[Obj]:
    return _steady("chat", "l20", L20_NODE, replicas=8, running=7)


def over_replicated() -> list[Obj]:
    return _steady("chat", "l20", L20_NODE, replicas=12, running=8)


def stuck_surge() -> list[Obj]:
    """Revision 2 of a 3-replica service on the T4 pool: its one surge pod waits, the 3 old ones run."""
    status = {
        "replicas": 4,
        "updatedReplicas": 1,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}],
    }
    deployment = _deployment("ocr", "t4", 3, status, revision="2")
    old = _replica_set(deployment, "5b7d", "1", 3, 3)
    new = _replica_set(deployment, "7e2a", "2", 1, 0)
    return [
        deployment,
        old,
        new,
        *(_pod(old, i, T4_NODE) for i in range(3)),
        _pod(new, 0, None),
    ]


def stray_pod() -> list[Obj]:
    """TKE's own GPU node outside every pool (its switch label only) and a notebook pod on it."""
    stray = node(STRAY_NODE, {"nvidia-device-enable": "enable"}, {"nvidia.com/gpu": "1"})
    pod = {
        "kind": "Pod",
        "metadata": {"name": "notebook", "namespace": NAMESPACE, "uid": "uid-pod-notebook"},
        "spec": {
            "nodeName": STRAY_NODE,
            "containers": [
                {
                    "name": "lab",
                    "image": "registry.example/lab:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    return [stray, pod]
