"""`python -m gpushare verify` against a fake read-only API server holding the seed's cluster.

The cluster states start from the program's own output (the objects `pulumi up` would apply, and the
node pools' labels) plus what Kubernetes and TKE add (nodes, pods, TKE's DaemonSet, a Deployment), and
are then broken the seed's ways. Expected numbers come from the seed: L20 8 slots, T4 3 slots.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR

from fake_cluster.apiserver import FakeApiServer, label_selector_matches
from fake_cluster.gpu_pages import exporter_objects, mig_gpus, seed_gpus
from fake_cluster.objects import (
    NOW,
    TKE_DS,
    TKE_ORIGINAL_ARGS,
    Obj,
    daemonset_status,
    gpu_workload,
    node,
    owner,
    plugin_pod,
    split_patch,
    stamp,
    tke_daemonset,
    with_uid,
)
from gpushare import kube_names
from gpushare.cli import main as cli_main
from gpushare.offline.manifests import extract_helm_releases, extract_manifests
from gpushare.offline.render import NODE_POOL_TYPE, run_stack
from gpushare.plugin_configs import config_checksum
from gpushare.stack.loading import from_config_values, load_stack_file
from gpushare.verify.checks import run_checks
from gpushare.verify.expectations import ObjectRef, PluginWorkload, expected_cluster
from gpushare.verify.objects import age
from gpushare.verify.report import ClusterSnapshot

L20_NODE, T4_NODE, H20_NODE = "10.0.1.11", "10.0.1.12", "10.0.1.13"
# The seed's pitfall 3, verbatim from the plugin's log.
DIRECTORY_ERROR = (
    "unable to load config: unable to finalize config: unable to parse config file: "
    "read error: read /etc/nvidia/time-slicing-config: is a directory"
)
SCHEDULER_MESSAGE = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."


# --------------------------------------------------------------------------------------------------
# The cluster, from the render


def rendered(project_dir: Path, stack: str) -> tuple[list[Obj], dict[str, dict[str, str]], list[Any]]:
    """(manifests, node-pool name -> labels, Helm releases) of the program's offline run."""
    run = run_stack(project_dir, stack).run
    manifests = [copy.deepcopy(m.document) for m in extract_manifests(run.resources)]
    labels = {
        r.inputs["name"]: dict(r.inputs["labels"])
        for r in run.resources
        if r.type == NODE_POOL_TYPE and not r.external
    }
    return manifests, labels, extract_helm_releases(run.resources)


def prod_cluster(manifests: list[Obj], pool_labels: dict[str, dict[str, str]]) -> list[Obj]:
    """The seed's cluster after gpushare: 8 nodes, L20 with 8 slots, T4 (TKE's adopted DaemonSet) with 3."""
    objects, patch = split_patch(manifests)
    assert patch is not None
    for obj in objects:
        if obj["kind"] == "DaemonSet":
            daemonset_status(with_uid("DaemonSet", obj), 1)
    tke = tke_daemonset(patch)
    objects.append(tke)
    l20 = next(o for o in objects if o["metadata"]["name"] == "nvidia-device-plugin-daemonset-l20")
    objects += [plugin_pod(l20, L20_NODE, "x7k2p"), plugin_pod(tke, T4_NODE, "q9w4m")]
    # Seed: L20 8 slots, T4 3 slots after time-slicing; 6 CPU-only nodes.
    objects.append(node(L20_NODE, pool_labels["gpushare-l20"], {"nvidia.com/gpu": "8"}))
    objects.append(node(T4_NODE, pool_labels["gpushare-t4"], {"nvidia.com/gpu": "3"}))
    objects += [node(f"10.0.0.{i}", {}, {}) for i in range(1, 7)]
    objects += gpu_workload([L20_NODE, T4_NODE])
    # TKE's GPU exporter (its nvidia-gpu component): each GPU holds its one pod's measured memory or less.
    objects += exporter_objects("tke", seed_gpus(l20_used=4608, t4_used=4401))
    return objects


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


