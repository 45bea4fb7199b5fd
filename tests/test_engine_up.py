"""`pulumi up`, `preview --expect-no-changes` and `destroy` of prod's Kubernetes resources by the real CLI of
make engine, against a real API server (make test-engine): TKE's own `kube-system/nvidia-device-plugin-
daemonset` is created first (fake_cluster's copy of it as the seed found it, under Helm's field manager),
then prod (`managedPlugin: adopt`) is brought up with `gpushare:kubeconfig` (a secret) naming the server.

Node pools need the cloud: `--target` names the Kubernetes provider, its resources and their component
parents (the tencentcloud stand-in is never asked to create anything). No controller runs in the API server;
a small stand-in marks each DaemonSet's rollout observed (no pods: desired 0) so that the provider's await
of a DaemonSet returns, and finishes a foreground deletion as the garbage collector would (no dependents).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR, pinned_charts
from engine_api_server import ADMIN_USER, ENGINE_BIN, ApiServer, running_api_server
from engine_stack import EngineProject
from kubernetes import dynamic

from fake_cluster.objects import TKE_DS, TKE_ORIGINAL_ARGS, tke_daemonset
from gpushare.offline.render import render_stack

pytestmark = pytest.mark.engine

STACK = "prod"
FIELD_MANAGER = "gpushare-tke-device-plugin"


def _finish_foreground_deletion(resource: Any, item: Any) -> None:
    # The garbage collector's part of a foreground deletion: nothing here has dependents.
    resource.patch(
        body={"metadata": {"finalizers": None}},
        name=item.metadata.name,
        namespace=item.metadata.namespace,
        content_type="application/merge-patch+json",
    )


def _observe_rollout(daemonsets: Any, item: Any) -> None:
    status = {
        "observedGeneration": item.metadata.generation,
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
        "updatedNumberScheduled": 0,
        "numberAvailable": 0,
    }
    daemonsets.status.patch(
        body={"status": status},
        name=item.metadata.name,
        namespace=item.metadata.namespace,
        content_type="application/merge-patch+json",
    )


@contextlib.contextmanager
def controllers_stand_in(api: dynamic.DynamicClient) -> Iterator[None]:
    """Every DaemonSet's status says its latest generation is rolled out on no nodes; an object deleted in
    the foreground (the provider deletes so) loses its finalizer, as the garbage collector would."""
    daemonsets = api.resources.get(api_version="apps/v1", kind="DaemonSet")
    configmaps = api.resources.get(api_version="v1", kind="ConfigMap")
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.3):
            with contextlib.suppress(Exception):  # a conflict or a vanished object: next round
                for resource in (daemonsets, configmaps):
                    for item in resource.get().items:
                        if item.metadata.deletionTimestamp and item.metadata.finalizers:
                            _finish_foreground_deletion(resource, item)
                for item in daemonsets.get().items:
                    observed = item.status.observedGeneration if item.status else None
                    if not item.metadata.deletionTimestamp and observed != item.metadata.generation:
                        _observe_rollout(daemonsets, item)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _tke_daemonset_as_shipped() -> dict[str, Any]:
    obj = tke_daemonset(None)
    metadata = {k: v for k, v in obj["metadata"].items() if k not in {"uid"}}
    return {"apiVersion": "apps/v1", **{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}


@contextlib.contextmanager
def cluster_with_tkes_daemonset(state: Path) -> Iterator[tuple[ApiServer, dynamic.DynamicClient]]:
    """A loopback API server holding TKE's DaemonSet as shipped (under Helm's field manager), with the
    controllers' stand-in running."""
    missing = [tool for tool in ("etcd", "kube-apiserver") if not (ENGINE_BIN / tool).is_file()]
    if missing:
        pytest.fail(f"not in .engine/bin: {', '.join(missing)}; run make engine")
    with running_api_server(state) as server:
        api = server.dynamic_client()
        api.resources.get(api_version="apps/v1", kind="DaemonSet").create(
            body=_tke_daemonset_as_shipped(), namespace="kube-system", field_manager="helm"
        )
        with controllers_stand_in(api):
            yield server, api


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, dynamic.DynamicClient]]:
    with cluster_with_tkes_daemonset(tmp_path_factory.mktemp("apiserver-up")) as running:
        yield running


@pytest.fixture(scope="module")
def engine(
    tmp_path_factory: pytest.TempPathFactory, cluster: tuple[ApiServer, dynamic.DynamicClient]
) -> EngineProject:
    server, _ = cluster
    root = tmp_path_factory.mktemp("engine-up")
    project = EngineProject(PROJECT_DIR, root)
    project.set_up([STACK])
    kubeconfig = server.kubeconfig(ADMIN_USER, root / "admin.kubeconfig").read_text()
    project.must("config", "set", "--secret", "--stack", STACK, "gpushare:kubeconfig", kubeconfig)
    return project


