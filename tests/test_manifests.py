"""gpushare.offline.manifests' extraction: which registered resources are Kubernetes objects, their
apiVersion and kind from the type token, and the name an auto-named object gets (the name the echo mocks
give it, as pulumi-kubernetes' Check() would). Validation against the schemas is tested through `render`
(tests/test_render.py, tests/test_chart_render.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.offline.manifests import api_version_of, extract_manifests
from gpushare.offline.recorded import RecordedResource


def _recorded(
    resource_type: str,
    inputs: dict[str, Any],
    outputs: dict[str, Any] | None = None,
    *,
    name: str = "res",
    custom: bool = True,
    external: bool = False,
) -> RecordedResource:
    return RecordedResource(
        type=resource_type,
        name=name,
        urn=f"urn:pulumi:prod::gpushare::{resource_type}::{name}",
        parent=None,
        custom=custom,
        remote=False,
        provider=None,
        inputs=inputs,
        outputs=outputs if outputs is not None else inputs,
        dependencies=[],
        property_dependencies={},
        protect=False,
        ignore_changes=[],
        delete_before_replace=None,
        additional_secret_outputs=[],
        secret_input_paths=[],
        external=external,
    )


@pytest.mark.parametrize(
    ("resource_type", "identity"),
    [
        ("kubernetes:core/v1:ConfigMap", ("v1", "ConfigMap", False)),
        ("kubernetes:apps/v1:DaemonSet", ("apps/v1", "DaemonSet", False)),
        ("kubernetes:apps/v1:DaemonSetPatch", ("apps/v1", "DaemonSet", True)),
        (
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
            ("rbac.authorization.k8s.io/v1", "ClusterRole", False),
        ),
        ("kubernetes:helm.sh/v3:Release", None),  # client-side machinery, not an API object
        ("kubernetes:yaml/v2:ConfigGroup", None),
        ("pulumi:providers:kubernetes", None),
        ("tencentcloud:Kubernetes/nodePool:NodePool", None),
    ],
)
def test_the_object_identity_comes_from_the_type_token(
    resource_type: str, identity: tuple[str, str, bool] | None
) -> None:
    assert api_version_of(resource_type) == identity


def test_an_auto_named_object_gets_the_name_the_mocks_gave_and_a_named_one_keeps_its_own() -> None:
    auto = _recorded(
        "kubernetes:core/v1:ConfigMap",
        {"metadata": {"namespace": "kube-system"}, "data": {"a": "b"}},
        {"metadata": {"name": "res-1a2b3c4d", "namespace": "kube-system"}, "data": {"a": "b"}},
        name="auto",
    )
    named = _recorded(
        "kubernetes:core/v1:ConfigMap",
        {"metadata": {"name": "mine", "namespace": "kube-system"}},
        {"metadata": {"name": "something-else", "namespace": "kube-system"}},
        name="named",
    )
    # A patch names the object it patches or nothing: it is never given a generated name.
    patch = _recorded(
        "kubernetes:apps/v1:DaemonSetPatch",
        {"metadata": {"namespace": "kube-system"}},
        {"metadata": {"name": "generated-1234", "namespace": "kube-system"}},
        name="patch",
    )
    documents = [m.document for m in extract_manifests([auto, named, patch])]
    assert documents == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "kube-system", "name": "res-1a2b3c4d"},
            "data": {"a": "b"},
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine", "namespace": "kube-system"}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"namespace": "kube-system"}},
    ]
    assert [list(d)[:3] for d in documents] == [["apiVersion", "kind", "metadata"]] * 3
    assert [m.is_patch for m in extract_manifests([auto, named, patch])] == [False, False, True]


def test_reads_components_and_bookkeeping_are_not_objects() -> None:
    read = _recorded(
        "kubernetes:core/v1:ConfigMap", {"metadata": {"name": "tke"}}, name="read", external=True
    )
    component = _recorded("kubernetes:core/v1:ConfigMap", {"metadata": {"name": "c"}}, name="c", custom=False)
    kept = _recorded(
        "kubernetes:core/v1:ConfigMap",
        {
            "metadata": {"name": "kept"},
            "__fieldManager": "pulumi",
            "data": {"__inputs": {"x": "y"}, "k": "v"},
        },
        name="kept",
    )
    assert [m.document for m in extract_manifests([read, component, kept])] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"k": "v"}}
    ]