# --------------------------------------------------------------------------------------------------
# Fixtures: one server and one render per module


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def kubeconfig(server: FakeApiServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return server.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")


@pytest.fixture(scope="module")
def prod_render() -> tuple[list[Obj], dict[str, dict[str, str]]]:
    manifests, labels, _ = rendered(PROJECT_DIR, "prod")
    return manifests, labels


@pytest.fixture
def prod(prod_render: tuple[list[Obj], dict[str, dict[str, str]]]) -> list[Obj]:
    return prod_cluster(copy.deepcopy(prod_render[0]), prod_render[1])


def verify(
    server: FakeApiServer,
    kubeconfig: Path,
    objects: list[Obj],
    stack: str = "prod",
    project_dir: Path = PROJECT_DIR,
    forbidden: tuple[tuple[str, str | None], ...] = (),
) -> tuple[int, dict[str, Any]]:
    server.load(objects, forbidden)
    out = io.StringIO()
    args = ["verify", "--stack", stack, "--kubeconfig", str(kubeconfig), "--json", "--dir", str(project_dir)]
    code = cli_main.main(args, out=out)
    assert server.writes == [], "verify sent a write request"
    return code, json.loads(out.getvalue())


def checks(report: dict[str, Any], severity: str = "error") -> list[str]:
    return [f["check"] for f in report["findings"] if f["severity"] == severity]


def finding(report: dict[str, Any], check: str) -> dict[str, Any]:
    return next(f for f in report["findings"] if f["check"] == check)


# --------------------------------------------------------------------------------------------------
# Healthy


def test_healthy_prod_cluster_conforms(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["ok"], report["findings"]) == (0, True, [])
    # Seed: the L20 node 8 slots, the T4 node 3.
    assert report["pools"] == [
        {"name": "l20", "nodes": [{"name": L20_NODE, "expectedSlots": 8, "allocatable": 8}]},
        {"name": "t4", "nodes": [{"name": T4_NODE, "expectedSlots": 3, "allocatable": 3}]},
    ]
    # Read-only, and the reads went where the checks need them (selectors, not whole-cluster dumps).
    assert all(method == "GET" for method, _ in server.requests)
    paths = [path for _, path in server.requests]
    assert any("fieldSelector=status.phase%3DPending" in p for p in paths)
    assert any("labelSelector=name%3Dnvidia-device-plugin-ds-l20" in p for p in paths)


def test_table_shows_pools_planned_and_allocatable(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    find(prod, "Node", T4_NODE)["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    server.load(prod)
    out = io.StringIO()
    code = cli_main.main(["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig)], out=out)
    text = out.getvalue()
    assert code == 1
    rows = [line.split() for line in text.splitlines()]
    assert ["l20", L20_NODE, "nvidia.com/gpu", "8", "8"] in rows
    assert ["t4", T4_NODE, "nvidia.com/gpu", "3", "1", "<-"] in rows
    assert "ERROR    slots-allocatable  node/10.0.1.12" in text
    assert text.rstrip().endswith("1 error, 0 warnings: the cluster does NOT conform to stack prod.")


# --------------------------------------------------------------------------------------------------
# The seed's failures, one each


def test_too_few_allocatable_slots(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    # Before time-slicing the seed's T4 node advertised 1 nvidia.com/gpu; the plan gives 3.
    find(prod, "Node", T4_NODE)["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["ok"], checks(report)) == (1, False, ["slots-allocatable"])
    found = finding(report, "slots-allocatable")
    assert found["object"] == f"node/{T4_NODE}"
    assert "allocatable nvidia.com/gpu is 1, the plan gives 3 (3 replicas x 1 GPU(s))" in found["message"]


def test_plugin_pod_running_an_older_config_digest(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # Pitfall 1: the ConfigMap changed (replicas 8 -> the seed's first try, 2), the pod never restarted.
    config_map = find(prod, "ConfigMap", kube_names.CONFIG_MAP_NAME)
    pod = find(prod, "Pod", "nvidia-device-plugin-daemonset-l20-x7k2p")
    old_digest = pod["metadata"]["annotations"][kube_names.ANNOTATION_CONFIG_SHA256]
    config_map["data"]["l20"] = config_map["data"]["l20"].replace("replicas: 8", "replicas: 2")
    assert "replicas: 2" in config_map["data"]["l20"]
    # ... and the DaemonSet's template was updated to the new digest, but the pod predates it.
    find(prod, "DaemonSet", "nvidia-device-plugin-daemonset-l20")["spec"]["template"]["metadata"][
        "annotations"
    ][kube_names.ANNOTATION_CONFIG_SHA256] = config_checksum(config_map["data"]["l20"])
    code, report = verify(server, kubeconfig, prod)
    assert code == 1
    stale = [
        f
        for f in report["findings"]
        if f["object"] == "pod/kube-system/nvidia-device-plugin-daemonset-l20-x7k2p"
    ]
    assert [f["check"] for f in stale] == ["plugin-config-current"]
    assert (
        old_digest[:12] in stale[0]["message"]
        and "started before the last config change" in stale[0]["message"]
    )
    assert "rollout restart daemonset/nvidia-device-plugin-daemonset-l20" in stale[0]["message"]
    # The hand edit itself differs from the plan too.
    drift = [f for f in report["findings"] if f["object"] == "configmap/kube-system/time-slicing-config"]
    assert len(drift) == 1 and "key l20" in drift[0]["message"] and "pulumi up" in drift[0]["message"]


def test_config_map_edited_by_hand(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    """The seed's way of changing replicas (`kubectl edit configmap`): the pods and the DaemonSet still
    carry the planned digest; restarting would load the hand edit, so the fix is `pulumi up`."""
    config_map = find(prod, "ConfigMap", kube_names.CONFIG_MAP_NAME)
    config_map["data"]["l20"] = config_map["data"]["l20"].replace("replicas: 8", "replicas: 4")
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["plugin-config-current", "plugin-config-current"])
    pod = next(f for f in report["findings"] if f["object"].startswith("pod/"))
    assert "changed outside Pulumi" in pod["message"] and "rollout restart" not in pod["message"]


def test_tke_daemonset_reverted_to_its_original_args_and_node_selector(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # Pitfall 4: TKE reconciles its DaemonSet back to what it shipped.
    tke = find(prod, "DaemonSet", TKE_DS)
    spec = tke["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = list(TKE_ORIGINAL_ARGS)
    spec["nodeSelector"] = {"nvidia-device-enable": "enable"}
    code, report = verify(server, kubeconfig, prod)
    assert code == 1
    assert "managed-plugin-drift" in checks(report)
    drift = next(
        f for f in report["findings"] if f["object"] == "daemonset/kube-system/nvidia-device-plugin-daemonset"
    )
    assert drift["check"] == "managed-plugin-drift"
    assert (
        "args (wants --fail-on-init-error=false --pass-device-specs=true --config-file=/etc/nvidia/time-slicing-config/t4, has --mig-strategy=single"
        in drift["message"]
    )
    assert (
        "nodeSelector (wants nvidia-device-enable=enable, nvidia.com/device-plugin.config=t4, has nvidia-device-enable=enable)"
        in drift["message"]
    )
    assert "`pulumi up` re-applies" in drift["message"]
    # The volume and checksum survived this revert: they are not listed.
    assert "volume " not in drift["message"] and "annotation" not in drift["message"]


def test_tke_daemonset_fully_reverted_lists_every_field(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    tke = find(prod, "DaemonSet", TKE_DS)
    tke["spec"]["template"]["metadata"].pop("annotations")
    spec = tke["spec"]["template"]["spec"]
    spec["containers"][0]["args"] = list(TKE_ORIGINAL_ARGS)
    spec["containers"][0]["volumeMounts"] = spec["containers"][0]["volumeMounts"][:1]
    spec["volumes"] = spec["volumes"][:1]
    spec["nodeSelector"] = {"nvidia-device-enable": "enable"}
    _, report = verify(server, kubeconfig, prod)
    message = finding(report, "managed-plugin-drift")["message"]
    for field in (
        "nodeSelector",
        "args",
        "volumeMount time-slicing-config",
        "volume time-slicing-config",
        "annotation gpushare.io/config-sha256",
    ):
        assert field in message


def test_tke_daemonset_whose_config_volume_names_another_config_map(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # The volume keeps gpushare's name but mounts someone else's ConfigMap: the file the plugin reads is
    # not the planned one, so the volume alone is listed.
    tke = find(prod, "DaemonSet", TKE_DS)
    volume = next(v for v in tke["spec"]["template"]["spec"]["volumes"] if v["name"] == "time-slicing-config")
    volume["configMap"]["name"] = "someone-elses-config"
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["managed-plugin-drift"])
    assert finding(report, "managed-plugin-drift")["message"] == (
        "TKE's DaemonSet no longer has what gpushare's adopt patch set: volume time-slicing-config (ConfigMap "
        "time-slicing-config). TKE reconciled it back; `pulumi up` re-applies the patch"
    )


def test_plugin_crash_looping_on_a_directory_config_file(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # Pitfall 3: `--config-file` pointing at the mount directory.
    pod = find(prod, "Pod", "nvidia-device-plugin-daemonset-l20-x7k2p")
    pod["status"]["phase"] = "Running"
    pod["status"]["containerStatuses"][0].update(
        ready=False,
        restartCount=7,
        state={
            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
        },
        lastState={"terminated": {"exitCode": 1, "reason": "Error", "message": DIRECTORY_ERROR}},
    )
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["plugin-crashloop"])
    found = finding(report, "plugin-crashloop")
    assert found["object"] == "pod/kube-system/nvidia-device-plugin-daemonset-l20-x7k2p"
    assert f"on node {L20_NODE} (pool l20)" in found["message"]
    assert "CrashLoopBackOff, 7 restart(s)" in found["message"]
    assert "read /etc/nvidia/time-slicing-config: is a directory" in found["message"]


def freeze_rollout(objects: list[Obj]) -> None:
    """Pitfall 2: revision 3 of the NLP service needs a GPU; its first pod is Pending for 28 days and
    the two revision-2 pods keep running."""
    deployment = find(objects, "Deployment", "nlp-infer")
    deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3"
    deployment["status"].update(
        replicas=3, updatedReplicas=1, readyReplicas=2, availableReplicas=2, unavailableReplicas=1
    )
    deployment["status"]["conditions"][1] = {
        "type": "Progressing",
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
        "message": 'ReplicaSet "nlp-infer-5f6d8b" has timed out progressing.',
        "lastUpdateTime": stamp(timedelta(days=28, minutes=-10)),
        "lastTransitionTime": stamp(timedelta(days=28, minutes=-10)),
    }
    new_rs = copy.deepcopy(find(objects, "ReplicaSet", "nlp-infer-7d4b9c"))
    new_rs["metadata"].update(
        name="nlp-infer-5f6d8b",
        uid="uid-ReplicaSet-nlp-infer-5f6d8b",
        creationTimestamp=stamp(timedelta(days=28, hours=3)),
        annotations={"deployment.kubernetes.io/revision": "3"},
    )
    new_rs["spec"]["replicas"] = 1
    new_rs["status"] = {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0}
    pending = {
        "kind": "Pod",
        "metadata": {
            "name": "nlp-infer-5f6d8b-mz2kq",
            "namespace": "nlp",
            "labels": {"app": "nlp-infer"},
            "ownerReferences": owner("ReplicaSet", new_rs),
            "creationTimestamp": stamp(timedelta(days=28, hours=3)),
        },
        "spec": copy.deepcopy(new_rs["spec"]["template"]["spec"]),
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": SCHEDULER_MESSAGE,
                }
            ],
        },
    }
    objects += [new_rs, pending]


def test_deployment_frozen_behind_a_gpu_pending_pod(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    freeze_rollout(prod)
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["gpu-pending-pods", "rollout-stuck"])
    pending = finding(report, "gpu-pending-pods")
    assert pending["object"] == "pod/nlp/nlp-infer-5f6d8b-mz2kq"
    assert pending["message"].startswith(
        "Pending for 28d 3h: 0/8 nodes are available: 8 Insufficient nvidia.com/gpu."
    )
    stuck = finding(report, "rollout-stuck")
    assert stuck["object"] == "deployment/nlp/nlp-infer"
    assert "revision 3 has not progressed for 28d 3h (ProgressDeadlineExceeded)" in stuck["message"]
    assert (
        "nlp-infer-5f6d8b has 0/1 ready" in stuck["message"]
        and "2 old pod(s) keep running" in stuck["message"]
    )


def test_pending_pod_found_through_failed_scheduling_events_only(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    """Before its deadline the Deployment still says Progressing=True; the pod's condition may carry no
    message: the FailedScheduling event and the new ReplicaSet with old pods still running tell."""
    freeze_rollout(prod)
    deployment = find(prod, "Deployment", "nlp-infer")
    deployment["status"]["conditions"][1] = {
        "type": "Progressing",
        "status": "True",
        "reason": "ReplicaSetUpdated",
    }
    pod = find(prod, "Pod", "nlp-infer-5f6d8b-mz2kq")
    pod["status"]["conditions"][0].pop("message")
    prod.append(
        {
            "kind": "Event",
            "metadata": {"name": "nlp-infer-5f6d8b-mz2kq.17f3a", "namespace": "nlp"},
            # Matched by name: the pod's uid is the server's.
            "involvedObject": {"kind": "Pod", "namespace": "nlp", "name": pod["metadata"]["name"]},
            "reason": "FailedScheduling",
            "message": SCHEDULER_MESSAGE,
            "type": "Warning",
            "lastTimestamp": stamp(timedelta(minutes=3)),
        }
    )
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["gpu-pending-pods", "rollout-stuck"])
    stuck = finding(report, "rollout-stuck")["message"]
    assert "has not progressed for 28d 3h:" in stuck  # since the new ReplicaSet was created


def test_pool_node_without_its_config_label(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    del find(prod, "Node", L20_NODE)["metadata"]["labels"][kube_names.LABEL_PLUGIN_CONFIG]
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["node-labels"])
    found = finding(report, "node-labels")
    assert found["object"] == f"node/{L20_NODE}"
    assert "needs label nvidia.com/device-plugin.config=l20 (it has none)" in found["message"]


# --------------------------------------------------------------------------------------------------
# Warnings, permissions, exit 2


def test_warnings_alone_exit_0(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    # A GPU node outside every pool (the seed's H20 node before its pool existed).
    prod.append(node("10.0.1.20", {"nvidia-device-enable": "enable"}, {"nvidia.com/gpu": "1"}))
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["ok"], checks(report), checks(report, "warning")) == (
        0,
        True,
        [],
        ["node-in-no-pool"],
    )


def test_pool_without_nodes_is_a_warning(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    prod = [o for o in prod if not (o["kind"] == "Node" and o["metadata"]["name"] == T4_NODE)]
    prod = [o for o in prod if o["metadata"]["name"] != "nvidia-device-plugin-daemonset-q9w4m"]
    prod = [o for o in prod if o["kind"] != "Pod" or o["spec"].get("nodeName") != T4_NODE]
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report), checks(report, "warning")) == (0, [], ["pool-without-nodes"])
    assert report["pools"][1] == {"name": "t4", "nodes": []}


def test_forbidden_kind_is_a_warning_naming_the_permission_and_the_verdict_is_partial(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    code, report = verify(
        server, kubeconfig, prod, forbidden=(("events", None), ("daemonsets", "kube-system"))
    )
    # No error, but what could not be read is not "conforms": exit 1, and the report says what was skipped.
    assert (code, checks(report), report["ok"], report["partial"]) == (1, [], False, True)
    assert report["notChecked"] == [
        "plugin-config-current (get daemonsets.apps in namespace kube-system)",
        "plugin-crashloop (get daemonsets.apps in namespace kube-system)",
        "managed-plugin-drift (get daemonsets.apps in namespace kube-system)",
        "gpu-pending-pods from FailedScheduling events (list events at cluster scope)",
    ]
    messages = {f["object"]: f["message"] for f in report["findings"] if f["check"] == "permission"}
    assert set(messages) == {"events", "daemonsets.apps"}
    assert messages["events"].startswith("missing permission: list events at cluster scope")
    assert messages["daemonsets.apps"].startswith(
        "missing permission: get daemonsets.apps in namespace kube-system"
    )
    assert (
        "not checked: plugin-config-current, plugin-crashloop, managed-plugin-drift"
        in messages["daemonsets.apps"]
    )


def test_cannot_check_exits_2_with_one_line(
    server: FakeApiServer,
    kubeconfig: Path,
    prod: list[Obj],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def run(*args: str) -> tuple[int, str]:
        code = cli_main.main(["verify", *args], out=io.StringIO())
        return code, capsys.readouterr().err

    server.load(prod, forbidden=(("nodes", None),))
    code, err = run("--stack", "prod", "--kubeconfig", str(kubeconfig))
    assert code == 2 and err.count("\n") == 1 and "missing permission: list nodes at cluster scope" in err

    closed = FakeApiServer()  # bound, never started, then closed: nothing listens on its port
    dead = closed.write_kubeconfig(tmp_path / "dead")
    closed.close()
    code, err = run("--stack", "prod", "--kubeconfig", str(dead))
    assert code == 2 and err.count("\n") == 1 and "cannot reach the API server at http://127.0.0.1:" in err

    code, err = run("--stack", "prod", "--kubeconfig", str(tmp_path / "missing"))
    assert (code, err) == (2, f"verify: cannot check: --kubeconfig {tmp_path / 'missing'}: no such file\n")

    (tmp_path / "garbage").write_text("clusters: [")
    code, err = run("--stack", "prod", "--kubeconfig", str(tmp_path / "garbage"))
    assert code == 2 and err.count("\n") == 1 and "cannot load the kube config" in err

    code, err = run("--stack", "prod", "--kubeconfig", str(kubeconfig), "--context", "nope")
    assert code == 2 and err.count("\n") == 1 and "nope" in err

    code, err = run("--stack", "nosuch", "--kubeconfig", str(kubeconfig))
    assert code == 2 and err.count("\n") == 1 and "Pulumi.nosuch.yaml: no such stack file" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------------------
# Helm mode and MIG, on a stack of this test's own (the repo's staging changes under other branches)

MIG_STACK = """\
config:
  tencentcloud:region: ap-singapore
  gpushare:cluster: {id: cls-verify01, vpcId: vpc-verify01, subnetIds: [subnet-verify01], kubernetesVersion: "1.30"}
  gpushare:sharing:
    devicePlugin: {mode: helm, version: 0.17.1, managedPlugin: {action: park}}
  gpushare:pools:
    - name: h20
      gpu: H20
      instanceType: PNV6.8XLARGE128
      gpusPerNode: 1
      nodes: {min: 1, max: 1, desired: 1}
      sharing:
        mode: mig
        migLayout: {"1g.12gb": 7}
        layoutName: all-1g.12gb
        timeSlicing: {measuredMiB: 4621, measuredAt: "2025-06-01"}
"""
CHART_CHECKSUM = "5d0c2e1f" * 8


@pytest.fixture(scope="module")
def mig_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Obj]]:
    project = tmp_path_factory.mktemp("mig-project")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_DIR / name, project / name)
    shutil.copytree(
        PROJECT_DIR / "components", project / "components", ignore=shutil.ignore_patterns("__pycache__")
    )
    (project / "Pulumi.verifymig.yaml").write_text(MIG_STACK)
    manifests, labels, releases = rendered(project, "verifymig")
    (release,) = releases
    namespace = release.namespace
    # What the chart creates from these values (its fullname is the release name): the ConfigMap from
    # `config.map`, and a DaemonSet whose pods carry `checksum/config` of that ConfigMap.
    config_map = {
        "kind": "ConfigMap",
        "metadata": {"name": "nvidia-device-plugin-configs", "namespace": namespace},
        "data": dict(release.values["config"]["map"]),
    }
    selector = {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": "nvidia-device-plugin",
    }
    daemonset = daemonset_status(
        with_uid(
            "DaemonSet",
            {
                "kind": "DaemonSet",
                "metadata": {"name": "nvidia-device-plugin", "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": selector},
                    "template": {
                        "metadata": {"labels": selector, "annotations": {"checksum/config": CHART_CHECKSUM}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "nvidia-device-plugin-ctr",
                                    "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
                                }
                            ]
                        },
                    },
                },
            },
        ),
        1,
    )
    # 7 x 1g.12gb per H20; each time-sliced floor(0.9 x 11264 / 4621) = floor(2.19) = 2 -> 14 slots.
    h20 = node(
        H20_NODE,
        {**labels["gpushare-h20"], "nvidia.com/mig.config.state": "success"},
        {"nvidia.com/mig-1g.12gb": "14"},
    )
    objects, patch = split_patch(manifests)
    # TKE's DaemonSet parked by the patch: no node carries its nodeSelector, so it has no pods.
    objects += [config_map, daemonset, plugin_pod(daemonset, H20_NODE, "h7v3n"), h20, tke_daemonset(patch)]
    # NVIDIA's dcgm-exporter reports each MIG instance; idle ones use 0 MiB.
    objects += exporter_objects("dcgm", mig_gpus(H20_NODE, 1, {"1g.12gb": 7}))
    return project, objects


def test_helm_mig_cluster_conforms(
    server: FakeApiServer, kubeconfig: Path, mig_project: tuple[Path, list[Obj]]
) -> None:
    project, objects = mig_project
    code, report = verify(server, kubeconfig, copy.deepcopy(objects), stack="verifymig", project_dir=project)
    assert (code, report["findings"]) == (0, [])
    assert report["pools"] == [
        {"name": "h20", "nodes": [{"name": H20_NODE, "expectedSlots": 14, "allocatable": 14}]}
    ]


def test_mig_node_in_failed_state(
    server: FakeApiServer, kubeconfig: Path, mig_project: tuple[Path, list[Obj]]
) -> None:
    project, objects = mig_project
    objects = copy.deepcopy(objects)
    labels = find(objects, "Node", H20_NODE)["metadata"]["labels"]
    labels["nvidia.com/mig.config.state"] = "failed"
    code, report = verify(server, kubeconfig, objects, stack="verifymig", project_dir=project)
    assert (code, checks(report)) == (1, ["mig-config-state"])
    message = finding(report, "mig-config-state")["message"]
    assert "nvidia.com/mig.config.state=failed for nvidia.com/mig.config=all-1g.12gb" in message


def test_mig_node_with_another_partition(
    server: FakeApiServer, kubeconfig: Path, mig_project: tuple[Path, list[Obj]]
) -> None:
    project, objects = mig_project
    objects = copy.deepcopy(objects)
    # The GPU came up as 1 x 3g.48gb + 4 x 1g.12gb (4 x 2 = 8 slots) instead of the layout.
    find(objects, "Node", H20_NODE)["status"]["allocatable"].update(
        {"nvidia.com/mig-1g.12gb": "8", "nvidia.com/mig-3g.48gb": "1"}
    )
    code, report = verify(server, kubeconfig, objects, stack="verifymig", project_dir=project)
    assert (code, checks(report)) == (1, ["mig-config-state", "slots-allocatable"])
    # The layout all-1g.12gb plans one resource per node: nvidia.com/mig-1g.12gb.
    assert finding(report, "mig-config-state")["message"] == (
        "pool h20: advertises nvidia.com/mig-3g.48gb, which layout all-1g.12gb does not have (planned: "
        "nvidia.com/mig-1g.12gb); the node's MIG partition differs from the layout"
    )
    assert (
        "is 8, the plan gives 14 (7 instances x 2 replicas x 1 GPU(s))"
        in finding(report, "slots-allocatable")["message"]
    )


def test_helm_plugin_pod_with_an_older_chart_checksum(
    server: FakeApiServer, kubeconfig: Path, mig_project: tuple[Path, list[Obj]]
) -> None:
    project, objects = mig_project
    objects = copy.deepcopy(objects)
    find(objects, "Pod", "nvidia-device-plugin-h7v3n")["metadata"]["annotations"]["checksum/config"] = (
        "0" * 64
    )
    code, report = verify(server, kubeconfig, objects, stack="verifymig", project_dir=project)
    assert (code, checks(report)) == (1, ["plugin-config-current"])
    assert (
        "checksum/config 000000000000, the DaemonSet's template has 5d0c2e1f5d0c"
        in report["findings"][0]["message"]
    )


def test_parked_tke_plugin_running_on_a_pool_node(
    server: FakeApiServer, kubeconfig: Path, mig_project: tuple[Path, list[Obj]]
) -> None:
    project, objects = mig_project
    objects = copy.deepcopy(objects)
    # TKE reconciled its DaemonSet back to the original: it schedules onto the H20 node again.
    objects = [o for o in objects if o["metadata"]["name"] != TKE_DS]
    tke = tke_daemonset(None)
    objects += [tke, plugin_pod(tke, H20_NODE, "b2c4d")]
    code, report = verify(server, kubeconfig, objects, stack="verifymig", project_dir=project)
    assert (code, checks(report)) == (1, ["managed-plugin-drift", "managed-plugin-drift"])
    messages = " | ".join(f["message"] for f in report["findings"])
    assert (
        "nodeSelector (wants gpushare.io/managed-plugin=parked, has nvidia-device-enable=enable)" in messages
    )
    assert f"TKE's device plugin runs on node {H20_NODE} of pool h20" in messages


# --------------------------------------------------------------------------------------------------
# Pure pieces and the fake itself


def test_checks_run_on_a_snapshot_without_http(prod: list[Obj]) -> None:
    """The checks need no server: the same seed cluster as plain objects."""
    stack = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod")
    nodes = tuple(o for o in prod if o["kind"] == "Node")
    for n in nodes:
        if n["metadata"]["name"] == T4_NODE:
            n["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    report = run_checks(expected_cluster(stack), ClusterSnapshot(now=NOW, nodes=nodes))
    assert [f.check for f in report.errors] == ["slots-allocatable"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (61, "1m 1s"), (3600, "1h 0m"), (28 * 86400 + 3 * 3600 + 59, "28d 3h")],
)
def test_age(seconds: int, text: str) -> None:
    assert age(seconds) == text


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("a=1", True),
        ("a==1,b=2", True),
        ("a!=1", False),
        ("c", False),
        ("!c", True),
        ("a in (1,3)", True),
        ("b notin (2)", False),
        ("a in (3), b=2", False),
    ],
)
def test_fake_label_selectors(selector: str, matches: bool) -> None:
    assert label_selector_matches(selector, {"a": "1", "b": "2"}) is matches


def test_fake_refuses_writes_and_answers_like_an_api_server(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    server.load(prod)
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(api)
    assert [n.metadata.name for n in core.list_node(label_selector="gpushare.io/pool").items] == [
        L20_NODE,
        T4_NODE,
    ]
    pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={T4_NODE},status.phase=Running")
    assert sorted(p.metadata.name for p in pods.items) == [
        "nlp-infer-7d4b9c-1",
        "nvidia-device-plugin-daemonset-q9w4m",
        "nvidia-gpu-exporter-n12",
    ]
    with pytest.raises(ApiException) as bad_field:
        core.list_namespaced_pod("kube-system", field_selector="spec.priority=1")
    assert bad_field.value.status == 400
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("nope", "kube-system")
    assert missing.value.status == 404 and json.loads(missing.value.body)["reason"] == "NotFound"
    with pytest.raises(ApiException) as write:
        core.delete_node(L20_NODE)
    assert write.value.status == 405
    assert server.writes == [("DELETE", f"/api/v1/nodes/{L20_NODE}")]
    server.writes.clear()
    api.close()


@pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not on PATH (only a sanity check of the fake)"
)
def test_kubectl_sees_the_same_nodes(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], tmp_path: Path
) -> None:
    server.load(prod)
    columns = r"NAME:.metadata.name,GPU-ALLOC:.status.allocatable.nvidia\.com/gpu"  # the seed's check
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", f"custom-columns={columns}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["NAME", "GPU-ALLOC"]
    assert [L20_NODE, "8"] in rows and [T4_NODE, "3"] in rows and ["10.0.0.1", "<none>"] in rows
    assert len(rows) == 9
    assert server.writes == []


