"""gpushare.offline.chart_render / chart_sources / crd_schemas: Helm releases rendered by Helm itself (helm_python)
from the pinned charts, every object validated (Kubernetes schema, or the chart's CRDs), and the sources
looked up in their documented order."""

from __future__ import annotations

import contextlib
import copy
import functools
import http.server
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR, STACKS, device_plugin_mode, pinned_charts

from gpushare.cli import main as cli_main
from gpushare.offline.chart_render import (
    CHART_RENDERED_MARK,
    ChartObject,
    ChartObjectSchemaError,
    ChartRenderError,
    RenderedRelease,
    render_releases,
)
from gpushare.offline.chart_sources import ChartRequest, ChartSourceError, ChartSources, FoundChart
from gpushare.offline.crd_schemas import CrdIndex, pruned_nulls, strict_crd_schema
from gpushare.offline.manifests import to_plain, validate_manifest
from gpushare.offline.recorded import RecordedResource
from gpushare.offline.render import RenderResult, release_summary
from gpushare.resource_types import HELM_RELEASE
from gpushare_policies.props import Resource
from gpushare_policies.workloads import daemon_set_plugin, helm_plugin

SCHEMA = "1.30.0"
DEVICE_PLUGIN = ("nvidia-device-plugin", "0.17.1")
OPERATOR = ("gpu-operator", "v26.7.0")
# The stack on NVIDIA's device-plugin chart (staging today; `dev` once the gpu-operator mode lands).
HELM_STACK = next((stack for stack in STACKS if device_plugin_mode(stack) == "helm"), None)
# The stack on the GPU Operator (staging, once the gpu-operator mode lands).
# The operator stack with a MIG pool (staging; qgpu runs the operator too, without MIG), else the first.
OPERATOR_STACK = next(
    (
        stack
        for stack in sorted(STACKS, key=lambda s: s != "staging")
        if device_plugin_mode(stack) == "gpu-operator"
    ),
    None,
)
# Its config keys, from its stack file: one per time-sliced pool, and the fallback.
# dev: t4 time-sliced and, since issue 37, l20 shared with MPS.
HELM_STACK_KEYS = {"staging": ["any", "h20", "l20"], "dev": ["any", "l20", "t4"]}


def helm_release_resource(
    chart: str,
    version: str | None,
    values: dict[str, Any],
    *,
    name: str = "op",
    namespace: str = "gpu-operator",
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


def test_the_helm_stack_writes_the_charts_daemon_set_with_its_config_manager(
    helm_stack: RenderResult,
) -> None:
    (release,) = helm_stack.releases
    assert (release.release.chart, release.release.version) == DEVICE_PLUGIN
    assert release.chart.origin == "pinned"
    namespace = release.release.namespace
    path = helm_stack.out_dir / f"manifests/daemonset_{namespace}_nvidia-device-plugin.yaml"
    text = path.read_text()
    assert text.startswith(
        f"{CHART_RENDERED_MARK} nvidia-device-plugin 0.17.1, nvidia-device-plugin/templates/daemonset-device-plugin.yml "
        f"(for review: applied by its Helm release, helmrelease_{namespace}_nvidia-device-plugin.values.yaml, not by "
        "hand)\n"
        f"# Helm release {namespace}/nvidia-device-plugin (kubernetes:helm.sh/v3:Release "
    )
    assert "\n# validated against the Kubernetes 1.30 schema (strict)\n" in text
    daemon_set = yaml.safe_load(text)
    assert validate_manifest(daemon_set, SCHEMA, file=str(path)) is None  # as written to disk
    # The chart annotates none of its own objects: gpushare's identity rides on the pod template
    # (podAnnotations), where verify and measure read whose cluster this is (issue 34).
    template_annotations = daemon_set["spec"]["template"]["metadata"]["annotations"]
    assert (template_annotations["gpushare.io/stack"], template_annotations["gpushare.io/cluster"]) == (
        helm_stack.capacity["stack"],
        "cls-dev0001",
    )
    pod = daemon_set["spec"]["template"]["spec"]
    # The chart's config-manager: once as init container (writes the first config), then as sidecar that
    # follows the node's `nvidia.com/device-plugin.config` label.
    init, sidecar = pod["initContainers"][0], pod["containers"][0]
    assert (init["name"], init["command"]) == ("nvidia-device-plugin-init", ["config-manager"])
    assert (sidecar["name"], sidecar["command"]) == ("nvidia-device-plugin-sidecar", ["config-manager"])
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config"
    assert env["DEFAULT_CONFIG"] == "any"  # the stack's fallback key, as the Release's values say
    assert [c["name"] for c in pod["containers"]] == [
        "nvidia-device-plugin-sidecar",
        "nvidia-device-plugin-ctr",
    ]
    assert pod["containers"][1]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    assert pod["priorityClassName"] == "system-node-critical"
    # No MIG anywhere in the stack: the plugin runs without escalation or capabilities (the chart's default
    # for a config.map would be CAP_SYS_ADMIN, which only MIG needs).
    assert pod["containers"][1]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_render_says_per_release_which_chart_from_where_and_how_many_objects(
    helm_stack: RenderResult,
) -> None:
    (release,) = helm_stack.releases
    namespace = release.release.namespace
    assert release_summary(release) == (
        f"Helm release {namespace}/nvidia-device-plugin: chart nvidia-device-plugin 0.17.1 "
        f"(pinned: {pinned_charts() / 'nvidia-device-plugin-0.17.1'}) renders 6 objects, each valid against "
        "the schema of its kind (Kubernetes or the chart's CRDs)"
    )


def test_the_charts_config_map_holds_exactly_the_releases_config_map(helm_stack: RenderResult) -> None:
    (release,) = helm_stack.releases
    values = release.release.values
    config_map = only(release.objects, "ConfigMap")
    # Same configs; the chart's template drops each text's final newline.
    assert {k: yaml.safe_load(v) for k, v in config_map.document["data"].items()} == {
        k: yaml.safe_load(v) for k, v in values["config"]["map"].items()
    }
    assert sorted(config_map.document["data"]) == HELM_STACK_KEYS[helm_stack.stack]
    kinds = sorted(o.kind for o in release.objects)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
        "DaemonSet",
        "ServiceAccount",
    ]
    assert all(o.checked_against == "the Kubernetes 1.30 schema (strict)" for o in release.objects)
    # The values file stays beside the rendered objects.
    assert f"manifests/{release.release.file_name}" in helm_stack.files


