"""Synthetic live clusters for `verify`'s benchmark: N GPU nodes running what the prod stack renders.

The objects come from the program's own offline run of `Pulumi.prod.yaml` (its ConfigMap, its L20
DaemonSet, its patch of TKE's DaemonSet for the T4 pool, the node pools' labels), put together the way
tests/test_verify.py's `prod_cluster` does, with `fake_cluster.objects`, at any size:

* GPU nodes: the first half (rounded up) in the L20 pool with 8 slots each, the rest in the T4 pool with
  3 (the seed's tuned counts), so both of the stack's pools hold nodes: at least 2 GPU nodes;
* CPU-only nodes: 3 per GPU node (the seed's cluster had 6 beside its 2 GPU nodes);
* pods: one device-plugin pod per GPU node (gpushare's DaemonSet on L20 nodes, TKE's adopted one on T4
  nodes), one replica of the seed's GPU Deployment per GPU node, one of TKE's GPU exporter per GPU node
  serving its GPU's memory as `prod_cluster` serves the seed's (L20 4608 of 46068 MiB used, T4 4401 of
  15360: each holds its one pod's measurement or less), and one kube-proxy pod per node;
* DaemonSets: the two plugins (one per GPU model, as the stack says) and kube-proxy, each with a rollout
  status that counts its nodes.

So a cluster of N GPU nodes holds 4N nodes, 7N pods and 3 DaemonSets (`ClusterShape`; the exporter's
own DaemonSet is not served, as in `prod_cluster`); `verify` finds it conforming, memory budget
included, which it reads from each GPU node's exporter through the pod proxy.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from fake_cluster.gpu_pages import Gpu, exporter_pod, page_object, tke_page
from fake_cluster.objects import (
    Obj,
    daemonset_status,
    gpu_workload,
    node,
    plugin_pod,
    split_patch,
    tke_daemonset,
    with_uid,
)
from gpushare import catalog
from gpushare.offline.manifests import extract_manifests
from gpushare.offline.render import NODE_POOL_TYPE, run_stack
from gpushare.plan import build_plan
from gpushare.stack.loading import load_stack_file

STACK: Final = "prod"
L20_POOL: Final = "gpushare-l20"
T4_POOL: Final = "gpushare-t4"
L20_DAEMONSET: Final = "nvidia-device-plugin-daemonset-l20"
CPU_NODES_PER_GPU_NODE: Final = 3
# Each GPU as the catalog names and sizes it, and what its one pod uses (the seed's measurements, within
# the tuned budget: fake_cluster.gpu_pages.seed_gpus's figures).
L20_GPU: Final = (catalog.gpu("L20").product, catalog.gpu("L20").memory_mib, 4608.0)
T4_GPU: Final = (catalog.gpu("T4").product, catalog.gpu("T4").memory_mib, 4401.0)
KUBE_PROXY_IMAGE: Final = "ccr.ccs.tencentyun.com/library/kube-proxy:v1.30.0"


@dataclass(frozen=True)
class ClusterShape:
    """How many objects of each kind a synthetic cluster of `gpu_nodes` GPU nodes holds."""

    gpu_nodes: int

    def __post_init__(self) -> None:
        if self.gpu_nodes < 2:
            raise ValueError("a synthetic cluster needs at least 2 GPU nodes (one per pool of the stack)")

    @property
    def l20_nodes(self) -> int:
        return (self.gpu_nodes + 1) // 2

    @property
    def t4_nodes(self) -> int:
        return self.gpu_nodes // 2

    @property
    def cpu_nodes(self) -> int:
        return CPU_NODES_PER_GPU_NODE * self.gpu_nodes

    @property
    def nodes(self) -> int:
        return self.gpu_nodes + self.cpu_nodes

    @property
    def pods(self) -> int:
        """A plugin, a workload and an exporter pod per GPU node, a kube-proxy pod per node."""
        return 3 * self.gpu_nodes + self.nodes

    @property
    def daemonsets(self) -> int:
        """The two device plugins (one per GPU model) and kube-proxy."""
        return 3

    def to_json(self) -> dict[str, int]:
        return {
            "gpuNodes": self.gpu_nodes,
            "nodes": self.nodes,
            "pods": self.pods,
            "daemonsets": self.daemonsets,
        }


@dataclass(frozen=True)
class StackRender:
    """What the program renders for a stack: the manifests, and each node pool's labels by pool name."""

    manifests: tuple[Obj, ...]
    pool_labels: dict[str, dict[str, str]]
    # Each stack pool's nvidia.com/gpu per node, as the plan tunes it (the seed's: l20 8, t4 3).
    node_slots: dict[str, int]


