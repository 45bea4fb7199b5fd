"""The way back from `adopt`, by the real CLI of make engine against a real API server (make test-engine):
prod is brought up (`managedPlugin: adopt`), its stack file then says `{action: optOut, handBack: true}`
(docs/tke-device-plugin.md, step 1), and a second `pulumi up` must leave TKE's own
`kube-system/nvidia-device-plugin-daemonset` as TKE shipped it; a preview then expects no changes, and a
`pulumi destroy` changes nothing of TKE's DaemonSet any more (the hand-back patch is retained).

TKE's DaemonSet is fake_cluster's copy of it as the seed recorded it, created under Helm's field manager;
no controller runs (test_engine_up.controllers_stand_in marks rollouts done and finishes deletions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from engine_api_server import ADMIN_USER, ApiServer
from engine_stack import EngineProject
from kubernetes import dynamic
from test_engine_up import cluster_with_tkes_daemonset

from fake_cluster.objects import TKE_DS, TKE_ORIGINAL_ARGS

pytestmark = pytest.mark.engine

STACK = "prod"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, dynamic.DynamicClient]]:
    with cluster_with_tkes_daemonset(tmp_path_factory.mktemp("apiserver-hand-back")) as running:
        yield running


def _tke(api: dynamic.DynamicClient) -> dict[str, Any]:
    daemonsets = api.resources.get(api_version="apps/v1", kind="DaemonSet")
    return dict(daemonsets.get(name=TKE_DS, namespace="kube-system").to_dict())


def _up(engine: EngineProject) -> None:
    """`up` of the whole stack: the node pools too, which the named tencentcloud stand-in creates (it
    invents their ids). The hand-back waits for the pools (they must say `disable` first), so a `--target`
    of the Kubernetes half alone would leave it depending on pools that were never created."""
    result = engine.pulumi("up", "--yes", "--skip-preview", "--stack", STACK)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.fixture(scope="module")
def handed_back(
    tmp_path_factory: pytest.TempPathFactory, cluster: tuple[ApiServer, dynamic.DynamicClient]
) -> tuple[EngineProject, dict[str, Any]]:
    """(the project, TKE's DaemonSet before gpushare)."""
    server, api = cluster
    original = _tke(api)
    root = tmp_path_factory.mktemp("engine-hand-back")
    engine = EngineProject(PROJECT_DIR, root)
    engine.set_up([STACK])
    kubeconfig = server.kubeconfig(ADMIN_USER, root / "admin.kubeconfig").read_text()
    engine.must("config", "set", "--secret", "--stack", STACK, "gpushare:kubeconfig", kubeconfig)
    _up(engine)
    adopted = _tke(api)["spec"]["template"]["spec"]
    assert adopted["nodeSelector"] == {
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "t4",
    }
    # Step 1 of docs/tke-device-plugin.md: the stack file (its secret kubeconfig kept) says optOut + handBack.
    stack_file = engine.copy / f"Pulumi.{STACK}.yaml"
    document = yaml.safe_load(stack_file.read_text())
    document["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {
        "action": "optOut",
        "handBack": True,
    }
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
    _up(engine)
    return engine, original


def test_the_hand_back_leaves_tkes_daemonset_as_tke_shipped_it(
    handed_back: tuple[EngineProject, dict[str, Any]],
    cluster: tuple[ApiServer, dynamic.DynamicClient],
) -> None:
    _, original = handed_back
    _, api = cluster
    now = _tke(api)
    assert now["spec"] == original["spec"]
    pod = now["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia-device-enable": "enable"}
    (container,) = pod["containers"]
    assert container["args"] == TKE_ORIGINAL_ARGS
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/var/lib/kubelet/device-plugins"]
    assert [v["name"] for v in pod["volumes"]] == ["device-plugin"]
    assert "annotations" not in now["spec"]["template"]["metadata"]


def test_after_the_hand_back_a_preview_expects_no_changes(
    handed_back: tuple[EngineProject, dict[str, Any]],
) -> None:
    engine, _ = handed_back
    result = engine.pulumi("preview", "--expect-no-changes", "--stack", STACK)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_destroy_after_the_hand_back_changes_nothing_of_tkes(
    handed_back: tuple[EngineProject, dict[str, Any]], cluster: tuple[ApiServer, dynamic.DynamicClient]
) -> None:
    """prod protects its node pools (`protectPools`): the destroy deletes gpushare's Kubernetes objects,
    refuses the two pools by name, and leaves TKE's DaemonSet as handed back (its patch is retained)."""
    engine, original = handed_back
    _, api = cluster
    result = engine.pulumi("destroy", "--yes", "--skip-preview", "--stack", STACK)
    assert result.returncode != 0
    refused = sorted(
        line.split('"')[1].rsplit("::", 1)[1]
        for line in result.stdout.splitlines()
        if "**deleting failed** error: resource" in line
    )
    assert refused == ["gpushare-l20-pool", "gpushare-t4-pool"]
    assert result.stdout.count("because it is protected") == 2
    assert _tke(api)["spec"] == original["spec"]
    configmaps = api.resources.get(api_version="v1", kind="ConfigMap")
    # gpushare's time-slicing-config is gone; the API server's own ConfigMap stays.
    assert [c.metadata.name for c in configmaps.get(namespace="kube-system").items] == [
        "kube-apiserver-legacy-service-account-token-tracking"
    ]
