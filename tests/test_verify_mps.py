"""`verify` on an MPS pool: dev's stack (Pulumi.dev.yaml: chart 0.17.1, T4 time-sliced x3, L20 MPS x8 of
5758 MiB) against the fake API server, healthy and broken one way at a time.

The cluster starts from the program's offline render (the node pools' labels, TKE's DaemonSet patch, the
chart's `config.map`), plus what the chart 0.17.1 creates from those values, built by hand with the names
and labels of its templates (`daemonset-device-plugin.yml`, `daemonset-mps-control-daemon.yml`: both
DaemonSets select `app.kubernetes.io/{name,instance}: nvidia-device-plugin`, the MPS one only on nodes
labelled `nvidia.com/mps.capable: "true"`; seen in `make render STACK=dev`), and the nodes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from test_verify import checks, find, kubeconfig, rendered, server, verify

from fake_cluster.apiserver import FakeApiServer
from fake_cluster.gpu_pages import exporter_objects, seed_gpus
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
from gpushare.plan import build_plan
from gpushare.stack.loading import load_stack_file
from gpushare.verify.expectations import ObjectRef, expected_cluster
from gpushare.verify.mps_checks import client_budget_finding

__all__ = ["kubeconfig", "server"]  # fixtures used by name below

L20_NODE, T4_NODE = "10.0.1.11", "10.0.1.12"
CHART_CHECKSUM = "7a41c0de" * 8
SELECTOR = {
    "app.kubernetes.io/name": "nvidia-device-plugin",
    "app.kubernetes.io/instance": "nvidia-device-plugin",
}
MPS_DAEMON = "nvidia-device-plugin-mps-control-daemon"


def chart_daemonset(name: str, namespace: str, container: str, node_selector: dict[str, str]) -> Obj:
    return daemonset_status(
        with_uid(
            "DaemonSet",
            {
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": dict(SELECTOR)},
                    "template": {
                        "metadata": {
                            "labels": dict(SELECTOR),
                            "annotations": {"checksum/config": CHART_CHECKSUM},
                        },
                        "spec": {
                            "nodeSelector": node_selector,
                            "containers": [
                                {"name": container, "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}
                            ],
                        },
                    },
                },
            },
        ),
        1,
    )


@pytest.fixture(scope="module")
def dev_cluster() -> list[Obj]:
    manifests, labels, releases = rendered(PROJECT_DIR, "dev")
    (release,) = releases
    namespace = release.namespace
    config_map = {
        "kind": "ConfigMap",
        "metadata": {"name": "nvidia-device-plugin-configs", "namespace": namespace},
        "data": dict(release.values["config"]["map"]),
    }
    plugin = chart_daemonset("nvidia-device-plugin", namespace, "nvidia-device-plugin-ctr", {})
    daemon = chart_daemonset(
        MPS_DAEMON, namespace, "mps-control-daemon-ctr", {"nvidia.com/mps.capable": "true"}
    )
    objects, patch = split_patch(manifests)
    objects += [config_map, plugin, daemon, tke_daemonset(patch)]
    objects += [plugin_pod(plugin, L20_NODE, "l2x8c"), plugin_pod(plugin, T4_NODE, "t4q3w")]
    objects.append(plugin_pod(daemon, L20_NODE, "m9p4s"))
    # L20: 8 MPS clients (floor(0.9 x 46068 / 4621) = 8); T4 time-sliced: floor(0.9 x 15360 / 4401) = 3.
    objects.append(node(L20_NODE, labels["gpushare-l20"], {"nvidia.com/gpu": "8"}))
    objects.append(node(T4_NODE, labels["gpushare-t4"], {"nvidia.com/gpu": "3"}))
    objects += exporter_objects("dcgm", seed_gpus(l20_used=4608, t4_used=4401))
    return objects


def run(server: FakeApiServer, kubeconfig: Path, objects: list[Obj]) -> tuple[int, dict[str, Any]]:
    return verify(server, kubeconfig, objects, stack="dev")


def messages(report: dict[str, Any], check: str) -> list[tuple[str, str]]:
    return [(f["object"], f["message"]) for f in report["findings"] if f["check"] == check]


def test_healthy_mps_pool_conforms(server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]) -> None:
    code, report = run(server, kubeconfig, copy.deepcopy(dev_cluster))
    assert (code, report["findings"]) == (0, [])
    assert {p["name"]: p["nodes"][0]["expectedSlots"] for p in report["pools"]} == {"t4": 3, "l20": 8}


def test_the_mps_control_daemon_missing(
    server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]
) -> None:
    objects = [
        o
        for o in copy.deepcopy(dev_cluster)
        if o["metadata"]["name"] not in (MPS_DAEMON, f"{MPS_DAEMON}-m9p4s")
    ]
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["mps-control-daemon"])
    assert messages(report, "mps-control-daemon") == [
        (
            f"daemonset/nvidia-device-plugin/{MPS_DAEMON}",
            "not found: MPS pool(s) l20 have no MPS control daemon, so no MPS client starts; the device-plugin "
            "chart (0.17.1) or the GPU Operator creates it",
        )
    ]


def test_the_mps_control_daemon_not_on_the_pools_node(
    server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]
) -> None:
    objects = [o for o in copy.deepcopy(dev_cluster) if o["metadata"]["name"] != f"{MPS_DAEMON}-m9p4s"]
    find(objects, "Node", L20_NODE)["metadata"]["labels"].pop("nvidia.com/mps.capable")
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["mps-control-daemon", "node-labels"])
    ((where, message),) = messages(report, "mps-control-daemon")
    assert (where, message) == (
        f"node/{L20_NODE}",
        f"pool l20: no running pod of daemonset/nvidia-device-plugin/{MPS_DAEMON} on this node: its MPS "
        "clients cannot start (the daemon runs only on nodes labelled nvidia.com/mps.capable=true; see "
        "node-labels, and `kubectl describe daemonset`)",
    )
    assert "needs label nvidia.com/mps.capable=true (it has none)" in messages(report, "node-labels")[0][1]


def test_replicas_stale(server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]) -> None:
    """The plugin still serves an older config of 4 clients; GFD, where it runs, labels the node so."""
    objects = copy.deepcopy(dev_cluster)
    l20 = find(objects, "Node", L20_NODE)
    l20["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    l20["metadata"]["labels"].update(
        {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"}
    )
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["mps-sharing-labels", "slots-allocatable"])
    assert messages(report, "mps-sharing-labels") == [
        (
            f"node/{L20_NODE}",
            "pool l20: nvidia.com/gpu.replicas=4, the plan has 8 MPS clients per GPU of 5758 MiB each: the plugin "
            "runs a stale config, and its clients' memory limit is not the one planned",
        )
    ]
    assert (
        "allocatable nvidia.com/gpu is 4, the plan gives 8 (8 replicas x 1 GPU(s))"
        in (messages(report, "slots-allocatable")[0][1])
    )


def test_a_node_the_plugin_time_slices(
    server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]
) -> None:
    objects = copy.deepcopy(dev_cluster)
    labels = find(objects, "Node", L20_NODE)["metadata"]["labels"]
    labels.update({"nvidia.com/gpu.replicas": "8", "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["mps-sharing-labels"])
    assert (
        "nvidia.com/gpu.sharing-strategy=time-slicing, the plan shares with MPS"
        in report["findings"][0]["message"]
    )


def test_memory_budget_of_an_mps_slot_is_its_client_limit() -> None:
    """0.9 x 5758 = 5182.2 MiB is the most an L20 MPS client of dev's pool may use; above it the
    headroom is gone (at 5758 its allocations fail)."""
    stack = load_stack_file(PROJECT_DIR / "Pulumi.dev.yaml")
    pool = expected_cluster(stack, build_plan(stack)).pool("l20")
    assert pool is not None and catalog.gpu("L20").memory_mib // 8 == 5758
    assert client_budget_finding(pool, 5182.2, "pod nlp-0", "pod/default/nlp-0", "dcgm-exporter") is None
    finding = client_budget_finding(
        pool, 5183, "pod nlp-0 uses 5183 MiB", "pod/default/nlp-0", "dcgm-exporter"
    )
    assert finding is not None
    assert (finding.check, finding.severity, finding.object) == (
        "memory-budget",
        "error",
        "pod/default/nlp-0",
    )
    assert finding.message == (
        "pool l20: 5183 MiB per MPS client (pod nlp-0 uses 5183 MiB, dcgm-exporter), above the ceiling 0.9 x the "
        "per-client limit 5758 MiB (= 5182 MiB): the headroom the tuning promised is gone, and at 5758 MiB the "
        "client's allocations fail (`gpushare measure`, then `pulumi preview`)"
    )
    # A time-sliced pool has no client limit.
    t4 = expected_cluster(stack, build_plan(stack)).pool("t4")
    assert t4 is not None and client_budget_finding(t4, 9999, "x", "node/x", "dcgm-exporter") is None


def test_memory_budget_reads_the_client_limit_on_the_live_cluster(
    server: FakeApiServer, kubeconfig: Path, dev_cluster: list[Obj]
) -> None:
    """One NLP pod holds one L20 slot and the GPU uses 5300 MiB: far below the GPU's ceiling
    (0.9 x 46068 = 41461 MiB), but above the client's 0.9 x 5758 = 5182 MiB."""
    objects = [o for o in copy.deepcopy(dev_cluster) if "dcgm-exporter" not in o["metadata"]["name"]]
    objects += exporter_objects("dcgm", seed_gpus(l20_used=5300, t4_used=4401)) + gpu_workload([L20_NODE])
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["memory-budget"])
    ((where, message),) = messages(report, "memory-budget")
    assert (where, message) == (
        f"node/{L20_NODE}",
        f"pool l20: 5300 MiB per MPS client (average: 5300 MiB used over the 1 nvidia.com/gpu slots pods hold "
        f"on node {L20_NODE}, dcgm-exporter), above the ceiling 0.9 x the per-client limit 5758 MiB (= 5182 "
        "MiB): the headroom the tuning promised is gone, and at 5758 MiB the client's allocations fail "
        "(`gpushare measure`, then `pulumi preview`)",
    )


