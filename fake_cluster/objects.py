"""Kubernetes objects as a real cluster holds them, built the way the API server and the controllers
leave them: nodes with capacity and conditions, DaemonSets with their rollout status, the pods they own
(the template's spec, `ownerReferences`, a running status), TKE's own device-plugin DaemonSet as the
seed found it with gpushare's server-side apply patch merged in, and a GPU Deployment with its ReplicaSet
and pods. Field names and shapes follow the Kubernetes API reference (core/v1, apps/v1); TKE's DaemonSet
follows the seed's section "现状" and shared/reference/tke-provider.md.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]
NOW = datetime.now(UTC)
TKE_DS = "nvidia-device-plugin-daemonset"
# TKE's DaemonSet as the seed found it: `--mig-strategy=single`, no --config-file, no ConfigMap volume,
# nodeSelector nvidia-device-enable=enable (seed section "现状"; shared/reference/tke-provider.md).
TKE_ORIGINAL_ARGS = ["--mig-strategy=single", "--fail-on-init-error=false", "--pass-device-specs=true"]


# A running pod's conditions in the order the kubelet writes them (Kubernetes 1.29+, as `kubectl get pod
# -o yaml` shows them; PodReadyToStartContainers is beta and on by default from 1.29): Ready is one of
# five, so a check must look for it, not read the first or require every one to be Ready.
RUNNING_POD_CONDITIONS: tuple[Obj, ...] = tuple(
    {"type": kind, "status": "True"}
    for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
)


def stamp(delta: timedelta = timedelta(days=30)) -> str:
    return (NOW - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(base: Any, patch: Any, key: str | None = None) -> Any:
    """Server-side apply's merge for the fields the patch touches: maps merge but for a pod's nodeSelector
    (an atomic map: replaced whole), lists of named items (containers, volumes) and volumeMounts merge by
    key, other lists (args) are replaced (kube-apiserver does so: tests/test_engine_tke_plugin.py)."""
    if isinstance(base, dict) and isinstance(patch, dict) and key != "nodeSelector":
        merged = dict(base)
        for k, v in patch.items():
            merged[k] = merge_patch(base.get(k), v, k) if k in base else copy.deepcopy(v)
        return merged
    list_key = {"containers": "name", "volumes": "name", "volumeMounts": "mountPath"}.get(key or "")
    if isinstance(base, list) and isinstance(patch, list) and list_key:
        merged_list = [copy.deepcopy(item) for item in base]
        for item in patch:
            at = next((i for i, b in enumerate(merged_list) if b.get(list_key) == item.get(list_key)), None)
            if at is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[at] = merge_patch(merged_list[at], item)
        return merged_list
    return copy.deepcopy(patch)


def owner(kind: str, obj: Obj) -> list[Obj]:
    api = "apps/v1"
    return [
        {
            "apiVersion": api,
            "kind": kind,
            "name": obj["metadata"]["name"],
            "uid": f"uid-{kind}-{obj['metadata']['name']}",
            "controller": True,
        }
    ]


def with_uid(kind: str, obj: Obj) -> Obj:
    obj["metadata"]["uid"] = f"uid-{kind}-{obj['metadata']['name']}"
    return obj


def node(name: str, labels: dict[str, str], gpus: dict[str, str]) -> Obj:
    resources = {"cpu": "31600m", "memory": "120Gi", "pods": "61", **gpus}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
        "spec": {"podCIDR": "172.16.0.0/26"},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def plugin_pod(daemonset: Obj, node_name: str, suffix: str) -> Obj:
    template = daemonset["spec"]["template"]
    containers = template["spec"]["containers"]
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"{daemonset['metadata']['name']}-{suffix}",
            "namespace": daemonset["metadata"]["namespace"],
            "labels": dict(template["metadata"]["labels"]),
            "annotations": dict(template["metadata"].get("annotations") or {}),
            "ownerReferences": owner("DaemonSet", daemonset),
            "creationTimestamp": stamp(timedelta(days=2)),
        },
        "spec": {**copy.deepcopy(template["spec"]), "nodeName": node_name},
        "status": {
            "phase": "Running",
            "conditions": [dict(c) for c in RUNNING_POD_CONDITIONS],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", "plugin"),
                    "imageID": "sha256:0",
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": stamp(timedelta(days=2))}},
                }
                for c in containers
            ],
        },
    }


def daemonset_status(daemonset: Obj, count: int) -> Obj:
    daemonset["status"] = {
        "currentNumberScheduled": count,
        "desiredNumberScheduled": count,
        "numberMisscheduled": 0,
        "numberReady": count,
        "updatedNumberScheduled": count,
        "observedGeneration": 2,
    }
    return daemonset


def gpu_workload(pods_running: list[str], revision: str = "2") -> list[Obj]:
    """The seed's NLP service: a Deployment with one replica per name in `pods_running` (the node each
    runs on; the seed's had 2), one GPU each, rollout complete."""
    labels = {"app": "nlp-infer"}
    replicas = len(pods_running)
    spec: Obj = {
        "containers": [
            {"name": "infer", "image": "nlp-infer:v2", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ]
    }
    template: Obj = {"metadata": {"labels": labels}, "spec": spec}
    deployment = with_uid(
        "Deployment",
        {
            "kind": "Deployment",
            "metadata": {
                "name": "nlp-infer",
                "namespace": "nlp",
                "annotations": {"deployment.kubernetes.io/revision": revision},
            },
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
            "status": {
                "replicas": replicas,
                "updatedReplicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                ],
            },
        },
    )
    replica_set = with_uid(
        "ReplicaSet",
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": "nlp-infer-7d4b9c",
                "namespace": "nlp",
                "annotations": {"deployment.kubernetes.io/revision": revision},
                "ownerReferences": owner("Deployment", deployment),
            },
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
        },
    )
    pods = [
        {
            "kind": "Pod",
            "metadata": {
                "name": f"nlp-infer-7d4b9c-{index}",
                "namespace": "nlp",
                "labels": labels,
                "ownerReferences": owner("ReplicaSet", replica_set),
            },
            "spec": {**copy.deepcopy(spec), "nodeName": node_name},
            "status": {"phase": "Running"},
        }
        for index, node_name in enumerate(pods_running)
    ]
    return [deployment, replica_set, *pods]


