"""A TKE qGPU node as the add-on leaves it, and the ways `verify` sees it broken.

What is known of a qGPU node (shared/reference/tke-qgpu.md): the add-on's `kube-system/qgpu-manager`
DaemonSet runs on nodes labelled `qgpu-device-enable=enable` (VERIFIED, Tencent's qGPU pages; 300M memory
and 0.2 CPU requested), the node advertises `tke.cloud.tencent.com/qgpu-core` 100 and
`tke.cloud.tencent.com/qgpu-memory` in GiB per card (a T4 shows 14, VERIFIED; an L20 showed 44 in a
third-party demo), and add-on v1.1.1 on labels it `tke.cloud.tencent.com/qgpu.version` (its kernel module
v3.0.5, VERIFIED 457/117759). The manager's image reference is a stand-in: Tencent publishes none.

- `healthy`: the node, the manager DaemonSet and its Ready pod on the node;
- `missing_allocatable`: the node advertises no qGPU resource (the module did not load);
- `stray_nvidia_gpu`: the node also advertises `nvidia.com/gpu` (an NVIDIA plugin runs there);
- `missing_manager_pod`: the manager has no pod on the node.
Standard library only, like the rest of `fake_cluster`.
"""

from __future__ import annotations

import copy

from fake_cluster.objects import Obj, daemonset_status, node, plugin_pod, with_uid

QGPU_NODE = "10.0.1.21"
MANAGER = "qgpu-manager"
MANAGER_NAMESPACE = "kube-system"
MANAGER_POD_SUFFIX = "k7x2d"
CORE = "tke.cloud.tencent.com/qgpu-core"
MEMORY = "tke.cloud.tencent.com/qgpu-memory"
VERSION_LABEL = "tke.cloud.tencent.com/qgpu.version"
MODULE_VERSION = "3.0.5"
_SELECTOR = {"k8s-app": MANAGER}


def manager_daemonset() -> Obj:
    return daemonset_status(
        with_uid(
            "DaemonSet",
            {
                "kind": "DaemonSet",
                "metadata": {"name": MANAGER, "namespace": MANAGER_NAMESPACE},
                "spec": {
                    "selector": {"matchLabels": dict(_SELECTOR)},
                    "template": {
                        "metadata": {"labels": dict(_SELECTOR)},
                        "spec": {
                            "nodeSelector": {"qgpu-device-enable": "enable"},
                            "containers": [
                                {
                                    "name": MANAGER,
                                    "image": "ccr.ccs.tencentyun.com/tkeimages/qgpu-manager:stand-in",
                                    "securityContext": {"privileged": True},
                                    "resources": {"requests": {"cpu": "200m", "memory": "300M"}},
                                }
                            ],
                        },
                    },
                },
            },
        ),
        1,
    )


def qgpu_node(labels: dict[str, str], memory_gib: int, cards: int = 1) -> Obj:
    """A qGPU node: the pool's labels, the add-on's version label, 100 core and `memory_gib` a card."""
    return node(
        QGPU_NODE,
        {**labels, VERSION_LABEL: MODULE_VERSION},
        {CORE: str(100 * cards), MEMORY: str(memory_gib * cards)},
    )


def healthy(pool_labels: dict[str, str], memory_gib: int) -> list[Obj]:
    manager = manager_daemonset()
    return [manager, plugin_pod(manager, QGPU_NODE, MANAGER_POD_SUFFIX), qgpu_node(pool_labels, memory_gib)]


def _node_of(objects: list[Obj]) -> Obj:
    return next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == QGPU_NODE)


def missing_allocatable(objects: list[Obj]) -> list[Obj]:
    changed = copy.deepcopy(objects)
    status = _node_of(changed)["status"]
    for field in ("capacity", "allocatable"):
        status[field] = {k: v for k, v in status[field].items() if k not in (CORE, MEMORY)}
    return changed


def stray_nvidia_gpu(objects: list[Obj], count: int = 1) -> list[Obj]:
    changed = copy.deepcopy(objects)
    status = _node_of(changed)["status"]
    for field in ("capacity", "allocatable"):
        status[field] = {**status[field], "nvidia.com/gpu": str(count)}
    return changed


def missing_manager_pod(objects: list[Obj]) -> list[Obj]:
    pod = f"{MANAGER}-{MANAGER_POD_SUFFIX}"
    return [o for o in copy.deepcopy(objects) if not (o["kind"] == "Pod" and o["metadata"]["name"] == pod)]
