"""offline.chart_render / chart_sources / crd_schemas: Helm releases rendered by Helm itself (helm_python)
from the pinned charts, every object validated (Kubernetes schema, or the chart's CRDs), and the sources
looked up in their documented order."""

from __future__ import annotations

import contextlib
import copy
import functools
import http.server
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR, STACKS, device_plugin_mode, pinned_charts

from gpushare import cli
from gpushare.resource_types import HELM_RELEASE
from offline.chart_render import (
    CHART_RENDERED_MARK,
    ChartObject,
    ChartObjectSchemaError,
    ChartRenderError,
    RenderedRelease,
    render_releases,
)
from offline.chart_sources import ChartRequest, ChartSourceError, ChartSources
from offline.crd_schemas import CrdIndex, strict_crd_schema
from offline.manifests import validate_manifest
from offline.mock_run import RecordedResource
from offline.render import RenderResult

SCHEMA = "1.30.0"
DEVICE_PLUGIN = ("nvidia-device-plugin", "0.17.1")
OPERATOR = ("gpu-operator", "v26.7.0")
# The stack on NVIDIA's device-plugin chart (staging today; `dev` once the gpu-operator mode lands).
HELM_STACK = next((stack for stack in STACKS if device_plugin_mode(stack) == "helm"), None)


def helm_release_resource(
    chart: str, version: str | None, values: dict[str, Any], *, name: str = "op", namespace: str = "gpu-operator"
) -> RecordedResource:
    """A Release as the recorder keeps it (decoded wire inputs), for renders without a program run."""
    return RecordedResource(
        type=HELM_RELEASE,
        name=f"{name}-release",
        urn=f"urn:pulumi:test::gpushare::{HELM_RELEASE}::{name}-release",
        parent=None,
        custom=True,
        remote=False,
        provider=None,
        inputs={
            "name": name,
            "chart": chart,
            "version": version,
            "namespace": namespace,
            "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
            "values": values,
        },
        outputs={},
        dependencies=[],
        property_dependencies={},
        protect=False,
        ignore_changes=[],
        delete_before_replace=False,
        additional_secret_outputs=[],
        secret_input_paths=[],
    )


def pinned_sources() -> ChartSources:
    return ChartSources(pinned_dirs=(pinned_charts(),), cache_dir=None, download=False)


def operator_values(**overrides: Any) -> dict[str, Any]:
    """What a GPU Operator stack on TKE would give the chart: the driver and toolkit are TKE's, no CDI,
    the device plugin and MIG manager read gpushare's ConfigMaps."""
    values: dict[str, Any] = {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "cdi": {"enabled": False},
        "devicePlugin": {"config": {"name": "gpushare-device-plugin-config", "default": "any"}},
        "migManager": {"config": {"name": "gpushare-mig-parted-config"}},
        "mig": {"strategy": "mixed"},
        "nfd": {"nodefeaturerules": True},  # NFD's NodeFeatureRule: a custom resource of the subchart's CRDs
    }
    for key, value in overrides.items():
        values[key] = {**values.get(key, {}), **value}
    return values


def only(objects: tuple[ChartObject, ...], kind: str, name: str | None = None) -> ChartObject:
    found = [o for o in objects if o.kind == kind and (name is None or o.name == name)]
    assert len(found) == 1, [(o.kind, o.name) for o in objects]
    return found[0]


@pytest.fixture(scope="module")
def operator_render() -> RenderedRelease:
    """The GPU Operator chart v26.7.0, rendered once for the module."""
    release = helm_release_resource(*OPERATOR, operator_values())
    started = time.perf_counter()
    (rendered,) = render_releases([release], pinned_sources(), SCHEMA)
    print(f"gpu-operator v26.7.0: render + validation {time.perf_counter() - started:.2f} s")
    return rendered


@pytest.fixture(scope="module")
def helm_stack(rendered: dict[str, RenderResult]) -> RenderResult:
    if HELM_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode helm")
    return rendered[HELM_STACK]


# ------------------------------------------------------------------------------------ device-plugin chart


