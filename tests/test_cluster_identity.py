"""`verify` and `measure` judge only the cluster of their stack (issue 34): gpushare's objects carry
`gpushare.io/stack` and `gpushare.io/cluster` (the render: the plugin ConfigMap, gpushare's plugin
DaemonSets, the patch on TKE's DaemonSet; the GPU Operator's ConfigMaps); a cluster whose objects name
another stack or cluster is refused, exit 2, one line naming both, before any finding or memory read; a
cluster where none carries them is said to be unconfirmed, and checked.

The prod cluster is test_verify's: built from the prod render, so its objects carry what `pulumi up`
would put there (stack prod, cluster cls-prod0001, Pulumi.prod.yaml).
"""

from __future__ import annotations

import copy
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
import test_verify
from conftest import PROJECT_DIR
from test_verify import find, rendered

from fake_cluster.apiserver import FakeApiServer
from gpushare import kube_names
from gpushare.cli import main as cli_main

Obj = dict[str, Any]
server = test_verify.server
kubeconfig = test_verify.kubeconfig
prod_render = test_verify.prod_render
prod = test_verify.prod
CONFIG_MAP = ("ConfigMap", "time-slicing-config")
L20_DAEMONSET = ("DaemonSet", "nvidia-device-plugin-daemonset-l20")
TKE_DAEMONSET = ("DaemonSet", "nvidia-device-plugin-daemonset")
CARRIERS = (CONFIG_MAP, L20_DAEMONSET, TKE_DAEMONSET)


def annotations(objects: list[Obj], kind: str, name: str) -> dict[str, str]:
    return find(objects, kind, name)["metadata"].setdefault("annotations", {})


def run(server: FakeApiServer, kubeconfig: Path, objects: list[Obj], command: str, *extra: str) -> int:
    server.load(objects)
    server.requests.clear()
    args = [command, "--stack", "prod", "--kubeconfig", str(kubeconfig), "--dir", str(PROJECT_DIR), *extra]
    code = cli_main.main(args, out=io.StringIO())
    assert server.writes == []
    return code


def test_the_prod_render_names_its_stack_and_cluster(prod_render: tuple[list[Obj], Any]) -> None:
    manifests = prod_render[0]
    carried = sorted(
        (m["kind"], m["metadata"]["name"])
        for m in manifests
        if (m["metadata"].get("annotations") or {}).get(kube_names.ANNOTATION_STACK) == "prod"
        and m["metadata"]["annotations"].get(kube_names.ANNOTATION_CLUSTER) == "cls-prod0001"
    )
    # nvidia-device-plugin-daemonset: the patch on TKE's DaemonSet (fake_cluster.objects.split_patch).
    assert carried == [
        ("ConfigMap", "time-slicing-config"),
        ("DaemonSet", "nvidia-device-plugin-daemonset"),
        ("DaemonSet", "nvidia-device-plugin-daemonset-l20"),
    ]


@pytest.mark.parametrize("command", ["verify", "measure"])
@pytest.mark.parametrize("carrier", CARRIERS)
@pytest.mark.parametrize(
    ("stack", "cluster"),
    [("staging", "cls-prod0001"), ("prod", "cls-stag0001"), ("staging", "cls-stag0001")],
)
def test_a_cluster_of_another_stack_is_refused_before_any_finding(
    server: FakeApiServer,
    kubeconfig: Path,
    prod: list[Obj],
    capsys: pytest.CaptureFixture[str],
    command: str,
    carrier: tuple[str, str],
    stack: str,
    cluster: str,
) -> None:
    # One object naming another is enough, even when the others name prod.
    annotations(prod, *carrier).update(
        {kube_names.ANNOTATION_STACK: stack, kube_names.ANNOTATION_CLUSTER: cluster}
    )
    # A finding verify would report on the prod cluster, had it judged it.
    find(prod, "Node", test_verify.T4_NODE)["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    assert run(server, kubeconfig, prod, command) == 2
    out, err = capsys.readouterr()
    ref = f"{carrier[0].lower()}/kube-system/{carrier[1]}"
    assert (out, err) == (
        "",
        f"{command}: refused: the cluster at {server.url} belongs to stack {stack} (cluster {cluster}) by the "
        f"annotations of {ref}, not to stack prod (cluster cls-prod0001): nothing checked; choose the right "
        "--kubeconfig/--context or --stack\n",
    )
    # Nothing was read past the identity: no memory page, no node's pods.
    assert not any("/proxy/" in path or "spec.nodeName" in path for _, path in server.requests)


def test_verify_of_staging_against_the_prod_cluster_is_refused(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], capsys: pytest.CaptureFixture[str]
) -> None:
    # The case: `verify --stack staging` pointed at prod. Staging's expected objects are the GPU
    # Operator's; TKE's DaemonSet, patched by prod, names prod.
    server.load(prod)
    args = ["verify", "--stack", "staging", "--kubeconfig", str(kubeconfig), "--dir", str(PROJECT_DIR)]
    assert cli_main.main(args, out=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        f"verify: refused: the cluster at {server.url} belongs to stack prod (cluster cls-prod0001) by the "
        "annotations of daemonset/kube-system/nvidia-device-plugin-daemonset, not to stack staging (cluster "
        "cls-stag0001): nothing checked; choose the right --kubeconfig/--context or --stack\n"
    )