# --------------------------------------------------------------------------------------------------
# What each pool's nodes should advertise, for the shapes the seed did not have


def one_pool_stack(pool: dict[str, Any], mode: str = "daemonsets") -> Any:
    return from_config_values(
        {
            "gpushare:cluster": {
                "id": "cls-a1",
                "vpcId": "vpc-a1",
                "subnetIds": ["subnet-a1"],
                "kubernetesVersion": "1.30",
            },
            "gpushare:sharing": {"devicePlugin": {"mode": mode}},
            "gpushare:pools": [{"name": "p", "nodes": {"min": 1, "max": 1, "desired": 1}, **pool}],
        },
        stack="shapes",
        source="Pulumi.shapes.yaml",
    )


@pytest.mark.parametrize(
    ("pool", "resources"),
    [
        # 4 L20 per node, floor(0.9 x 46068 / 4621) = 8 replicas each: 32.
        (
            {
                "gpu": "L20",
                "instanceType": "X.L20x4",
                "gpusPerNode": 4,
                "sharing": {"mode": "time-slicing", "measuredMiB": 4621},
            },
            {"nvidia.com/gpu": 32},
        ),
        # floor(0.9 x 15360 / 9000) = floor(1.54) = 1: sharing off, one slot per GPU.
        (
            {
                "gpu": "T4",
                "instanceType": "GN7.2XLARGE32",
                "sharing": {"mode": "time-slicing", "measuredMiB": 9000},
            },
            {"nvidia.com/gpu": 1},
        ),
        (
            {"gpu": "L20", "instanceType": "X.L20x2", "gpusPerNode": 2, "sharing": {"mode": "exclusive"}},
            {"nvidia.com/gpu": 2},
        ),
        # MIG single (one profile, not time-sliced): each instance is an nvidia.com/gpu.
        (
            {
                "gpu": "H20",
                "instanceType": "X.H20",
                "gpusPerNode": 1,
                "sharing": {"mode": "mig", "migLayout": {"1g.12gb": 7}},
            },
            {"nvidia.com/gpu": 7},
        ),
        # MIG mixed, two H20 per node: 4 x 1g.12gb and 1 x 2g.24gb per GPU.
        (
            {
                "gpu": "H20",
                "instanceType": "X.H20x2",
                "gpusPerNode": 2,
                "sharing": {"mode": "mig", "migLayout": {"1g.12gb": 4, "2g.24gb": 1}},
            },
            {"nvidia.com/mig-1g.12gb": 8, "nvidia.com/mig-2g.24gb": 2},
        ),
    ],
)
def test_per_node_resources(pool: dict[str, Any], resources: dict[str, int]) -> None:
    (expected,) = expected_cluster(one_pool_stack(pool)).pools
    assert expected.per_node_resources == resources