def test_the_packs_model_of_the_chart_is_what_helm_renders(helm_stack: RenderResult) -> None:
    # `pulumi preview` gives the pack only the Release's values; policies/gpushare_policies/workloads.py models from them
    # where the chart's plugin lands (its default node affinity from 0.15 on) and which plugin it runs.
    # Helm's render is the oracle for that model.
    (release,) = helm_stack.releases
    resource = release.release.resource
    modelled = helm_plugin(Resource(resource.type, resource.urn, resource.name, to_plain(resource.inputs)))
    plugin = only(release.objects, "DaemonSet", "nvidia-device-plugin")
    real = daemon_set_plugin(Resource(plugin.type_token, "urn:rendered", plugin.name, plugin.document))
    assert modelled is not None and real is not None
    assert modelled.placement == real.placement
    assert real.placement is not None and real.placement.required_terms is not None
    assert len(real.placement.required_terms) == 3  # NFD's PCI label, Tegra, nvidia.com/gpu.present
    assert (
        (modelled.namespace, modelled.plugin_version)
        == (real.namespace, real.plugin_version)
        == (
            release.release.namespace,
            "0.17.1",
        )
    )


# ------------------------------------------------------------------------------------------ GPU Operator


def test_the_operator_chart_renders_a_cluster_policy_valid_against_its_crd(
    operator_render: RenderedRelease,
) -> None:
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
    assert rule.checked_against is not None and rule.checked_against.startswith(
        "CRD nodefeaturerules.nfd.k8s-sigs.io"
    )
    crd = only(operator_render.objects, "CustomResourceDefinition", "clusterpolicies.nvidia.com")
    assert crd.source == "gpu-operator/crds/nvidia.com_clusterpolicies.yaml"
    assert "Helm creates it on first install and never upgrades it" in crd.header()
    operator = only(operator_render.objects, "Deployment", "gpu-operator")
    assert operator.namespace == "gpu-operator"
    hook = only(operator_render.objects, "Job", "gpu-operator-upgrade-crd")
    assert hook.hook == "pre-upgrade" and "# Helm hook (pre-upgrade)" in hook.header()
    assert not operator_render.unvalidated


