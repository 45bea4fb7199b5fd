"""TKE's device plugin after gpushare leaves, on a real API server (make test-engine).

TKE's `kube-system/nvidia-device-plugin-daemonset` (tests/fixtures/tke_device_plugin: the seed's record of
it) is created as Helm creates it, then gpushare's rendered patches of it (park, adopt, the optOut
hand-back: the render's own documents, from the real program) are sent as the pinned pulumi-kubernetes
provider sends them (engine/versions.env's module, pkg/await and pkg/ssa, read):

- creating a Patch resource: a server-side apply (`application/apply-patch+yaml`) of its inputs as they
  are (the `pulumi.com/` annotations included), under the manager the `pulumi.com/patchFieldManager`
  annotation names, `force` from `pulumi.com/patchForce`, `fieldValidation=Warn`;
- updating one: the same apply without `fieldValidation`; when the manager name changed, then an apply of
  an object holding only apiVersion, kind, name and namespace under the old name (Relinquish);
- deleting one: that Relinquish under its own manager, without `force`; with `retain_on_delete` the
  engine does not call the provider at all, so nothing is sent.

TKE's manager: Helm created the DaemonSet (the seed's `meta.helm.sh/release-name`), so the object is
created here with an Update under the manager `helm` (INFERRED: what Helm 3 records; whether a TKE
controller updates it later is unknown). No controller runs: the DaemonSet is stored, never rolled out.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from engine_api_server import ENGINE_BIN, ApiServer, running_api_server
from kubernetes import dynamic
from test_program import run_document

from gpushare.offline.manifests import extract_manifests
from gpushare.offline.render import redacted_resources
from gpushare.resource_types import DAEMON_SET_PATCH
from gpushare_policies.props import Resource
from gpushare_policies.workloads import TKE_DAEMON_SET, apply_patch, daemon_set_plugin

pytestmark = pytest.mark.engine

FIXTURE = Path(__file__).parent / "fixtures" / "tke_device_plugin" / "nvidia-device-plugin-daemonset.yaml"
NAME, NAMESPACE = "nvidia-device-plugin-daemonset", "kube-system"
GPUSHARE = "gpushare-tke-device-plugin"
HELM = "helm"
# The seed's TKE args, in its order (also the fixture's and managedPlugin.tkeArgs' default).
TKE_ARGS = ["--mig-strategy=single", "--fail-on-init-error=false", "--pass-device-specs=true"]
# prod's adopt patch for t4: plugin_pod.plugin_args("t4") (no --mig-strategy: T4 has no MIG).
ADOPT_ARGS = [
    "--fail-on-init-error=false",
    "--pass-device-specs=true",
    "--config-file=/etc/nvidia/time-slicing-config/t4",
]
CONTAINER = 'k:{"name":"nvidia-device-plugin-ctr"}'
PATCH_ANNOTATIONS: dict[str, Any] = {"f:pulumi.com/patchFieldManager": {}, "f:pulumi.com/patchForce": {}}
IDENTITY_ANNOTATIONS: dict[str, Any] = {"f:gpushare.io/cluster": {}, "f:gpushare.io/stack": {}}


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    missing = [tool for tool in ("etcd", "kube-apiserver") if not (ENGINE_BIN / tool).is_file()]
    if missing:
        message = f"not in .engine/bin: {', '.join(missing)}; run make engine"
        # A proof that silently skips proves nothing: CI builds the tools first (make test-engine).
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with running_api_server(tmp_path_factory.mktemp("apiserver")) as server:
        yield server


@pytest.fixture(scope="module")
def patches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The render's DaemonSetPatch documents (what `gpushare render` writes to manifests/), by action:
    prod as it is (adopt t4), prod with park, prod with optOut + handBack, and with handBack and tkeArgs
    other than TKE's."""
    stack = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    variants: dict[str, dict[str, Any] | None] = {
        "adopt": None,
        "park": {"action": "park"},
        "hand-back": {"action": "optOut", "handBack": True},
        "hand-back-other-args": {
            "action": "optOut",
            "handBack": True,
            "tkeArgs": ["--pass-device-specs=true"],
        },
    }
    documents = {}
    for action, managed in variants.items():
        document = copy.deepcopy(stack)
        if managed is not None:
            document["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = managed
        run = run_document(document, tmp_path_factory.mktemp(action), stack="prod")
        [patch] = [m.document for m in extract_manifests(redacted_resources(run)) if m.is_patch]
        documents[action] = patch
    return documents


@pytest.fixture
def api(api_server: ApiServer) -> Iterator[dynamic.Resource]:
    """The DaemonSets API with TKE's DaemonSet created as Helm creates it; deleted after the test."""
    daemonsets = api_server.dynamic_client().resources.get(api_version="apps/v1", kind="DaemonSet")
    body = yaml.safe_load(FIXTURE.read_text())
    daemonsets.create(body=body, namespace=NAMESPACE, field_manager=HELM)
    yield daemonsets
    daemonsets.delete(name=NAME, namespace=NAMESPACE, propagation_policy="Background")


# The provider's requests (see the module docstring).


def create_patch(api: dynamic.Resource, patch: dict[str, Any]) -> None:
    annotations = patch["metadata"]["annotations"]
    api.server_side_apply(
        body=patch,
        name=NAME,
        namespace=NAMESPACE,
        field_manager=annotations["pulumi.com/patchFieldManager"],
        force_conflicts=annotations.get("pulumi.com/patchForce") == "true",
        query_params=[("fieldValidation", "Warn")],
    )


def update_patch(api: dynamic.Resource, patch: dict[str, Any], old_manager: str | None = None) -> None:
    annotations = patch["metadata"]["annotations"]
    manager = annotations["pulumi.com/patchFieldManager"]
    api.server_side_apply(
        body=patch,
        name=NAME,
        namespace=NAMESPACE,
        field_manager=manager,
        force_conflicts=annotations.get("pulumi.com/patchForce") == "true",
    )
    if old_manager and old_manager != manager:
        relinquish(api, old_manager)


def relinquish(api: dynamic.Resource, manager: str) -> None:
    """Deleting a Patch resource (not retained): the manager applies an object that sets nothing."""
    identity = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
    }
    api.server_side_apply(body=identity, name=NAME, namespace=NAMESPACE, field_manager=manager)