def test_helm_gpu_node_outside_the_pools_runs_on_the_fallback_key() -> None:
    stack = one_pool_stack(
        {"gpu": "L20", "instanceType": "X.L20", "gpusPerNode": 1, "sharing": {"mode": "exclusive"}}, "helm"
    )
    stray = node("10.0.9.9", {}, {"nvidia.com/gpu": "1"})
    report = run_checks(expected_cluster(stack), ClusterSnapshot(now=NOW, nodes=(stray,)))
    assert [(f.check, f.severity) for f in report.findings] == [
        ("node-in-no-pool", "warning"),
        ("pool-without-nodes", "warning"),
    ]
    assert "serves it the fallback key `any`" in report.findings[0].message


def test_missing_plugin_daemonset(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    prod = [o for o in prod if not o["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-l20")]
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["plugin-config-current"])
    found = finding(report, "plugin-config-current")
    assert found["object"] == "daemonset/kube-system/nvidia-device-plugin-daemonset-l20"
    assert found["message"].startswith("not found: pool(s) l20 have no device plugin")


def test_statefulset_update_frozen_behind_a_gpu_pending_pod() -> None:
    stack = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod")
    expected = expected_cluster(stack)
    statefulset = {
        "kind": "StatefulSet",
        "metadata": {"name": "asr", "namespace": "speech"},
        "spec": {"replicas": 2},
        "status": {"currentRevision": "asr-6b9f", "updateRevision": "asr-7c4d", "updatedReplicas": 0},
    }
    pod = {
        "metadata": {
            "name": "asr-1",
            "namespace": "speech",
            "uid": "u1",
            "creationTimestamp": stamp(timedelta(hours=5, minutes=2)),
            "ownerReferences": [{"kind": "StatefulSet", "name": "asr", "controller": True}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": SCHEDULER_MESSAGE,
                }
            ],
        },
    }
    snapshot = ClusterSnapshot(
        now=NOW,
        nodes=(),
        objects={ObjectRef("StatefulSet", "speech", "asr"): statefulset},
        pending_pods=(pod,),
    )
    report = run_checks(expected, snapshot)
    assert [(f.check, f.object) for f in report.errors] == [
        ("gpu-pending-pods", "pod/speech/asr-1"),
        ("rollout-stuck", "statefulset/speech/asr"),
    ]
    assert report.errors[0].message.startswith("Pending for 5h 2m:")
    assert "rolling update to asr-7c4d has not finished" in report.errors[1].message