def test_the_operator_stack_writes_a_valid_cluster_policy_naming_config_maps_of_the_render(
    rendered: dict[str, RenderResult],
) -> None:
    if OPERATOR_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode gpu-operator")
    result = rendered[OPERATOR_STACK]
    (release,) = result.releases
    assert (release.release.chart, release.release.version) == OPERATOR
    policy = only(release.objects, "ClusterPolicy")
    assert policy.checked_against == "CRD clusterpolicies.nvidia.com v1 (strict)"
    text = (result.out_dir / "manifests" / policy.file_name).read_text()
    assert text.startswith(
        f"{CHART_RENDERED_MARK} gpu-operator v26.7.0, gpu-operator/templates/clusterpolicy.yaml (for review: "
        f"applied by its Helm release, helmrelease_{release.release.namespace}_gpu-operator.values.yaml, not by "
        "hand)\n"
    )
    assert not release.unvalidated
    # Both configs the operator reads are ConfigMaps of the render, in the operator's namespace.
    namespace = release.release.namespace
    spec = policy.document["spec"]
    # Per-pod GPU memory under time-slicing (issue 34): the pinned chart passes both to the ClusterPolicy.
    assert (spec["dcgmExporter"]["hostPID"], spec["dcgmExporter"]["env"]) == (
        True,
        [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}],
    )
    for name in (spec["devicePlugin"]["config"]["name"], spec["migManager"]["config"]["name"]):
        config_map = yaml.safe_load(
            (result.out_dir / f"manifests/configmap_{namespace}_{name}.yaml").read_text()
        )
        assert config_map["kind"] == "ConfigMap" and config_map["data"]


def test_a_wrong_cluster_policy_value_is_refused_naming_file_and_field() -> None:
    # `mig.strategy` is an enum in the CRD; `devicePlugin.resources` is a ResourceRequirements, so a
    # misspelt key there would be pruned silently by the API server: the strict schema refuses it.
    values = operator_values(mig={"strategy": "mixd"}, devicePlugin={"resources": {"limitz": {"cpu": "1"}}})
    release = helm_release_resource(*OPERATOR, values)
    with pytest.raises(ChartObjectSchemaError) as caught:
        render_releases([release], pinned_sources(), SCHEMA)
    lines = str(caught.value).splitlines()
    assert (
        lines[0]
        == "1 object rendered from Helm charts fails their schema (strict: unknown fields are errors):"
    )
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
    assert (
        violation.message
        == "'mixd' is not one of ['none', 'single', 'mixed'] (CRD clusterpolicies.nvidia.com v1)"
    )

    misspelt = copy.deepcopy(valid)
    misspelt["spec"]["devicePlugin"]["confg"] = {"name": "x"}
    violation = crds.validate(misspelt, file="p.yaml")
    assert violation is not None and violation.path == "spec.devicePlugin"
    assert "'confg' was unexpected" in violation.message

    wrong_type = copy.deepcopy(valid)
    wrong_type["spec"]["devicePlugin"]["config"]["name"] = 7
    violation = crds.validate(wrong_type, file="p.yaml")
    assert violation is not None and violation.path == "spec.devicePlugin.config.name"

    # A null field is pruned by the API server unless the schema says `nullable`: no field, no error.
    pruned = copy.deepcopy(valid)
    pruned["spec"]["mig"] = None
    assert crds.validate(pruned, file="p.yaml") is None
    pruned["spec"]["driver"] = None  # ...but then a required field is missing
    violation = crds.validate(pruned, file="p.yaml")
    assert violation is not None and violation.message.startswith("'driver' is a required property")

    unserved = {**valid, "apiVersion": "nvidia.com/v2"}
    violation = crds.validate(unserved, file="p.yaml")
    assert violation is not None and violation.message == (
        "nvidia.com/v2 ClusterPolicy is not served by its CRD (served: nvidia.com/v1)"
    )


def test_pruned_nulls_follow_the_schema() -> None:
    schema = {
        "properties": {
            "keep": {"type": "string", "nullable": True},
            "nested": {"properties": {"gone": {"type": "string"}}},
            "list": {"items": {"properties": {"x": {"type": "string"}}}},
        }
    }
    value = {"keep": None, "drop": None, "nested": {"gone": None, "other": 1}, "list": [{"x": None}, None]}
    assert pruned_nulls(value, schema) == {"keep": None, "nested": {"other": 1}, "list": [{}, None]}


def test_strict_crd_schema_keeps_preserved_embedded_and_nullable_fields_open() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}},
            "embedded": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {}},
            },
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


def test_an_empty_mig_strategy_renders_a_null_mig_that_the_api_server_prunes() -> None:
    # The template writes `mig:` and, only for a non-empty strategy, `strategy:` under it.
    release = helm_release_resource(*OPERATOR, operator_values(mig={"strategy": ""}))
    (rendered,) = render_releases([release], pinned_sources(), SCHEMA)
    policy = only(rendered.objects, "ClusterPolicy")
    assert policy.document["spec"]["mig"] is None
    assert policy.checked_against == "CRD clusterpolicies.nvidia.com v1 (strict)"