def render(project_dir: Path, stack: str = STACK) -> StackRender:
    """The program's offline run of `stack` (as `gpushare render` runs it; untimed)."""
    run = run_stack(project_dir, stack).run
    labels = {
        r.inputs["name"]: dict(r.inputs["labels"])
        for r in run.resources
        if r.type == NODE_POOL_TYPE and not r.external
    }
    plan = build_plan(load_stack_file(project_dir / f"Pulumi.{stack}.yaml", stack))
    slots = {p.name: p.slots_per_gpu * p.pool.gpus_per_node_effective for p in plan.pools}
    manifests = tuple(copy.deepcopy(m.document) for m in extract_manifests(run.resources))
    return StackRender(manifests, labels, slots)


def node_name(block: int, index: int) -> str:
    """TKE names nodes by their VPC address: `10.<block>.<index / 256>.<index % 256>`."""
    return f"10.{block}.{index // 256}.{index % 256}"


def kube_proxy() -> Obj:
    labels = {"k8s-app": "kube-proxy"}
    return with_uid(
        "DaemonSet",
        {
            "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": dict(labels)},
            "spec": {
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "hostNetwork": True,
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "kube-proxy", "image": KUBE_PROXY_IMAGE}],
                    },
                },
            },
        },
    )


def exporter(node: str, index: int, gpu: tuple[str, int, float]) -> list[Obj]:
    """TKE's GPU exporter on `node` (hostNetwork) and the page it serves for the node's one GPU."""
    model, memory_mib, used_mib = gpu
    pod, port = exporter_pod("tke", node, f"{index:05d}")
    uuid = f"GPU-5c3a9f1e-7b2d-4e8a-9c1f-{index:012x}"
    return [pod, page_object(pod, port, tke_page([Gpu(node, uuid, model, memory_mib, used_mib)]))]


def synthetic_cluster(rendered: StackRender, shape: ClusterShape) -> list[Obj]:
    """Every object of a conforming cluster of `shape.gpu_nodes` GPU nodes (see the module docstring)."""
    objects, patch = split_patch([copy.deepcopy(m) for m in rendered.manifests])
    if patch is None:
        raise ValueError(f"the {STACK} render holds no patch of TKE's DaemonSet")
    l20_plugin = next(o for o in objects if o["metadata"]["name"] == L20_DAEMONSET)
    for obj in objects:
        if obj["kind"] == "DaemonSet":
            daemonset_status(with_uid("DaemonSet", obj), shape.l20_nodes)
    tke = daemonset_status(tke_daemonset(patch), shape.t4_nodes)
    proxy = daemonset_status(kube_proxy(), shape.nodes)
    objects += [tke, proxy]
    l20_nodes = [node_name(1, i) for i in range(shape.l20_nodes)]
    t4_nodes = [node_name(2, i) for i in range(shape.t4_nodes)]
    cpu_nodes = [node_name(3, i) for i in range(shape.cpu_nodes)]
    labels = rendered.pool_labels
    l20_slots, t4_slots = (str(rendered.node_slots[pool]) for pool in ("l20", "t4"))
    objects += [node(n, labels[L20_POOL], {"nvidia.com/gpu": l20_slots}) for n in l20_nodes]
    objects += [node(n, labels[T4_POOL], {"nvidia.com/gpu": t4_slots}) for n in t4_nodes]
    objects += [node(n, {}, {}) for n in cpu_nodes]
    objects += [plugin_pod(l20_plugin, n, f"{i:05d}") for i, n in enumerate(l20_nodes)]
    objects += [plugin_pod(tke, n, f"{i:05d}") for i, n in enumerate(t4_nodes)]
    everywhere = [*l20_nodes, *t4_nodes, *cpu_nodes]
    objects += [plugin_pod(proxy, n, f"{i:05d}") for i, n in enumerate(everywhere)]
    objects += gpu_workload([*l20_nodes, *t4_nodes])
    gpus = [(n, L20_GPU) for n in l20_nodes] + [(n, T4_GPU) for n in t4_nodes]
    for index, (name, gpu) in enumerate(gpus):
        objects += exporter(name, index, gpu)
    return objects


def count(objects: list[Obj]) -> dict[str, int]:
    """Objects by kind (what the shape promises, for the tests and the run's log)."""
    counted: dict[str, int] = {}
    for obj in objects:
        counted[obj["kind"]] = counted.get(obj["kind"], 0) + 1
    return counted