def test_the_documented_cluster_role_allows_every_request_verify_sends(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    readme = (PROJECT_DIR / "docs" / "verify.md").read_text()
    block = readme.split("kind: ClusterRole\n", 1)[1].split("```", 1)[0]
    role = yaml.safe_load("kind: ClusterRole\n" + block)
    allowed = {
        (verb, group, resource)
        for rule in role["rules"]
        for verb in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert not any(verb in {"create", "update", "patch", "delete", "*"} for verb, _, _ in allowed)
    freeze_rollout(prod)  # so that the owners of a pending pod are read too
    verify(server, kubeconfig, prod)
    sent = set()
    for _, path in server.requests:
        match = re.match(
            r"^/(?:api/v1|apis/(?P<group>[a-z.]+)/v1)(?:/namespaces/[^/]+)?/(?P<plural>[a-z]+)(?P<name>/[^/?]+)?"
            r"(?:/(?P<subresource>[a-z]+)/)?",
            path,
        )
        assert match is not None, path
        resource = f"{match['plural']}/{match['subresource']}" if match["subresource"] else match["plural"]
        sent.add(("get" if match["name"] else "list", match["group"] or "", resource))
    assert sent == {
        ("list", "", "nodes"),
        ("list", "", "pods"),
        ("list", "", "events"),
        ("get", "", "configmaps"),
        ("get", "apps", "daemonsets"),
        ("get", "apps", "replicasets"),
        ("get", "apps", "deployments"),
        # workload-over-slots and rollout-stuck-on-surge read every Deployment and StatefulSet.
        ("list", "apps", "deployments"),
        ("list", "apps", "statefulsets"),
        # memory-budget: the exporter pages through the pod proxy.
        ("get", "", "pods/proxy"),
    }
    assert sent <= allowed


def test_a_pod_mounting_an_older_content_addressed_config_map() -> None:
    """The `config-map-name` rule (configs published under content-addressed names, as the GPU Operator
    mode does): a pod that mounts another name than the current one runs an older config."""
    stack = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod")
    current = ObjectRef("ConfigMap", "gpu-operator", "device-plugin-config-7f3a9c")
    daemonset_ref = ObjectRef("DaemonSet", "gpu-operator", "nvidia-device-plugin-daemonset")
    expected = dataclasses.replace(
        expected_cluster(stack),
        config_map=current,
        workloads=(PluginWorkload(daemonset_ref, ("l20", "t4"), "config-map-name"),),
    )
    daemonset = {"metadata": {"name": daemonset_ref.name, "namespace": "gpu-operator"}, "spec": {}}

    def pod(name: str, config: str) -> Obj:
        return {
            "metadata": {"name": name, "namespace": "gpu-operator"},
            "spec": {"nodeName": L20_NODE, "volumes": [{"name": "config", "configMap": {"name": config}}]},
            "status": {"phase": "Running"},
        }

    snapshot = ClusterSnapshot(
        now=NOW,
        nodes=(),
        objects={daemonset_ref: daemonset},
        daemonset_pods={daemonset_ref: (pod("new", current.name), pod("old", "device-plugin-config-1b2c3d"))},
    )
    report = run_checks(expected, snapshot)
    assert [(f.check, f.object) for f in report.errors] == [("plugin-config-current", "pod/gpu-operator/old")]
    assert (
        "mounts ConfigMap device-plugin-config-1b2c3d, the current config is gpu-operator/device-plugin-config-7f3a9c"
        in report.errors[0].message
    )


@pytest.fixture(scope="module")
def staging_operator() -> list[Obj]:
    """Staging on the GPU Operator, as `pulumi up` leaves it: the render's objects, the operator's plugin
    DaemonSet mounting the ConfigMap the Release values name, one H20 and one L20 node, TKE's DaemonSet
    untouched (the pools opt out of it)."""
    manifests, labels, releases = rendered(PROJECT_DIR, "staging")
    (release,) = releases
    config_name = release.values["devicePlugin"]["config"]["name"]
    assert any(m["kind"] == "ConfigMap" and m["metadata"]["name"] == config_name for m in manifests)
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
        2,
    )
    # H20 (PNV6.16XLARGE640, 4 GPUs), each 6 x 1g.12gb at floor(0.9 x 11264 / 4621) = 2 and 1 x 1g.24gb at
    # floor(0.9 x 22138 / 4621) = 4: 4 x 12 = 48 mig-1g.12gb and 4 x 4 = 16 mig-1g.24gb. L20: 8.
    h20 = node(
        H20_NODE,
        {**labels["gpushare-h20"], "nvidia.com/mig.config.state": "success"},
        {"nvidia.com/mig-1g.12gb": "48", "nvidia.com/mig-1g.24gb": "16"},
    )
    l20 = node(L20_NODE, labels["gpushare-l20"], {"nvidia.com/gpu": "8"})
    return [
        *(m for m in manifests if m["kind"] != "Namespace"),  # verify reads none; the fake serves none
        operand,
        plugin_pod(operand, H20_NODE, "h20aa"),
        plugin_pod(operand, L20_NODE, "l20bb"),
        h20,
        l20,
        tke_daemonset(None),
        # The operator's dcgm-exporter on both nodes: idle MIG instances, the L20 at one pod's memory.
        *exporter_objects(
            "dcgm",
            [*mig_gpus(H20_NODE, 4, {"1g.12gb": 6, "1g.24gb": 1}), seed_gpus(l20_used=4608)[0]],
        ),
    ]


def test_gpu_operator_cluster_conforms_and_a_pod_on_an_older_config_is_stale(
    server: FakeApiServer, kubeconfig: Path, staging_operator: list[Obj]
) -> None:
    objects = copy.deepcopy(staging_operator)
    code, report = verify(server, kubeconfig, objects, stack="staging")
    assert (code, report["findings"]) == (0, [])
    assert report["pools"] == [
        {"name": "h20", "nodes": [{"name": H20_NODE, "expectedSlots": 64, "allocatable": 64}]},
        {"name": "l20", "nodes": [{"name": L20_NODE, "expectedSlots": 8, "allocatable": 8}]},
    ]
    # The L20 plugin pod still mounts the ConfigMap of an earlier measurement: it serves the old replicas.
    stale = find(objects, "Pod", "nvidia-device-plugin-daemonset-l20bb")
    stale["spec"]["volumes"][0]["configMap"]["name"] = "gpushare-device-plugin-config-0123456789"
    code, report = verify(server, kubeconfig, objects, stack="staging")
    assert (code, checks(report)) == (1, ["plugin-config-current"])
    assert "mounts ConfigMap gpushare-device-plugin-config-0123456789" in report["findings"][0]["message"]


def test_opted_out_pool_node_without_the_disable_label_or_with_tke_plugin_is_drift() -> None:
    # helm mode: managedPlugin defaults to optOut, so every pool node must say nvidia-device-enable=disable.
    stack = one_pool_stack(
        {"gpu": "L20", "instanceType": "X.L20", "gpusPerNode": 1, "sharing": {"mode": "exclusive"}}, "helm"
    )
    expected = expected_cluster(stack)
    assert expected.managed.action == "optOut"
    tke = {"kind": "DaemonSet", "metadata": {"name": TKE_DS, "namespace": "kube-system"}, "spec": {}}

    def drift(switch: str | None, tke_pods: int) -> list[str]:
        labels = {"gpushare.io/pool": "p", **({"nvidia-device-enable": switch} if switch else {})}
        pods = tuple(
            {
                "kind": "Pod",
                "metadata": {"name": f"{TKE_DS}-x{i}", "namespace": "kube-system"},
                "spec": {"nodeName": "10.0.1.1"},
            }
            for i in range(tke_pods)
        )
        snapshot = ClusterSnapshot(
            now=NOW,
            nodes=(node("10.0.1.1", labels, {"nvidia.com/gpu": "1"}),),
            objects={expected.managed.daemonset: tke},
            daemonset_pods={expected.managed.daemonset: pods},
        )
        report = run_checks(expected, snapshot)
        return [f.message for f in report.findings if f.check == "managed-plugin-drift"]

    assert drift("disable", 0) == []
    (enabled,) = drift("enable", 0)
    assert "has nvidia-device-enable=enable instead of disable" in enabled
    (unlabelled,) = drift(None, 0)
    assert "has nvidia-device-enable=(none) instead of disable" in unlabelled
    (running,) = drift("disable", 1)
    assert "TKE's device plugin runs on node 10.0.1.1 of pool p" in running
    assert "re-applies the node pool's label" in running