def test_a_null_field_of_a_built_in_kind_is_kept_as_rendered_and_valid() -> None:
    # `extraObjects` are rendered as given: a ConfigMap whose `data` is null, as `data:` with nothing
    # under it renders. The API server reads it as no data, and the Kubernetes schema admits null.
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "empty", "namespace": "gpu-operator"},
    }
    release = helm_release_resource(
        *OPERATOR, {**operator_values(), "extraObjects": [{**config_map, "data": None}]}
    )
    (rendered,) = render_releases([release], pinned_sources(), SCHEMA)
    empty = only(rendered.objects, "ConfigMap", "empty")
    assert empty.document == {**config_map, "data": None}
    assert empty.checked_against == "the Kubernetes 1.30 schema (strict)"


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
    assert release_summary(rendered).endswith(
        "; 1 NOT validated (no schema at hand knows monitoring.coreos.com/v1 ServiceMonitor)"
    )
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


# ---------------------------------------------------------------------------------------------- sources


def chart_only(directory: Path, name: str, version: str) -> Path:
    """A directory that looks like a chart of `name` at `version` to the source lookup (Chart.yaml only)."""
    directory.mkdir(parents=True)
    (directory / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version})
    )
    return directory


def request(version: str = "0.17.1", repository: str | None = None) -> ChartRequest:
    return ChartRequest("kube-system/plugin", "nvidia-device-plugin", version, repository)


def test_pinned_directories_match_name_and_exact_version_then_the_cache(tmp_path: Path) -> None:
    pinned = tmp_path / "pinned"
    chart_only(pinned / "a", "nvidia-device-plugin", "0.17.0")
    chart_only(pinned / "b", "gpu-operator", "0.17.1")
    exact = chart_only(pinned / "c", "nvidia-device-plugin", "0.17.1")
    single = chart_only(tmp_path / "single", "nvidia-device-plugin", "0.14.5")  # a chart directory itself
    cache = tmp_path / "cache"
    cached = chart_only(cache / "nvidia-device-plugin-0.17.2", "nvidia-device-plugin", "0.17.2")
    sources = ChartSources(pinned_dirs=(single, pinned), cache_dir=cache, download=False)
    assert sources.locate(request("0.17.1")) == FoundChart(exact, "pinned")
    assert sources.locate(request("0.14.5")) == FoundChart(single, "pinned")
    assert sources.locate(request("0.17.2")) == FoundChart(cached, "cache")
    with pytest.raises(ChartSourceError) as caught:
        sources.locate(request("0.17"))  # no prefix match: "0.17" is not 0.17.0 or 0.17.1
    assert str(caught.value) == (
        "Helm release kube-system/plugin: chart nvidia-device-plugin 0.17: no chart source (looked in: "
        f"chart directories {single}, {pinned}; cache {cache}/nvidia-device-plugin-0.17; downloads off). "
        "Give it with --chart-dir DIR (make: CHART_DIRS=DIR; or GPUSHARE_CHART_DIRS), unpack it as "
        f"{cache}/nvidia-device-plugin-0.17, or name the release's chart repository so that it can be "
        "downloaded"
    )
    with pytest.raises(ChartSourceError, match="pins no chart version"):
        sources.locate(request(""))
    # A version that is no plain file name never becomes a cache path (nor a download into one).
    assert sources.cache_entry(request("../../../etc")) is None
    with pytest.raises(
        ChartSourceError, match=r"no cache entry to download into\)\. Give it with --chart-dir DIR "
    ):
        ChartSources((), cache, download=True).locate(request("../x", repository="http://127.0.0.1:9"))


@pytest.mark.parametrize(
    "chart",
    [
        "gpu-operator",
        "nvidia/gpu-operator",
        "oci://registry.example/nvidia/gpu-operator",
        "https://charts.example/gpu-operator-v26.7.0.tgz",
    ],
)
def test_the_chart_name_of_each_way_a_release_names_its_chart(chart: str) -> None:
    assert ChartRequest("ns/op", chart, "v26.7.0", None).chart_name == "gpu-operator"


def test_sources_from_the_command_line_then_the_environment(tmp_path: Path) -> None:
    environ = {
        "GPUSHARE_CHART_DIRS": os.pathsep.join(["/e1", "/e2"]),
        "XDG_CACHE_HOME": str(tmp_path),
        "GPUSHARE_CHART_DOWNLOAD": "0",
    }
    sources = ChartSources.from_environment(["/cli"], environ=environ)
    assert sources == ChartSources(
        (Path("/cli"), Path("/e1"), Path("/e2")), tmp_path / "gpushare/charts", False
    )
    assert ChartSources.from_environment(environ={"HOME": str(tmp_path)}).download is True
    assert ChartSources.from_environment(download=False, environ={}).download is False


