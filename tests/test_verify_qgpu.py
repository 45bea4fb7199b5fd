"""`verify` on a qGPU pool: Pulumi.qgpu.yaml (the GPU Operator serving a time-sliced T4 pool, and an L20
native pool that TKE's qGPU slices) against the fake API server, healthy and broken one way at a time.

The cluster starts from the program's offline render (the native pool's labels, the operator's ConfigMap),
plus the operator's device-plugin DaemonSet on the T4 node as staging's test builds it (tests/test_verify.py
`staging_operator`), TKE's own DaemonSet untouched (the pools opt out of it), and the qGPU side from
fake_cluster/qgpu_scenarios.py: the qgpu-manager DaemonSet, its pod and the L20 node showing 100 core and
44 GiB (the third-party figure the catalog holds for L20, so the plan and the node agree).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_DIR
from test_verify import checks, kubeconfig, server, verify

from fake_cluster import qgpu_scenarios
from fake_cluster.apiserver import FakeApiServer
from fake_cluster.gpu_pages import exporter_objects, seed_gpus
from fake_cluster.objects import Obj, daemonset_status, node, plugin_pod, tke_daemonset, with_uid
from gpushare.cli.verify import report_table
from gpushare.offline.manifests import extract_helm_releases, extract_manifests
from gpushare.offline.render import run_stack
from gpushare.resource_types import NATIVE_NODE_POOL, NODE_POOL
from gpushare.stack.loading import from_config_values
from gpushare.stack.model import StackConfig
from gpushare.verify.expectations import ObjectRef, expected_cluster
from gpushare.verify.qgpu_checks import qgpu_findings
from gpushare.verify.report import ClusterSnapshot, NodeRow, PoolRow, VerifyReport

__all__ = ["kubeconfig", "server"]  # fixtures used by name below

T4_NODE = "10.0.1.12"
L20_QGPU = qgpu_scenarios.QGPU_NODE


def _pool_labels(resource: Any) -> dict[str, str]:
    labels = resource.inputs["labels"]
    return {i["name"]: i["value"] for i in labels} if resource.type == NATIVE_NODE_POOL else dict(labels)


@pytest.fixture(scope="module")
def qgpu_cluster() -> list[Obj]:
    run = run_stack(PROJECT_DIR, "qgpu").run
    manifests = [copy.deepcopy(m.document) for m in extract_manifests(run.resources)]
    (release,) = extract_helm_releases(run.resources)
    labels = {
        r.inputs["name"]: _pool_labels(r) for r in run.resources if r.type in (NODE_POOL, NATIVE_NODE_POOL)
    }
    config_name = release.values["devicePlugin"]["config"]["name"]
    selector = {"app": "nvidia-device-plugin-daemonset"}
    operand = daemonset_status(
        with_uid(
            "DaemonSet",
            {
                "kind": "DaemonSet",
                "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": release.namespace},
                "spec": {
                    "selector": {"matchLabels": selector},
                    "template": {
                        "metadata": {"labels": selector},
                        "spec": {
                            "containers": [
                                {"name": "nvidia-device-plugin", "image": "k8s-device-plugin:v0.20.0"}
                            ],
                            "volumes": [{"name": "available-configs", "configMap": {"name": config_name}}],
                        },
                    },
                },
            },
        ),
        1,
    )
    return [
        *(m for m in manifests if m["kind"] != "Namespace"),
        operand,
        plugin_pod(operand, T4_NODE, "t4aa"),
        # T4 time-sliced: floor(0.9 x 15360 / 4401) = 3.
        node(T4_NODE, labels["gpushare-t4"], {"nvidia.com/gpu": "3"}),
        tke_daemonset(None),
        *exporter_objects("dcgm", [seed_gpus(t4_used=4401)[1]]),
        *qgpu_scenarios.healthy(labels["gpushare-l20-qgpu"], memory_gib=44),
    ]


def run(server: FakeApiServer, kubeconfig: Path, objects: list[Obj]) -> tuple[int, dict[str, Any]]:
    return verify(server, kubeconfig, objects, stack="qgpu")


def messages(report: dict[str, Any], check: str) -> list[tuple[str, str, str]]:
    return [(f["severity"], f["object"], f["message"]) for f in report["findings"] if f["check"] == check]


def test_a_healthy_qgpu_pool_conforms_and_its_version_is_reported(
    server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]
) -> None:
    code, report = run(server, kubeconfig, copy.deepcopy(qgpu_cluster))
    assert (code, report["findings"]) == (0, [])
    assert report["pools"] == [
        {
            "name": "l20-qgpu",
            "nodes": [{"name": L20_QGPU, "expectedSlots": 44, "allocatable": 44, "qgpuVersion": "3.0.5"}],
        },
        {"name": "t4", "nodes": [{"name": T4_NODE, "expectedSlots": 3, "allocatable": 3}]},
    ]


def test_missing_allocatable(server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]) -> None:
    code, report = run(server, kubeconfig, qgpu_scenarios.missing_allocatable(qgpu_cluster))
    assert (code, checks(report)) == (1, ["qgpu-allocatable"])
    assert messages(report, "qgpu-allocatable") == [
        (
            "error",
            f"node/{L20_QGPU}",
            "pool l20-qgpu: no allocatable tke.cloud.tencent.com/qgpu-core or tke.cloud.tencent.com/qgpu-memory: "
            "qGPU does not serve this node, and no qGPU pod can land on it (is the qgpu add-on installed, the node "
            "labelled qgpu-device-enable=enable, the qgpu-manager pod Ready, the driver within 450-570?)",
        )
    ]


def test_a_stray_nvidia_gpu(server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]) -> None:
    code, report = run(server, kubeconfig, qgpu_scenarios.stray_nvidia_gpu(qgpu_cluster, 1))
    assert (code, checks(report)) == (1, ["qgpu-no-nvidia-gpu"])
    assert messages(report, "qgpu-no-nvidia-gpu") == [
        (
            "error",
            f"node/{L20_QGPU}",
            "pool l20-qgpu: advertises nvidia.com/gpu (1) beside qGPU: an NVIDIA device plugin runs on this node "
            "and hands out the cards qGPU slices a second time (TKE's needs nvidia-device-enable=disable; the GPU "
            "Operator's nvidia.com/gpu.deploy.operands=false)",
        )
    ]


def test_the_manager_pod_missing(server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]) -> None:
    code, report = run(server, kubeconfig, qgpu_scenarios.missing_manager_pod(qgpu_cluster))
    assert (code, checks(report)) == (1, ["qgpu-manager"])
    assert messages(report, "qgpu-manager") == [
        (
            "error",
            f"node/{L20_QGPU}",
            "pool l20-qgpu: no Ready pod of daemonset/kube-system/qgpu-manager on this node: the qgpu kernel "
            "module is not managed here (it runs only on nodes labelled qgpu-device-enable=enable; "
            "`kubectl -n kube-system describe daemonset qgpu-manager`)",
        )
    ]


def test_the_manager_daemonset_missing(
    server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]
) -> None:
    objects = [o for o in copy.deepcopy(qgpu_cluster) if o["metadata"]["name"] != qgpu_scenarios.MANAGER]
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["qgpu-manager"])
    ((severity, where, message),) = messages(report, "qgpu-manager")
    assert (severity, where) == ("error", "daemonset/kube-system/qgpu-manager")
    assert message.startswith("not found: qGPU pool(s) l20-qgpu have no qgpu-manager")


def test_an_allocatable_figure_other_than_the_plans_names_the_key_to_set(
    server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]
) -> None:
    """The L20 figure is third-party: a node showing 43 GiB is a warning that says what to write."""
    objects = copy.deepcopy(qgpu_cluster)
    l20 = next(o for o in objects if o["metadata"]["name"] == L20_QGPU)
    for field in ("capacity", "allocatable"):
        l20["status"][field][qgpu_scenarios.MEMORY] = "43"
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report), checks(report, "warning")) == (0, [], ["qgpu-allocatable"])
    assert messages(report, "qgpu-allocatable") == [
        (
            "warning",
            f"node/{L20_QGPU}",
            "pool l20-qgpu: allocatable tke.cloud.tencent.com/qgpu-memory is 43 GiB, the plan counts 44 (44 GiB a "
            "card, third-party): set pools[].sharing.allocatableGiB: 43 (`gpushare plan` then sizes the slices "
            "from it)",
        )
    ]


def test_a_node_without_the_version_label_is_a_warning(
    server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]
) -> None:
    objects = copy.deepcopy(qgpu_cluster)
    l20 = next(o for o in objects if o["metadata"]["name"] == L20_QGPU)
    del l20["metadata"]["labels"][qgpu_scenarios.VERSION_LABEL]
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report, "warning")) == (0, ["qgpu-version"])


def test_the_table_shows_the_qgpu_version_beside_the_node() -> None:
    report = VerifyReport(
        "qgpu",
        (
            PoolRow(
                "l20-qgpu", ("tke.cloud.tencent.com/qgpu-memory (GiB)",), (NodeRow("n1", 44, 44, "3.0.5"),)
            ),
        ),
        (),
    )
    assert "l20-qgpu  n1 (qgpu 3.0.5)  tke.cloud.tencent.com/qgpu-memory (GiB)  44       44" in report_table(
        report, "https://fake"
    )


# --------------------------------------------------------------------------------------------------------
# A node with two cards (the checks alone, over a snapshot built here)


def _two_card_stack() -> StackConfig:
    """One qGPU pool of L20 nodes with 2 cards each (an instance type the catalog lacks, so gpusPerNode)."""
    return from_config_values(
        {
            "gpushare:cluster": {
                "id": "cls-q0002",
                "vpcId": "vpc-q0002",
                "subnetIds": ["subnet-q0002"],
                "kubernetesVersion": "1.30",
            },
            "gpushare:sharing": {"devicePlugin": {"mode": "helm"}},
            "gpushare:pools": [
                {
                    "name": "l20-qgpu",
                    "gpu": "L20",
                    "instanceType": "PNV5b.16XLARGE192",
                    "gpusPerNode": 2,
                    "nodes": {"min": 1, "max": 1, "desired": 1},
                    "native": {
                        "securityGroupIds": ["sg-q0002"],
                        "systemDisk": {"diskType": "CLOUD_BSSD", "diskSize": 100},
                    },
                    "sharing": {"mode": "qgpu", "schedulePolicy": "fixed-share", "measuredMiB": 4621},
                }
            ],
        },
        stack="two-cards",
        source="Pulumi.two-cards.yaml",
    )


def _two_card_findings(core: int, memory_gib: int) -> list[tuple[str, str, str]]:
    stack = _two_card_stack()
    expected = expected_cluster(stack)
    manager = qgpu_scenarios.manager_daemonset()
    labels = {"gpushare.io/pool": "l20-qgpu", "qgpu-device-enable": "enable"}
    node_object = qgpu_scenarios.qgpu_node(labels, memory_gib, cards=2)
    for field in ("capacity", "allocatable"):
        node_object["status"][field][qgpu_scenarios.CORE] = str(core)
    ref = ObjectRef("DaemonSet", qgpu_scenarios.MANAGER_NAMESPACE, qgpu_scenarios.MANAGER)
    snapshot = ClusterSnapshot(
        now=datetime.now(UTC),
        nodes=(node_object,),
        objects={ref: manager},
        daemonset_pods={ref: (plugin_pod(manager, L20_QGPU, qgpu_scenarios.MANAGER_POD_SUFFIX),)},
    )
    found = qgpu_findings(expected, snapshot, {"l20-qgpu": [node_object]})
    return [(f.check, f.severity, f.message) for f in found]


def test_a_two_card_node_advertises_both_cards_core_and_memory() -> None:
    # 2 cards: 2 x 100 core, 2 x 44 GiB (the L20 figure) = 88 GiB.
    assert _two_card_findings(200, 44) == []


def test_a_two_card_node_with_one_card_unsliced_is_a_warning() -> None:
    # 100 core where 2 x 100 are expected; memory still 88 GiB.
    assert _two_card_findings(100, 44) == [
        (
            "qgpu-allocatable",
            "warning",
            "pool l20-qgpu: allocatable tke.cloud.tencent.com/qgpu-core is 100, 100 x 2 card(s) expected: some of "
            "its cards are not sliced by qGPU",
        )
    ]


def test_nvidia_gpu_in_capacity_alone_is_still_a_stray_plugin(
    server: FakeApiServer, kubeconfig: Path, qgpu_cluster: list[Obj]
) -> None:
    """A plugin that registered and then failed leaves capacity 1 and allocatable 0 (the kubelet keeps the
    capacity of a resource whose plugin went away): the larger of the two is what was advertised."""
    objects = qgpu_scenarios.stray_nvidia_gpu(qgpu_cluster, 1)
    l20 = next(o for o in objects if o["metadata"]["name"] == L20_QGPU)
    l20["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    code, report = run(server, kubeconfig, objects)
    assert (code, checks(report)) == (1, ["qgpu-no-nvidia-gpu"])
    ((_, _, message),) = messages(report, "qgpu-no-nvidia-gpu")
    assert message.startswith("pool l20-qgpu: advertises nvidia.com/gpu (1) beside qGPU")