def _kubernetes_targets(engine: EngineProject) -> list[str]:
    """The URNs of a preview's Kubernetes provider, its resources and every component: all but the cloud's."""
    document, _ = engine.preview(STACK)
    assert document["exitCode"] == 0, document.get("diagnostics")
    return [
        step["urn"]
        for step in document["steps"]
        if not step["newState"]["type"].startswith(("tencentcloud:", "pulumi:providers:tencentcloud"))
    ]


@pytest.fixture(scope="module")
def brought_up(engine: EngineProject) -> list[str]:
    targets = _kubernetes_targets(engine)
    args = [arg for urn in targets for arg in ("--target", urn)]
    engine.must("up", "--yes", "--skip-preview", "--stack", STACK, *args)
    return targets


def _tke(api: dynamic.DynamicClient) -> Any:
    return api.resources.get(api_version="apps/v1", kind="DaemonSet").get(
        name=TKE_DS, namespace="kube-system"
    )


def _rendered_manifests(tmp_path: Path) -> list[dict[str, Any]]:
    pinned_charts()
    result = render_stack(PROJECT_DIR, STACK, tmp_path / STACK)
    documents = []
    for path in sorted((result.out_dir / "manifests").rglob("*.yaml")):
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def test_up_creates_the_rendered_objects(
    brought_up: list[str], cluster: tuple[ApiServer, dynamic.DynamicClient], tmp_path: Path
) -> None:
    _, api = cluster
    for manifest in _rendered_manifests(tmp_path):
        if manifest["kind"] == "DaemonSet" and manifest["metadata"]["name"] == TKE_DS:
            continue  # the patch of TKE's DaemonSet: below
        live = (
            api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
            .get(name=manifest["metadata"]["name"], namespace=manifest["metadata"].get("namespace"))
            .to_dict()
        )
        for key in ("data", "spec"):
            if key in manifest:
                assert _subset(manifest[key], live[key]), (
                    manifest["kind"],
                    manifest["metadata"]["name"],
                    key,
                )
        assert manifest["metadata"].get("labels", {}).items() <= live["metadata"].get("labels", {}).items()


def _subset(rendered: Any, live: Any) -> bool:
    """Every value the render sets is the live one (the API server adds its defaults)."""
    if isinstance(rendered, dict):
        return isinstance(live, dict) and all(k in live and _subset(v, live[k]) for k, v in rendered.items())
    if isinstance(rendered, list):
        return isinstance(live, list) and len(rendered) == len(live) and all(map(_subset, rendered, live))
    return bool(rendered == live)


def _spec_managers(obj: dict[str, Any]) -> dict[str, Any]:
    # The status entries are the rollout stand-in's.
    return {e["manager"]: e for e in obj["metadata"]["managedFields"] if e.get("subresource") != "status"}