@contextlib.contextmanager
def chart_repository(directory: Path) -> Iterator[str]:
    """A Helm chart repository (index.yaml + archives) served on 127.0.0.1 for the duration."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]  # keep the test output quiet
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_chart_is_downloaded_from_its_repository_into_the_cache_once(tmp_path: Path) -> None:
    import helm_python

    repo = tmp_path / "repo"
    repo.mkdir()
    helm_python.package(pinned_charts() / "nvidia-device-plugin-0.17.1", destination=repo)
    cache = tmp_path / "cache"
    with chart_repository(repo) as url:
        helm_python.repo_index_generate(repo, base_url=url)
        sources = ChartSources(pinned_dirs=(), cache_dir=cache, download=True)
        found = sources.locate(request(repository=url))
        assert found == FoundChart(cache / "nvidia-device-plugin-0.17.1", "downloaded")
        assert sorted(p.name for p in cache.iterdir()) == ["nvidia-device-plugin-0.17.1"]  # no leftovers
        assert sources.locate(request(repository=url)).origin == "cache"
        with pytest.raises(ChartSourceError) as caught:
            sources.locate(request("9.9.9", repository=url))
    message = str(caught.value)
    assert message.startswith(
        "Helm release kube-system/plugin: chart nvidia-device-plugin 9.9.9: no chart source (looked in: cache "
    )
    assert f"download from {url} failed: " in message and "\n" not in message
    assert sorted(p.name for p in cache.iterdir()) == ["nvidia-device-plugin-0.17.1"]


@pytest.mark.parametrize("command", ["render", "check"])
def test_no_chart_source_is_one_line_exit_2_and_nothing_written(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if HELM_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode helm")
    out = tmp_path / "out"
    empty = tmp_path / "charts"
    empty.mkdir()
    argv = [
        command,
        "--stack",
        HELM_STACK,
        "--dir",
        str(PROJECT_DIR),
        "--chart-dir",
        str(empty),
        "--no-download",
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GPUSHARE_CHART_DIRS", raising=False)
        status = cli_main.main([*argv, *(["--out", str(out)] if command == "render" else [])])
    captured = capsys.readouterr()
    assert status == 2  # an input that cannot be read (errors.py), issue 34
    assert captured.out == ""
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "gpushare/charts/nvidia-device-plugin-0.17.1"
    assert captured.err == (
        "Helm release nvidia-device-plugin/nvidia-device-plugin: chart nvidia-device-plugin 0.17.1: no chart "
        f"source (looked in: chart directories {empty}; cache {cache}; downloads off). Give it with --chart-dir "
        f"DIR (make: CHART_DIRS=DIR; or GPUSHARE_CHART_DIRS), unpack it as {cache}, or allow the download "
        "from https://nvidia.github.io/k8s-device-plugin (network; not with --no-download or "
        "GPUSHARE_CHART_DOWNLOAD=0)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"]  # no out/, no half-written render


def test_helms_own_warnings_come_back_as_lines_of_the_release(capfd: pytest.CaptureFixture[str]) -> None:
    # The NFD subchart's condition `nfd.enabled` is meant to be a boolean; Helm warns (on stderr, from Go).
    release = helm_release_resource(*OPERATOR, {**operator_values(), "nfd": {"enabled": "sure"}})
    (rendered,) = render_releases([release], pinned_sources(), SCHEMA)
    assert rendered.warning_lines() == [
        "warning: Helm release gpu-operator/op: chart gpu-operator v26.7.0: "
        "WARN returned non-bool value path=nfd.enabled chart=node-feature-discovery"
    ]
    assert capfd.readouterr().err == ""  # collected, not leaked past Python


def test_the_scanner_gate_passes_over_chart_rendered_files(helm_stack: RenderResult) -> None:
    from gpushare.cli import scan

    selection = scan.select(helm_stack.out_dir / "manifests")
    (release,) = helm_stack.releases
    chart_files = {f"{o.file_name}" for o in release.objects}
    passed_over = {path.name: reason for path, reason in selection.passed_over}
    assert chart_files <= set(passed_over)
    assert {passed_over[f] for f in chart_files} == {
        "rendered from a Helm chart: NVIDIA's object, not gpushare's"
    }
    assert not chart_files & {path.name for path in selection.scanned}