def test_the_helm_stack_writes_the_charts_daemon_set_with_its_config_manager(helm_stack: RenderResult) -> None:
    (release,) = helm_stack.releases
    assert (release.release.chart, release.release.version) == DEVICE_PLUGIN
    assert release.chart.origin == "pinned"
    namespace = release.release.namespace
    path = helm_stack.out_dir / f"manifests/daemonset_{namespace}_nvidia-device-plugin.yaml"
    text = path.read_text()
    assert text.startswith(
        f"{CHART_RENDERED_MARK} nvidia-device-plugin 0.17.1, nvidia-device-plugin/templates/daemonset-device-plugin.yml\n"
        f"# Helm release {namespace}/nvidia-device-plugin (kubernetes:helm.sh/v3:Release "
    )
    assert "\n# validated against the Kubernetes 1.30 schema (strict)\n" in text
    daemon_set = yaml.safe_load(text)
    assert validate_manifest(daemon_set, SCHEMA, file=str(path)) is None  # as written to disk
    pod = daemon_set["spec"]["template"]["spec"]
    # The chart's config-manager: once as init container (writes the first config), then as sidecar that
    # follows the node's `nvidia.com/device-plugin.config` label.
    init, sidecar = pod["initContainers"][0], pod["containers"][0]
    assert (init["name"], init["command"]) == ("nvidia-device-plugin-init", ["config-manager"])
    assert (sidecar["name"], sidecar["command"]) == ("nvidia-device-plugin-sidecar", ["config-manager"])
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config"
    assert env["DEFAULT_CONFIG"] == "any"  # the stack's fallback key, as the Release's values say
    assert [c["name"] for c in pod["containers"]] == ["nvidia-device-plugin-sidecar", "nvidia-device-plugin-ctr"]
    assert pod["containers"][1]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    assert pod["priorityClassName"] == "system-node-critical"


def test_the_charts_config_map_holds_exactly_the_releases_config_map(helm_stack: RenderResult) -> None:
    (release,) = helm_stack.releases
    values = release.release.values
    config_map = only(release.objects, "ConfigMap")
    # Same configs; the chart's template drops each text's final newline.
    assert {k: yaml.safe_load(v) for k, v in config_map.document["data"].items()} == {
        k: yaml.safe_load(v) for k, v in values["config"]["map"].items()
    }
    assert sorted(config_map.document["data"]) == ["any", "h20", "l20"]
    kinds = sorted(o.kind for o in release.objects)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "DaemonSet", "ServiceAccount"]
    assert all(o.checked_against == "the Kubernetes 1.30 schema (strict)" for o in release.objects)
    # The values file stays beside the rendered objects.
    assert f"manifests/{release.release.file_name}" in helm_stack.files


# ------------------------------------------------------------------------------------------ GPU Operator


def test_the_operator_chart_renders_a_cluster_policy_valid_against_its_crd(operator_render: RenderedRelease) -> None:
    policy = only(operator_render.objects, "ClusterPolicy")
    assert policy.checked_against == "CRD clusterpolicies.nvidia.com v1 (strict)"
    assert policy.type_token == "kubernetes:nvidia.com/v1:ClusterPolicy"
    assert policy.file_name == "clusterpolicy_cluster-policy.yaml"  # cluster-scoped
    spec = policy.document["spec"]
    assert spec["driver"]["enabled"] is False
    assert spec["toolkit"]["enabled"] is False
    assert spec["cdi"]["enabled"] is False
    assert spec["devicePlugin"]["config"] == {"name": "gpushare-device-plugin-config", "default": "any"}
    assert spec["migManager"]["config"]["name"] == "gpushare-mig-parted-config"
    assert spec["mig"] == {"strategy": "mixed"}

    rule = only(operator_render.objects, "NodeFeatureRule")
    assert rule.checked_against is not None and rule.checked_against.startswith("CRD nodefeaturerules.nfd.k8s-sigs.io")
    crd = only(operator_render.objects, "CustomResourceDefinition", "clusterpolicies.nvidia.com")
    assert crd.source == "gpu-operator/crds/nvidia.com_clusterpolicies.yaml"
    assert "Helm creates it on first install and never upgrades it" in crd.header()
    operator = only(operator_render.objects, "Deployment", "gpu-operator")
    assert operator.namespace == "gpu-operator"
    hook = only(operator_render.objects, "Job", "gpu-operator-upgrade-crd")
    assert hook.hook == "pre-upgrade" and "# Helm hook (pre-upgrade)" in hook.header()
    assert not operator_render.unvalidated