# What the server holds.


def live(api: dynamic.Resource) -> dict[str, Any]:
    obj: dict[str, Any] = api.get(name=NAME, namespace=NAMESPACE).to_dict()
    return obj


def owned(obj: dict[str, Any], manager: str) -> list[tuple[str, dict[str, Any]]]:
    """(operation, fieldsV1) of each managedFields entry of `manager`."""
    return [
        (e["operation"], e["fieldsV1"]) for e in obj["metadata"]["managedFields"] if e["manager"] == manager
    ]


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"])


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def container(obj: dict[str, Any]) -> dict[str, Any]:
    [ctr] = pod_spec(obj)["containers"]
    return ctr


def helm_owns(obj: dict[str, Any]) -> dict[str, bool]:
    """Whether TKE's manager still owns the container's args and the pod's nodeSelector."""
    [(_, fields)] = owned(obj, HELM)
    pod = fields["f:spec"]["f:template"]["f:spec"]
    return {"args": "f:args" in pod["f:containers"][CONTAINER], "nodeSelector": "f:nodeSelector" in pod}


def object_annotations(obj: dict[str, Any]) -> dict[str, str]:
    """The object's annotations but the one the API server bumps on every template change."""
    found: dict[str, str] = obj["metadata"].get("annotations") or {}
    return {k: v for k, v in found.items() if k != "deprecated.daemonset.template.generation"}