def tke_daemonset(patch: Obj | None) -> Obj:
    """TKE's own DaemonSet as the seed found it, with gpushare's server-side apply patch applied."""
    original = {
        "kind": "DaemonSet",
        "metadata": {
            "name": TKE_DS,
            "namespace": "kube-system",
            "labels": {"k8s-app": "nvidia-device-plugin"},
        },
        "spec": {
            "selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
            "template": {
                "metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                "spec": {
                    "nodeSelector": {"nvidia-device-enable": "enable"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5",
                            "args": list(TKE_ORIGINAL_ARGS),
                            "volumeMounts": [
                                {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}
                    ],
                },
            },
        },
    }
    # The server-side apply patch sets its spec and gpushare's own annotations (the stack and cluster it
    # belongs to); Pulumi's `pulumi.com/` directives are the provider's, not the object's.
    annotations = {
        k: v
        for k, v in ((patch or {}).get("metadata", {}).get("annotations") or {}).items()
        if k.startswith("gpushare.io/")
    }
    merged = (
        {"spec": patch["spec"], **({"metadata": {"annotations": annotations}} if annotations else {})}
        if patch
        else {}
    )
    patched = merge_patch(original, merged) if patch else original
    return daemonset_status(with_uid("DaemonSet", patched), 1)


def split_patch(manifests: list[Obj]) -> tuple[list[Obj], Obj | None]:
    """The render's objects, and its patch of TKE's DaemonSet (a patch has no selector of its own)."""
    patches = [m for m in manifests if m["kind"] == "DaemonSet" and "selector" not in m.get("spec", {})]
    return [m for m in manifests if m not in patches], (patches[0] if patches else None)