def test_a_wrong_cluster_policy_value_is_refused_naming_file_and_field() -> None:
    # `mig.strategy` is an enum in the CRD; `devicePlugin.resources` is a ResourceRequirements, so a
    # misspelt key there would be pruned silently by the API server: the strict schema refuses it.
    values = operator_values(mig={"strategy": "mixd"}, devicePlugin={"resources": {"limitz": {"cpu": "1"}}})
    release = helm_release_resource(*OPERATOR, values)
    with pytest.raises(ChartObjectSchemaError) as caught:
        render_releases([release], pinned_sources(), SCHEMA)
    lines = str(caught.value).splitlines()
    assert lines[0] == "1 object rendered from Helm charts fails their schema (strict: unknown fields are errors):"
    assert lines[1].startswith("  manifests/clusterpolicy_cluster-policy.yaml: spec.")
    assert lines[1].endswith("(CRD clusterpolicies.nvidia.com v1)")


def test_the_crd_schema_refuses_each_mistake_alone(operator_render: RenderedRelease) -> None:
    crds = CrdIndex(o.document for o in operator_render.objects if o.kind == "CustomResourceDefinition")
    valid = only(operator_render.objects, "ClusterPolicy").document
    assert crds.validate(valid, file="p.yaml") is None

    wrong_enum = copy.deepcopy(valid)
    wrong_enum["spec"]["mig"]["strategy"] = "mixd"
    violation = crds.validate(wrong_enum, file="p.yaml")
    assert violation is not None and (violation.file, violation.path) == ("p.yaml", "spec.mig.strategy")
    assert violation.message == "'mixd' is not one of ['none', 'single', 'mixed'] (CRD clusterpolicies.nvidia.com v1)"

    misspelt = copy.deepcopy(valid)
    misspelt["spec"]["devicePlugin"]["confg"] = {"name": "x"}
    violation = crds.validate(misspelt, file="p.yaml")
    assert violation is not None and violation.path == "spec.devicePlugin"
    assert "'confg' was unexpected" in violation.message

    wrong_type = copy.deepcopy(valid)
    wrong_type["spec"]["devicePlugin"]["config"]["name"] = 7
    violation = crds.validate(wrong_type, file="p.yaml")
    assert violation is not None and violation.path == "spec.devicePlugin.config.name"

    unserved = {**valid, "apiVersion": "nvidia.com/v2"}
    violation = crds.validate(unserved, file="p.yaml")
    assert violation is not None and violation.message == (
        "nvidia.com/v2 ClusterPolicy is not served by its CRD (served: nvidia.com/v1)"
    )


def test_strict_crd_schema_keeps_preserved_embedded_and_nullable_fields_open() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {}}},
            "maybe": {"type": "string", "nullable": True},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "required": {"type": "string"},  # a field named like a keyword stays a field
        },
    }
    strict = strict_crd_schema(schema)
    assert strict["additionalProperties"] is False
    assert "additionalProperties" not in strict["properties"]["free"]
    assert set(strict["properties"]["embedded"]["properties"]) == {"spec", "apiVersion", "kind", "metadata"}
    assert strict["properties"]["embedded"]["additionalProperties"] is False
    assert strict["properties"]["maybe"]["type"] == ["string", "null"]
    assert strict["properties"]["map"]["additionalProperties"] == {"type": "string"}
    assert strict["properties"]["required"] == {"type": "string"}
    assert schema["properties"]["maybe"] == {"type": "string", "nullable": True}  # the input is untouched


def test_an_object_no_schema_knows_is_written_but_not_called_valid() -> None:
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "gpu-metrics", "namespace": "gpu-operator"},
        "spec": {"endpoints": [{"port": "metrics"}]},
    }
    release = helm_release_resource(*OPERATOR, {**operator_values(), "extraObjects": [monitor]})
    (rendered,) = render_releases([release], pinned_sources(), SCHEMA)
    (unvalidated,) = rendered.unvalidated
    assert unvalidated.document == monitor
    assert unvalidated.header().splitlines()[-1] == (
        "# NOT validated: neither the Kubernetes schema nor a CRD at hand knows monitoring.coreos.com/v1 ServiceMonitor"
    )


def test_values_helm_refuses_are_one_line_naming_the_release() -> None:
    # The NFD subchart's values.schema.json says `checksumValuesOnly` is a boolean.
    values = {**operator_values(), "node-feature-discovery": {"checksumValuesOnly": "yes please"}}
    release = helm_release_resource(*OPERATOR, values)
    with pytest.raises(ChartRenderError) as caught:
        render_releases([release], pinned_sources(), SCHEMA)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("Helm release gpu-operator/op: chart gpu-operator v26.7.0: Helm refuses it: ")
    assert "checksumValuesOnly" in message and "want boolean" in message