def gpushare_fields(
    metadata: dict[str, Any], node_selector: bool = True, pod: dict[str, Any] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The one managedFields entry of gpushare's manager (an Apply), written out: `f:nodeSelector` is the
    whole map (PodSpec's nodeSelector is `mapType=atomic`), a container entry names its `args` (atomic
    list) and its key `name`."""
    fields: dict[str, Any] = {"f:containers": {CONTAINER: {".": {}, "f:args": {}, "f:name": {}}}}
    if node_selector:
        fields["f:nodeSelector"] = {}
    template: dict[str, Any] = {"f:spec": fields}
    for key, value in (pod or {}).items():
        if key == "f:containers":
            fields["f:containers"][CONTAINER].update(value)
        elif key == "f:metadata":
            template["f:metadata"] = value
        else:
            fields[key] = value
    return [("Apply", {"f:metadata": {"f:annotations": metadata}, "f:spec": {"f:template": template}})]


# adopt's own fields beyond the nodeSelector and args (prod's t4 patch); it also names TKE's kubelet-socket
# mount and volume by their keys (components/managed_device_plugin.py: the provider's positional diff), so it
# co-owns those keys and nothing of the hostPath.
ADOPT_POD_FIELDS = {
    "f:metadata": {"f:annotations": {"f:gpushare.io/config-sha256": {}}},
    "f:containers": {
        "f:volumeMounts": {
            'k:{"mountPath":"/var/lib/kubelet/device-plugins"}': {".": {}, "f:mountPath": {}, "f:name": {}},
            'k:{"mountPath":"/etc/nvidia/time-slicing-config"}': {".": {}, "f:mountPath": {}, "f:name": {}},
        }
    },
    "f:volumes": {
        'k:{"name":"device-plugin"}': {".": {}, "f:name": {}},
        'k:{"name":"time-slicing-config"}': {".": {}, "f:configMap": {"f:name": {}}, "f:name": {}},
    },
}


def test_the_fixture_is_tkes_daemonset_as_helm_left_it(api: dynamic.Resource) -> None:
    obj = live(api)
    assert managers(obj) == [(HELM, "Update")]
    assert helm_owns(obj) == {"args": True, "nodeSelector": True}
    assert container(obj)["args"] == TKE_ARGS
    assert pod_spec(obj)["nodeSelector"] == {"nvidia-device-enable": "enable"}
    assert object_annotations(obj) == {"meta.helm.sh/release-name": "nvidia-gpu"}


def test_park_takes_the_whole_node_selector_and_shares_tkes_args(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    create_patch(api, patches["park"])
    obj = live(api)
    # TKE's `nvidia-device-enable: enable` is gone while parked: the map is atomic, the patch's is the map.
    assert pod_spec(obj)["nodeSelector"] == {"gpushare.io/managed-plugin": "parked"}
    assert container(obj)["args"] == TKE_ARGS
    assert owned(obj, GPUSHARE) == gpushare_fields({**IDENTITY_ANNOTATIONS, **PATCH_ANNOTATIONS})
    # Equal args are shared with TKE's manager, a different nodeSelector is taken from it.
    assert helm_owns(obj) == {"args": True, "nodeSelector": False}


def test_deleting_a_patch_would_leave_tkes_daemonset_without_a_node_selector(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    """Why every patch is retained on delete: the provider's delete of the park patch (a Relinquish) gives
    up the nodeSelector it took, nobody owns it any more, and the API server removes it: TKE's plugin would
    then run on every node, gpushare's pools (labelled `nvidia-device-enable=disable`) included."""
    create_patch(api, patches["park"])
    relinquish(api, GPUSHARE)
    obj = live(api)
    assert "nodeSelector" not in pod_spec(obj)
    assert container(obj)["args"] == TKE_ARGS  # shared, so TKE's manager keeps them
    assert managers(obj) == [(HELM, "Update")]
    assert object_annotations(obj) == {"meta.helm.sh/release-name": "nvidia-gpu"}


def test_adopt_takes_the_node_selector_and_args_from_tke(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    original = live(api)
    create_patch(api, patches["adopt"])
    obj = live(api)
    assert pod_spec(obj)["nodeSelector"] == {
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "t4",
    }
    assert container(obj)["args"] == ADOPT_ARGS
    assert container(obj)["volumeMounts"] == [
        {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
        {"name": "time-slicing-config", "mountPath": "/etc/nvidia/time-slicing-config"},
    ]
    assert pod_spec(obj)["volumes"] == [
        *pod_spec(original)["volumes"],
        {"name": "time-slicing-config", "configMap": {"name": "time-slicing-config", "defaultMode": 420}},
    ]
    assert container(obj)["image"] == container(original)["image"]  # not the patch's
    assert owned(obj, GPUSHARE) == gpushare_fields(
        {**IDENTITY_ANNOTATIONS, **PATCH_ANNOTATIONS}, pod=ADOPT_POD_FIELDS
    )
    assert helm_owns(obj) == {"args": False, "nodeSelector": False}


def _handed_back(api: dynamic.Resource, original: dict[str, Any]) -> dict[str, Any]:
    """TKE's DaemonSet after the hand-back (the park or adopt patch's deletion is retained: no request; a
    later `pulumi destroy` retains the hand-back: no request): as TKE shipped it."""
    obj = live(api)
    assert obj["spec"] == original["spec"]  # nodeSelector, args, volumes, mounts, pod annotations: TKE's
    assert pod_spec(obj)["nodeSelector"] == {"nvidia-device-enable": "enable"}
    assert container(obj)["args"] == TKE_ARGS
    assert "annotations" not in obj["spec"]["template"]["metadata"]
    # The identity annotations go (the hand-back does not set them); Pulumi's two stay with the patch.
    assert object_annotations(obj) == {
        "meta.helm.sh/release-name": "nvidia-gpu",
        "pulumi.com/patchFieldManager": GPUSHARE,
        "pulumi.com/patchForce": "true",
    }
    assert owned(obj, GPUSHARE) == gpushare_fields(PATCH_ANNOTATIONS)
    return obj


def test_adopt_then_hand_back_gives_tkes_daemonset_back(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    original = live(api)
    create_patch(api, patches["adopt"])
    create_patch(api, patches["hand-back"])
    obj = _handed_back(api, original)
    # Held by gpushare's manager alone: the hand-back must stay (retained) for them to stay.
    assert helm_owns(obj) == {"args": False, "nodeSelector": False}


def test_park_then_hand_back_gives_tkes_daemonset_back(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    original = live(api)
    create_patch(api, patches["park"])
    create_patch(api, patches["hand-back"])
    obj = _handed_back(api, original)
    assert helm_owns(obj) == {"args": True, "nodeSelector": False}


def test_adopt_then_park_gives_tkes_args_back(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    """One resource updated in place (the same name, `...-patch`): what park does not set goes."""
    original = live(api)
    create_patch(api, patches["adopt"])
    update_patch(api, patches["park"])
    obj = live(api)
    assert container(obj)["args"] == TKE_ARGS
    assert pod_spec(obj)["nodeSelector"] == {"gpushare.io/managed-plugin": "parked"}
    assert container(obj)["volumeMounts"] == container(original)["volumeMounts"]
    assert pod_spec(obj)["volumes"] == pod_spec(original)["volumes"]
    assert "annotations" not in obj["spec"]["template"]["metadata"]
    assert owned(obj, GPUSHARE) == gpushare_fields({**IDENTITY_ANNOTATIONS, **PATCH_ANNOTATIONS})


def test_hand_back_sets_the_stacks_tke_args_whatever_tkes_are(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    """`tkeArgs` other than the cluster's: the hand-back takes the args and leaves the stack's."""
    create_patch(api, patches["park"])
    create_patch(api, patches["hand-back-other-args"])
    obj = live(api)
    assert container(obj)["args"] == ["--pass-device-specs=true"]
    assert pod_spec(obj)["nodeSelector"] == {"nvidia-device-enable": "enable"}
    assert helm_owns(obj) == {"args": False, "nodeSelector": False}


def test_a_patch_applied_under_pulumis_own_manager_name_moves_to_the_shared_one(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]]
) -> None:
    """A stack that adopted before `pulumi.com/patchFieldManager` was set: its manager was the provider's
    generated `pulumi-kubernetes-<random>` (kept in the state). The next update applies under the annotated
    name, then relinquishes the old one (the provider's Update): no entry of the old name is left, and
    every field stays, now gpushare's manager's."""
    old_manager = "pulumi-kubernetes-0a1b2c3d"
    before = copy.deepcopy(patches["adopt"])
    del before["metadata"]["annotations"]["pulumi.com/patchFieldManager"]
    api.server_side_apply(
        body=before,
        name=NAME,
        namespace=NAMESPACE,
        field_manager=old_manager,
        force_conflicts=True,
        query_params=[("fieldValidation", "Warn")],
    )
    adopted = live(api)
    update_patch(api, patches["adopt"], old_manager=old_manager)
    obj = live(api)
    assert managers(obj) == [(GPUSHARE, "Apply"), (HELM, "Update")]
    assert obj["spec"] == adopted["spec"]
    assert owned(obj, GPUSHARE) == gpushare_fields(
        {**IDENTITY_ANNOTATIONS, **PATCH_ANNOTATIONS}, pod=ADOPT_POD_FIELDS
    )


@pytest.mark.parametrize("action", ["park", "adopt", "hand-back"])
def test_the_packs_model_of_a_patched_tke_daemonset_is_what_the_api_server_holds(
    api: dynamic.Resource, patches: dict[str, dict[str, Any]], action: str
) -> None:
    """The policy pack judges TKE's DaemonSet after the patch from its own model (workloads.apply_patch):
    the fields the patches set, the nodeSelector and the args, are what the API server makes of them."""
    patch = patches[action]
    create_patch(api, patch)
    obj = live(api)
    patched = daemon_set_plugin(Resource(DAEMON_SET_PATCH, "urn:rendered", action, copy.deepcopy(patch)))
    assert patched is not None
    modelled = apply_patch(TKE_DAEMON_SET, patched)
    assert modelled.placement is not None
    assert dict(modelled.placement.node_selector) == pod_spec(obj)["nodeSelector"]
    assert modelled.argv == tuple(container(obj)["args"])