def test_the_operators_control_daemon_is_read_in_its_namespace(tmp_path: Path) -> None:
    """staging (the GPU Operator) with its L20 pool in mode mps: the operator's DaemonSet
    nvidia-device-plugin-mps-control-daemon (its assets/state-mps-control-daemon), in gpu-operator, read with
    the plugin's; GFD runs there, so a missing strategy label is a warning."""
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    l20 = next(p for p in document["config"]["gpushare:pools"] if p["name"] == "l20")
    l20["sharing"]["mode"] = "mps"
    path = tmp_path / "Pulumi.staging.yaml"
    path.write_text(yaml.safe_dump(document))
    stack = load_stack_file(path)
    expected = expected_cluster(stack, build_plan(stack))
    daemon = ObjectRef("DaemonSet", "gpu-operator", MPS_DAEMON)
    assert (expected.mps_daemon, expected.gfd_runs) == (daemon, True)
    assert daemon in expected.daemonsets
    pool = expected.pool("l20")
    assert pool is not None and pool.node_labels["nvidia.com/mps.capable"] == "true"
    # Dev's chart: the release's DaemonSet name, in the plugin's namespace; no GFD (gfdEnabled false).
    dev = load_stack_file(PROJECT_DIR / "Pulumi.dev.yaml")
    dev_expected = expected_cluster(dev, build_plan(dev))
    assert (dev_expected.mps_daemon, dev_expected.gfd_runs) == (
        ObjectRef("DaemonSet", "nvidia-device-plugin", MPS_DAEMON),
        False,
    )
    # prod has no MPS pool: nothing more is read.
    prod = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml")
    assert expected_cluster(prod, build_plan(prod)).mps_daemon is None