@pytest.mark.parametrize("value", ["\x1b[31mprod\x1b[0m", "p" * 300])
def test_an_annotation_is_shown_escaped_and_bounded(
    server: FakeApiServer,
    kubeconfig: Path,
    prod: list[Obj],
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    annotations(prod, *CONFIG_MAP)[kube_names.ANNOTATION_STACK] = value
    assert run(server, kubeconfig, prod, "verify") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
    shown = "?[31mprod?[0m" if value.startswith("\x1b") else "p" * 80 + "..."
    assert f"belongs to stack {shown} (cluster cls-prod0001)" in err


@pytest.mark.parametrize("command", ["verify", "measure"])
def test_a_cluster_without_gpushare_annotations_is_unconfirmed_and_checked(
    server: FakeApiServer,
    kubeconfig: Path,
    prod: list[Obj],
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    for carrier in CARRIERS:
        for key in (kube_names.ANNOTATION_STACK, kube_names.ANNOTATION_CLUSTER):
            annotations(prod, *carrier).pop(key, None)
    assert run(server, kubeconfig, prod, command) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"{command}: cannot confirm that the cluster at {server.url} is stack prod (cluster cls-prod0001): "
        "none of gpushare's objects there carries gpushare.io/stack (not applied yet, applied by an older "
        "gpushare, or not readable)"
    )


def test_the_operator_mode_configmaps_carry_the_identity(tmp_path: Path) -> None:
    # Staging (gpu-operator mode): the content-addressed ConfigMaps verify reads carry it.
    manifests, _, _ = rendered(PROJECT_DIR, "staging")
    carried = sorted(
        m["metadata"]["name"].rsplit("-", 1)[0]
        for m in manifests
        if m["kind"] == "ConfigMap"
        and (m["metadata"].get("annotations") or {}).get(kube_names.ANNOTATION_CLUSTER) == "cls-stag0001"
        and m["metadata"]["annotations"].get(kube_names.ANNOTATION_STACK) == "staging"
    )
    assert carried == ["gpushare-device-plugin-config", "gpushare-mig-parted-config"]


def test_a_matching_prod_cluster_prints_no_note(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(server, kubeconfig, copy.deepcopy(prod), "verify") == 0
    assert capsys.readouterr().err == ""


def test_prod_cluster_keeps_conforming_from_a_copied_project(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], tmp_path: Path
) -> None:
    # The annotation names the stack, not the directory: a checkout elsewhere is the same stack.
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml"):
        shutil.copy(PROJECT_DIR / name, tmp_path / name)
    server.load(prod)
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--dir", str(tmp_path)]
    assert cli_main.main(args, out=io.StringIO()) == 0


CHART_DAEMONSET: Obj = {
    "kind": "DaemonSet",
    "metadata": {"name": "nvidia-device-plugin", "namespace": "nvidia-device-plugin", "annotations": {}},
    "spec": {"template": {"metadata": {"annotations": {"checksum/config": "5d0c2e1f"}}}},
}


@pytest.mark.parametrize(
    ("stack", "cluster", "refused"),
    [("dev", "cls-dev0001", False), ("prod", "cls-dev0001", True), ("dev", "cls-prod0001", True)],
)
def test_a_helm_stacks_identity_is_read_from_the_charts_pod_template(
    stack: str, cluster: str, refused: bool
) -> None:
    # Helm mode with managedPlugin optOut (dev): the chart's DaemonSet is the only object gpushare shapes,
    # through podAnnotations.
    from gpushare.verify.expectations import ObjectRef
    from gpushare.verify.identity import Identity, OtherCluster, confirm_identity

    daemonset = copy.deepcopy(CHART_DAEMONSET)
    daemonset["spec"]["template"]["metadata"]["annotations"].update(
        {kube_names.ANNOTATION_STACK: stack, kube_names.ANNOTATION_CLUSTER: cluster}
    )
    ref = ObjectRef("DaemonSet", "nvidia-device-plugin", "nvidia-device-plugin")
    ours = Identity("dev", "cls-dev0001")
    if not refused:
        assert confirm_identity(ours, {ref: daemonset}, "https://api") is None
        return
    with pytest.raises(OtherCluster) as raised:
        confirm_identity(ours, {ref: daemonset}, "https://api")
    assert str(raised.value) == (
        f"the cluster at https://api belongs to stack {stack} (cluster {cluster}) by the pod template's "
        "annotations of daemonset/nvidia-device-plugin/nvidia-device-plugin, not to stack dev (cluster "
        "cls-dev0001): nothing checked; choose the right --kubeconfig/--context or --stack"
    )