def test_the_adopt_patch_owns_only_what_it_sets(
    brought_up: list[str], cluster: tuple[ApiServer, dynamic.DynamicClient]
) -> None:
    _, api = cluster
    tke = _tke(api).to_dict()
    container = tke["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == [
        "--fail-on-init-error=false",
        "--pass-device-specs=true",
        "--config-file=/etc/nvidia/time-slicing-config/t4",
    ]
    assert tke["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "t4",
    }
    managers = _spec_managers(tke)
    assert set(managers) == {"helm", FIELD_MANAGER}
    owned = managers[FIELD_MANAGER]["fieldsV1"]
    spec = owned["f:spec"]["f:template"]["f:spec"]
    assert set(spec) == {"f:containers", "f:nodeSelector", "f:volumes"}
    # A pod's nodeSelector is an atomic map: the forced patch owns all of it (TKE's key too), and Helm's
    # entry no longer names it.
    assert spec["f:nodeSelector"] == {}
    assert "f:nodeSelector" not in managers["helm"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    container = spec["f:containers"]['k:{"name":"nvidia-device-plugin-ctr"}']
    assert set(container) == {".", "f:args", "f:name", "f:volumeMounts"}
    assert set(container["f:volumeMounts"]) == {
        'k:{"mountPath":"/var/lib/kubelet/device-plugins"}',
        'k:{"mountPath":"/etc/nvidia/time-slicing-config"}',
    }
    assert set(spec["f:volumes"]) == {'k:{"name":"device-plugin"}', 'k:{"name":"time-slicing-config"}'}
    # TKE's kubelet-socket mount and volume, which the patch names first so the provider's positional diff
    # agrees: the patch co-owns their keys only, their hostPath stays Helm's alone.
    assert container["f:volumeMounts"]['k:{"mountPath":"/var/lib/kubelet/device-plugins"}'] == {
        ".": {},
        "f:mountPath": {},
        "f:name": {},
    }
    assert spec["f:volumes"]['k:{"name":"device-plugin"}'] == {".": {}, "f:name": {}}
    helm_spec = managers["helm"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    assert "f:hostPath" in helm_spec["f:volumes"]['k:{"name":"device-plugin"}']
    assert [v["name"] for v in tke["spec"]["template"]["spec"]["volumes"]] == [
        "device-plugin",
        "time-slicing-config",
    ]
    assert (
        tke["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"] == "/var/lib/kubelet/device-plugins"
    )


def test_a_second_preview_expects_no_changes(brought_up: list[str], engine: EngineProject) -> None:
    """After `up`, `preview --expect-no-changes` passes. It failed while the adopt patch listed gpushare's
    config mount and volume alone: the provider cuts the live lists to the patch's length by position, and
    TKE's own entries come first, so every preview planned `~ spec` of gpushare-managed-plugin-patch
    (`mountPath: "/var/lib/kubelet/device-plugins" => "/etc/nvidia/time-slicing-config"`). The patch now
    names TKE's entries first (components/managed_device_plugin.py)."""
    args = [arg for urn in brought_up for arg in ("--target", urn)]
    result = engine.pulumi("preview", "--expect-no-changes", "--diff", "--stack", STACK, *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "14 unchanged" in result.stdout


def test_a_changed_measurement_updates_the_config_and_rolls_the_pools_plugin(
    brought_up: list[str], engine: EngineProject
) -> None:
    """l20 measured at 5200 MiB instead of 4621: floor(0.9 x 46068 / 5200) = floor(7.97) = 7 replicas instead
    of 8. The preview updates the ConfigMap and the l20 plugin DaemonSet, whose pod template's config checksum
    changes (a roll); nothing is replaced or deleted, and t4's DaemonSet and the adopt patch stay."""
    stack_file = engine.copy / f"Pulumi.{STACK}.yaml"
    original = stack_file.read_text()
    document = yaml.safe_load(original)
    (l20,) = [p for p in document["config"]["gpushare:pools"] if p["name"] == "l20"]
    l20["sharing"]["measuredMiB"] = 5200
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
    try:
        preview, _ = engine.preview(STACK, *[arg for urn in brought_up for arg in ("--target", urn)])
    finally:
        stack_file.write_text(original)
    assert preview["exitCode"] == 0, preview.get("diagnostics")
    changed = {
        step["urn"].rsplit("::", 1)[1]: step["op"] for step in preview["steps"] if step["op"] != "same"
    }
    assert changed == {"gpushare-config-configmap": "update", "gpushare-plugins-l20": "update"}
    (daemonset,) = [s for s in preview["steps"] if s["urn"].endswith("::gpushare-plugins-l20")]
    checksum = [
        step["inputs"]["spec"]["template"]["metadata"]["annotations"]["gpushare.io/config-sha256"]
        for step in (daemonset["oldState"], daemonset["newState"])
    ]
    assert checksum[0] != checksum[1]
    (config_map,) = [s for s in preview["steps"] if s["urn"].endswith("::gpushare-config-configmap")]
    assert "replicas: 7" in config_map["newState"]["inputs"]["data"]["l20"]
    assert "replicas: 8" in config_map["oldState"]["inputs"]["data"]["l20"]


def test_destroy_leaves_tke_daemonset_adopted(
    brought_up: list[str], engine: EngineProject, cluster: tuple[ApiServer, dynamic.DynamicClient]
) -> None:
    """docs/tke-device-plugin.md: a destroy straight from `adopt` leaves TKE's DaemonSet adopted (the
    patch is retained on delete); the args are not TKE's again."""
    _, api = cluster
    engine.must("destroy", "--yes", "--skip-preview", "--stack", STACK)
    tke = _tke(api).to_dict()
    container = tke["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] != TKE_ORIGINAL_ARGS
    assert container["args"] == [
        "--fail-on-init-error=false",
        "--pass-device-specs=true",
        "--config-file=/etc/nvidia/time-slicing-config/t4",
    ]
    assert tke["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "t4",
    }
    assert set(_spec_managers(tke)) == {"helm", FIELD_MANAGER}
    # gpushare's own objects are gone.
    configmaps = api.resources.get(api_version="v1", kind="ConfigMap")
    assert "time-slicing-config" not in {
        c.metadata.name for c in configmaps.get(namespace="kube-system").items
    }
