"""gpushare.offline.render / gpushare.offline.manifests: `python -m gpushare render` runs the real program offline and
writes resources, manifests (schema-checked), Helm values, TKE node pools and the capacity plan."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HELM_MIG, PROJECT_DIR, STACKS, stack_file

from gpushare.cli import main as cli_main
from gpushare.errors import ConfigError
from gpushare.offline.manifests import (
    ManifestSchemaError,
    SchemaViolation,
    schema_version,
    validate_manifest,
    without_required,
)
from gpushare.offline.program_mocks import GET_CLUSTERS
from gpushare.offline.render import REDACTED, RenderError, RenderResult, render_stack, run_stack
from gpushare.offline.stack_files import SECRET_PLACEHOLDER
from gpushare.stack.loading import load_stack_file

SCHEMA = "1.30.0"
CONFIG_MAP = "manifests/configmap_kube-system_time-slicing-config.yaml"
L20_DAEMONSET = "manifests/daemonset_kube-system_nvidia-device-plugin-daemonset-l20.yaml"
MANAGED_PATCH = "manifests/daemonsetpatch_kube-system_nvidia-device-plugin-daemonset.yaml"
HELM_VALUES = "manifests/helmrelease_nvidia-device-plugin_nvidia-device-plugin.values.yaml"
OPERATOR_VALUES = "manifests/helmrelease_gpu-operator_gpu-operator.values.yaml"


def read(result: RenderResult, relative: str) -> str:
    return (result.out_dir / relative).read_text()


def load(result: RenderResult, relative: str) -> Any:
    return yaml.safe_load(read(result, relative))


def copy_project(
    destination: Path, stack: str = "prod", extra_config: str = "", extra_main: str = ""
) -> Path:
    """The program and one stack file, nothing else (no venv, no tests), optionally changed."""
    destination.mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py", f"Pulumi.{stack}.yaml"):
        shutil.copy(PROJECT_DIR / name, destination / name)
    shutil.copytree(
        PROJECT_DIR / "components", destination / "components", ignore=shutil.ignore_patterns("__pycache__")
    )
    if extra_config:
        with (destination / f"Pulumi.{stack}.yaml").open("a") as stack_file:
            stack_file.write(textwrap.indent(textwrap.dedent(extra_config), "  "))  # under `config:`
    if extra_main:
        with (destination / "__main__.py").open("a") as main:
            main.write(textwrap.dedent(extra_main))
    return destination


def all_text(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): path.read_text()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


# ---------------------------------------------------------------------------------------------- every stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_renders_consistent_files(rendered: dict[str, RenderResult], stack: str) -> None:
    result = rendered[stack]
    on_disk = sorted(str(p.relative_to(result.out_dir)) for p in result.out_dir.rglob("*") if p.is_file())
    assert on_disk == list(result.files)
    assert {"resources.json", "outputs.json", "capacity.json"} <= set(result.files)

    records = json.loads(read(result, "resources.json"))
    assert [(r["type"], r["name"]) for r in records] == [(r.type, r.name) for r in result.resources]
    assert records[0]["type"] == "pulumi:pulumi:Stack"
    assert set(records[1]) == {
        *("type", "name", "urn", "parent", "custom", "provider", "protect", "dependencies", "inputs"),
        *("secretInputs", "replaceOnChanges", "ignoreChanges", "deleteBeforeReplace"),
        # What the typed SDK classes send besides the inputs (tests/test_provider_resources.py).
        *("version", "pluginDownloadURL", "aliases"),
    }
    assert json.loads(read(result, "outputs.json")) == result.outputs
    assert json.loads(read(result, "capacity.json")) == result.outputs["capacity"]
    # Each JSON file in one canonical form, keys sorted at every level and non-ASCII kept, so two renders
    # of the same stack are byte-identical and a review's diff shows only what changed.
    for name in ("resources.json", "outputs.json", "capacity.json"):
        text = read(result, name)
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n", name

    manifests = [f for f in result.files if f.startswith("manifests/") and not f.endswith(".values.yaml")]
    # Every stack writes its plugin: objects, or (helm with optOut, nothing else in Kubernetes) a values file.
    assert manifests or any(f.endswith(".values.yaml") for f in result.files)
    for file in manifests:
        document = load(result, file)
        assert list(document)[:3] == ["apiVersion", "kind", "metadata"], file
        parts = Path(file).stem.split("_")
        kind, namespace, name = parts if len(parts) == 3 else (parts[0], None, parts[1])  # cluster-scoped
        assert (kind.removesuffix("patch"), namespace, name) == (
            document["kind"].lower(),
            document["metadata"].get("namespace"),
            document["metadata"]["name"],
        )
        assert not any(key.startswith("__") for key in document)
        # What was written is what was validated: it passes the strict schema read back from disk.
        # (What a chart renders is validated as the API server reads it: test_chart_render.py.)
        if not read(result, file).startswith("# chart-rendered:"):
            assert validate_manifest(document, SCHEMA, patch=kind.endswith("patch"), file=file) is None

    for resource in result.resources:
        assert f"{resource.type} {resource.name}" in result.tree
    # The offline answer to the kubeconfig lookup is configuration of the mocks, never written out.
    kubernetes_provider = next(r for r in records if r["type"] == "pulumi:providers:kubernetes")
    assert kubernetes_provider["inputs"]["kubeconfig"] == REDACTED
    assert "offline.invalid" not in "".join(all_text(result.out_dir).values())


def test_prod_time_slicing_config_map(rendered: dict[str, RenderResult]) -> None:
    prod = rendered["prod"]
    config_map = load(prod, CONFIG_MAP)
    assert (config_map["apiVersion"], config_map["kind"]) == ("v1", "ConfigMap")
    assert config_map["metadata"]["namespace"] == "kube-system"
    assert sorted(config_map["data"]) == ["any", "l20", "t4"]
    replicas = {
        key: yaml.safe_load(text)["sharing"]["timeSlicing"]["resources"][0]["replicas"]
        for key, text in config_map["data"].items()
    }
    assert replicas == {"any": 2, "l20": 8, "t4": 3}
    # Block scalars, as in the seed's ConfigMap, not one escaped line per key.
    assert "  l20: |\n    version: v1\n    flags:\n      migStrategy: none\n" in read(prod, CONFIG_MAP)


def test_prod_l20_daemonset_and_managed_plugin_patch(rendered: dict[str, RenderResult]) -> None:
    prod = rendered["prod"]
    daemonset = load(prod, L20_DAEMONSET)
    assert (daemonset["apiVersion"], daemonset["kind"]) == ("apps/v1", "DaemonSet")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert "--config-file=/etc/nvidia/time-slicing-config/l20" in container["args"]
    assert daemonset["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"] == "l20"

    text = read(prod, MANAGED_PATCH)
    assert text.startswith(
        "# server-side apply patch: kubectl apply --server-side --force-conflicts "
        "--field-manager=gpushare-tke-device-plugin -f daemonsetpatch_kube-system_nvidia-device-plugin-daemonset.yaml\n"
    )
    patch = yaml.safe_load(text)
    assert (patch["apiVersion"], patch["kind"]) == ("apps/v1", "DaemonSet")  # the base kind, not ...Patch
    # The stack and cluster the patch belongs to, which verify and measure read (issue 34).
    assert patch["metadata"]["annotations"] == {
        "gpushare.io/cluster": "cls-prod0001",
        "gpushare.io/stack": "prod",
        "pulumi.com/patchForce": "true",
        "pulumi.com/patchFieldManager": "gpushare-tke-device-plugin",
    }
    assert "selector" not in patch["spec"]  # partial: what the patch owns and nothing else
    adopted = patch["spec"]["template"]["spec"]["containers"][0]
    assert "--config-file=/etc/nvidia/time-slicing-config/t4" in adopted["args"]


def test_prod_capacity_tke_pools_and_resources(rendered: dict[str, RenderResult]) -> None:
    prod = rendered["prod"]
    capacity = json.loads(read(prod, "capacity.json"))
    assert (capacity["totalSlots"], capacity["slotsBefore"]) == (11, 2)
    assert {pool["name"]: pool["slots"] for pool in capacity["pools"]} == {"l20": 8, "t4": 3}

    for pool, instance_type in (("l20", "PNV5b.8XLARGE96"), ("t4", "GN7.2XLARGE32")):
        text = read(prod, f"tke/gpushare-{pool}.yaml")
        node_pool = yaml.safe_load(text)
        assert node_pool["name"] == f"gpushare-{pool}"
        assert node_pool["autoScalingConfig"]["instanceType"] == instance_type
        assert node_pool["labels"]["nvidia.com/device-plugin.config"] == pool
        assert node_pool["labels"]["gpushare.io/pool"] == pool
        assert node_pool["deletionProtection"] is True
        assert "# protect: true" in text
    assert not any(file.endswith(".pre-start.sh") for file in prod.files)  # no MIG pool in prod

    records = {r["name"]: r for r in json.loads(read(prod, "resources.json"))}
    node_pool = records["gpushare-l20-pool"]
    assert node_pool["protect"] is True
    assert node_pool["deleteBeforeReplace"] is None  # not sent: the provider and Pulumi decide
    assert "delete_before_replace" not in read(prod, "tke/gpushare-l20.yaml")
    assert node_pool["parent"] == records["gpushare-l20"]["urn"]
    assert node_pool["provider"] == f"{records['tencentcloud']['urn']}::tencentcloud_id"


@pytest.fixture(scope="module")
def helm_mig_render(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """The device-plugin chart with a time-sliced H20 MIG pool (tests/fixtures/stacks), rendered."""
    project = tmp_path_factory.mktemp("helm-mig")
    for entry in ("Pulumi.yaml", "__main__.py", "components", "gpushare"):
        (project / entry).symlink_to(PROJECT_DIR / entry)
    shutil.copy(stack_file(HELM_MIG), project / f"Pulumi.{HELM_MIG}.yaml")
    return render_stack(project, HELM_MIG, project / "out")


def test_helm_values_and_mig_pre_start_script(helm_mig_render: RenderResult) -> None:
    rendered = helm_mig_render
    text = read(rendered, HELM_VALUES)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert "# chart: nvidia-device-plugin" in header
    assert "# version: 0.17.1" in header
    assert "# repository: https://nvidia.github.io/k8s-device-plugin" in header
    values = yaml.safe_load(text)
    assert sorted(values["config"]["map"]) == ["any", "h20", "l20"]
    assert values["config"]["default"] == "any"
    h20 = yaml.safe_load(values["config"]["map"]["h20"])
    # floor(0.9 x 11264 / 4621) = 2 per 1g.12gb; floor(0.9 x 22138 / 4621) = 4 per 1g.24gb
    assert h20["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/mig-1g.12gb", "replicas": 2},
        {"name": "nvidia.com/mig-1g.24gb", "replicas": 4},
    ]
    assert "    h20: |\n" in text
    assert all(  # Helm mode: no own DaemonSets, only the chart's
        read(rendered, f).startswith("# chart-rendered: nvidia-device-plugin 0.17.1,")
        for f in rendered.files
        if f.startswith("manifests/daemonset_")
    )

    node_pool_text = read(rendered, "tke/gpushare-h20.yaml")
    node_pool = yaml.safe_load(node_pool_text)
    assert node_pool["labels"]["nvidia.com/mig.config"] == "h20-6x1g.12gb-1x1g.24gb"
    script = read(rendered, "tke/gpushare-h20.pre-start.sh")
    assert script == base64.b64decode(node_pool["nodeConfig"]["preStartUserScript"]).decode()
    assert script.startswith("#!/bin/bash\n") and "systemctl enable gpushare-mig.service" in script
    assert node_pool["nodeConfig"]["userData"] == node_pool["nodeConfig"]["preStartUserScript"]
    assert "decoded for review: gpushare-h20.pre-start.sh" in node_pool_text
    # What the script installs, next to it for review: the unit, its script and the layout.
    unit = read(rendered, "tke/gpushare-h20.gpushare-mig.service")
    assert "Before=kubelet.service" in unit.splitlines()
    assert read(rendered, "tke/gpushare-h20.gpushare-mig-setup").startswith("#!/bin/bash\n")
    assert "MIG_PROFILES=" + ",".join(["1g.24gb"] + ["1g.12gb"] * 6) + "\n" in read(
        rendered, "tke/gpushare-h20.mig.env"
    )
    assert "#   it installs /etc/systemd/system/gpushare-mig.service: gpushare-h20.gpushare-mig.service" in (
        node_pool_text
    )
    assert "preStartUserScript" not in load(rendered, "tke/gpushare-l20.yaml")["nodeConfig"]


def test_dev_renders_the_device_plugin_chart_for_t4_and_the_mps_l20(
    rendered: dict[str, RenderResult],
) -> None:
    values = load(rendered["dev"], HELM_VALUES)
    assert sorted(values["config"]["map"]) == ["any", "l20", "t4"]
    t4 = yaml.safe_load(values["config"]["map"]["t4"])
    assert t4["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 3}]
    # The L20 MPS pool (issue 37): floor(0.9 x 46068 / 4621) = 8 clients, and the chart's MPS root.
    l20 = yaml.safe_load(values["config"]["map"]["l20"])
    assert l20["sharing"]["mps"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 8}]
    assert values["mps"] == {"root": "/run/nvidia/mps"}
    assert [f for f in rendered["dev"].files if f.startswith("tke/")] == [
        "tke/gpushare-l20.yaml",
        "tke/gpushare-t4.yaml",
    ]


def test_staging_writes_the_operator_values_and_the_config_maps_they_name(
    rendered: dict[str, RenderResult],
) -> None:
    staging = rendered["staging"]
    text = read(staging, OPERATOR_VALUES)
    assert "# chart: gpu-operator" in text and "# version: v26.7.0" in text
    values = yaml.safe_load(text)
    plugin_config = values["devicePlugin"]["config"]["name"]
    mig_config = values["migManager"]["config"]["name"]
    # Both ConfigMaps are written next to the values, in the operator's namespace, schema-valid.
    plugin_map = load(staging, f"manifests/configmap_gpu-operator_{plugin_config}.yaml")
    mig_map = load(staging, f"manifests/configmap_gpu-operator_{mig_config}.yaml")
    assert sorted(plugin_map["data"]) == ["any", "h20", "l20"]
    assert "h20-6x1g.12gb-1x1g.24gb" in yaml.safe_load(mig_map["data"]["config.yaml"])["mig-configs"]
    assert not [f for f in staging.files if f.endswith(".pre-start.sh")]  # the MIG manager partitions


def test_the_cluster_lookup_is_answered_by_the_mocks() -> None:
    stack_run = run_stack(PROJECT_DIR, "prod")
    assert stack_run.run.invokes == [(GET_CLUSTERS, {"clusterId": "cls-prod0001"})]
    provider = stack_run.run.resource("pulumi:providers:kubernetes", "kubernetes")
    assert provider.secret_input_paths == ["kubeconfig"]
    assert "server: https://cls-prod0001.offline.invalid" in provider.inputs["kubeconfig"]


# ---------------------------------------------------------------------------------------------- determinism


def test_two_renders_are_byte_identical(rendered: dict[str, RenderResult], tmp_path: Path) -> None:
    again = render_stack(PROJECT_DIR, "prod", tmp_path / "again")
    first = rendered["prod"]
    assert again.files == first.files and again.tree == first.tree
    for relative in first.files:
        assert (again.out_dir / relative).read_bytes() == (first.out_dir / relative).read_bytes(), relative


def test_provider_settings_in_the_environment_change_nothing(
    rendered: dict[str, RenderResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The TencentCloud SDK copies TENCENTCLOUD_SECRET_ID into the provider's inputs, not even as a secret.
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDenvironmentLEAK")
    monkeypatch.setenv("PULUMI_K8S_ENABLE_PATCH_FORCE", "true")
    result = render_stack(PROJECT_DIR, "prod", tmp_path / "out")
    assert all_text(result.out_dir) == all_text(rendered["prod"].out_dir)
    assert os.environ["TENCENTCLOUD_SECRET_ID"] == "AKIDenvironmentLEAK"  # hidden for the run only


def test_a_previous_render_is_replaced_as_a_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    render_stack(PROJECT_DIR, "prod", out)
    stale = out / "manifests" / "configmap_kube-system_removed-since.yaml"
    stale.write_text("stale\n")
    render_stack(PROJECT_DIR, "prod", out)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging or retired directories left


def test_a_directory_that_is_not_a_render_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("mine\n")
    with pytest.raises(RenderError, match="not a previous render"):
        render_stack(PROJECT_DIR, "prod", out)
    assert [p.name for p in out.iterdir()] == ["todo.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]


# ---------------------------------------------------------------------------------------------- schema


DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "plugin", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"name": "plugin"}},
        "template": {
            "metadata": {"labels": {"name": "plugin"}},
            "spec": {"containers": [{"name": "plugin", "image": "plugin:1", "args": ["--a"]}]},
        },
    },
}


def with_container(**fields: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(DAEMONSET))
    document["spec"]["template"]["spec"]["containers"][0].update(fields)
    return document


def test_schema_accepts_a_valid_object_and_names_the_field_of_an_invalid_one() -> None:
    assert validate_manifest(DAEMONSET, SCHEMA) is None
    unknown = validate_manifest(with_container(imagePullPolice="Always"), SCHEMA, file="ds.yaml")
    assert unknown == SchemaViolation(
        file="ds.yaml",
        path="spec.template.spec.containers[0]",
        message="Additional properties are not allowed ('imagePullPolice' was unexpected)",
    )
    wrong_type = validate_manifest(with_container(args="--a"), SCHEMA, file="ds.yaml")
    assert wrong_type is not None
    assert (wrong_type.path, wrong_type.message) == (
        "spec.template.spec.containers[0].args",
        "'--a' is not of type 'array', 'null'",
    )
    assert (
        str(wrong_type)
        == "ds.yaml: spec.template.spec.containers[0].args: '--a' is not of type 'array', 'null'"
    )
    top = validate_manifest({**DAEMONSET, "spek": {}}, SCHEMA)
    assert top is not None and top.path == "(top level)"
    crd = validate_manifest({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}, SCHEMA)
    assert crd is not None and "Couldn't find schema for kind Widget" in crd.message


def test_patches_may_be_partial_but_not_misspelt() -> None:
    partial = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"nodeSelector": {"gpushare.io/managed-plugin": "parked"}}}},
    }
    missing_selector = validate_manifest(partial, SCHEMA)
    assert missing_selector is not None and "required property" in missing_selector.message
    assert validate_manifest(partial, SCHEMA, patch=True) is None
    nameless_container = {"spec": {"template": {"spec": {"containers": [{"args": ["--b"]}]}}}}
    assert validate_manifest({**partial, **nameless_container}, SCHEMA, patch=True) is None

    misspelt = json.loads(json.dumps(partial))
    misspelt["spec"]["template"]["spec"]["nodeSelectr"] = {}
    violation = validate_manifest(misspelt, SCHEMA, patch=True)
    assert violation is not None
    assert (violation.path, violation.message) == (
        "spec.template.spec",
        "Additional properties are not allowed ('nodeSelectr' was unexpected)",
    )
    wrong_type = validate_manifest(
        {**partial, **nameless_container, "spec": {"minReadySeconds": "5"}}, SCHEMA, patch=True
    )
    assert wrong_type is not None and wrong_type.path == "spec.minReadySeconds"


def test_required_is_dropped_only_where_it_is_a_keyword() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"required": {"type": "array", "required": ["x"]}, "a": {"enum": [{"required": 1}]}},
        "$defs": {"X": {"required": ["y"], "items": [{"required": ["z"]}]}},
    }
    assert without_required(schema) == {
        "type": "object",
        "properties": {"required": {"type": "array"}, "a": {"enum": [{"required": 1}]}},
        "$defs": {"X": {"items": [{}]}},
    }


def test_schema_version_comes_from_the_cluster_version() -> None:
    assert schema_version("1.30") == "1.30.0"
    assert schema_version("1.37") == "1.37.0"
    with pytest.raises(ConfigError) as raised:
        schema_version("1.24", source="Pulumi.old.yaml")
    assert str(raised.value).startswith(
        "Pulumi.old.yaml: gpushare:cluster.kubernetesVersion: kubernetes-validate 1.37.0 has no schema for "
        "Kubernetes 1.24 (it has 1.25 to 1.37)"
    )


def test_an_invalid_manifest_fails_the_render_and_writes_nothing(tmp_path: Path) -> None:
    project = copy_project(
        tmp_path / "project",
        extra_main="""
        import pulumi_kubernetes as k8s

        k8s.core.v1.ConfigMap(
            "broken", metadata={"name": "broken", "namespace": "kube-system"}, data={"replicas": 2}
        )
        """,
    )
    out = tmp_path / "out"
    render_stack(PROJECT_DIR, "prod", out)  # a good render first: a failed one must leave it alone
    before = all_text(out)
    with pytest.raises(ManifestSchemaError) as raised:
        render_stack(project, "prod", out)
    assert raised.value.violations == (
        SchemaViolation(
            file="manifests/configmap_kube-system_broken.yaml",
            path="data.replicas",
            message="2 is not of type 'string', 'null'",
        ),
    )
    assert str(raised.value).splitlines() == [
        "1 manifest fails the Kubernetes 1.30 schema (strict: unknown fields are errors):",
        "  manifests/configmap_kube-system_broken.yaml: data.replicas: 2 is not of type 'string', 'null'",
    ]
    assert all_text(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "project"]


def test_an_unsupported_cluster_version_fails_before_running(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    stack_file = project / "Pulumi.prod.yaml"
    stack_file.write_text(
        stack_file.read_text().replace('kubernetesVersion: "1.30"', 'kubernetesVersion: "1.24"')
    )
    with pytest.raises(ConfigError, match=r"^Pulumi.prod.yaml: gpushare:cluster.kubernetesVersion: .* 1\.24"):
        render_stack(project, "prod", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- secrets


def test_secret_config_never_reaches_a_file(tmp_path: Path) -> None:
    project = copy_project(
        tmp_path / "project",
        extra_config="""
          gpushare:kubeconfig:
            secure: v1:SECRETVALUEkubeconfigCIPHERTEXT
          tencentcloud:secretKey:
            secure: v1:SECRETVALUEtencentCIPHERTEXT
        """,
        extra_main="""
        import pulumi_kubernetes as k8s

        k8s.core.v1.Secret(
            "token",
            metadata={"name": "gpushare-token", "namespace": "kube-system"},
            string_data={"kubeconfig": pulumi.Config().require_secret("kubeconfig")},
        )
        """,
    )
    result = render_stack(project, "prod", tmp_path / "out")
    texts = all_text(result.out_dir)
    for file, text in texts.items():
        assert "SECRETVALUE" not in text, file
        assert SECRET_PLACEHOLDER not in text, file
    records = {r["name"]: r for r in json.loads(texts["resources.json"])}
    assert records["kubernetes"]["inputs"]["kubeconfig"] == REDACTED
    assert records["kubernetes"]["secretInputs"] == ["kubeconfig"]
    # Redacted leaf by leaf: the Secret keeps its shape and still passes the schema.
    secret = yaml.safe_load(texts["manifests/secret_kube-system_gpushare-token.yaml"])
    assert secret["stringData"] == {"kubeconfig": REDACTED}
    assert GET_CLUSTERS not in {token for token, _ in run_stack(project, "prod").run.invokes}
    assert "SECRETVALUE" not in result.tree


def test_a_secret_on_a_non_secret_path_stops_the_render(tmp_path: Path) -> None:
    project = copy_project(
        tmp_path / "project",
        extra_config="""
          gpushare:kubeconfig:
            secure: v1:SECRETVALUEkubeconfigCIPHERTEXT
        """,
        # Config.get() hands a secret over as a plain value: the engine would not know to hide it.
        extra_main="""
        pulumi.export("copied", pulumi.Config().get("kubeconfig"))
        """,
    )
    with pytest.raises(
        RenderError, match=r"^outputs.json: would contain a secret in clear text \(a `secure:`"
    ):
        render_stack(project, "prod", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- user errors


def test_a_broken_stack_file_exits_1_with_the_validators_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(tmp_path / "project")
    stack_file = project / "Pulumi.prod.yaml"
    stack_file.write_text(
        stack_file.read_text().replace("        measuredMiB: 4621", "        measuredMiB: -5", 1)
    )
    with pytest.raises(ConfigError) as expected:
        load_stack_file(stack_file, "prod")
    out = tmp_path / "out"

    code = cli_main.main(["render", "--stack", "prod", "--out", str(out), "--dir", str(project)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err == f"{expected.value}\n"
    assert captured.err == "Pulumi.prod.yaml: gpushare:pools[0].sharing.measuredMiB: must be > 0\n"
    assert captured.out == ""
    assert not out.exists()

    # A missing stack file is unreadable input: 2, as for every command.
    assert cli_main.main(["render", "--stack", "nope", "--out", str(out), "--dir", str(project)]) == 2
    assert capsys.readouterr().err.startswith("Pulumi.nope.yaml: no such stack file")
    assert not out.exists()


def test_a_program_run_error_becomes_the_render_error(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    (project / "__main__.py").write_text(
        'import pulumi\n\nraise pulumi.RunError("Pulumi.prod.yaml: gpushare:pools[0].gpu: no such GPU")\n'
    )
    with pytest.raises(RenderError) as raised:
        render_stack(project, "prod", tmp_path / "out")
    assert str(raised.value) == "Pulumi.prod.yaml: gpushare:pools[0].gpu: no such GPU"
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- CLI


@pytest.mark.e2e
def test_cli_render_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "prod"
    completed = subprocess.run(
        [sys.executable, "-m", "gpushare", "render", "--stack", "prod", "--out", str(out)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    # Prod's two pools share gpushare:cluster.subnetIds (ForceNew): the one note, nothing else.
    assert completed.stderr == (
        "note: Pulumi.prod.yaml: gpushare:cluster.subnetIds: every pool (l20, t4) sits behind this one list, "
        "which TKE cannot change in place: adding a subnet replaces them all at once; give a pool its own "
        "pools[].subnetIds to move one pool at a time\n"
    )
    stdout = completed.stdout
    assert stdout.startswith(
        f"Rendered stack prod into {out}: 14 resources, 8 files; 3 Kubernetes objects valid against the "
        "Kubernetes 1.30 schema (strict)\n\n"
    )
    assert "└─ gpushare:index:GpuSharingCluster gpushare\n" in stdout
    assert "│  └─ tencentcloud:Kubernetes/nodePool:NodePool gpushare-l20-pool [protect]\n" in stdout
    assert "11 schedulable GPU slots against 2 before sharing" in stdout
    assert yaml.safe_load((out / CONFIG_MAP).read_text())["kind"] == "ConfigMap"


def test_a_pool_deleted_before_its_replacement_says_so_in_the_render(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    stack_path = project / "Pulumi.prod.yaml"
    document = yaml.safe_load(stack_path.read_text())
    document["config"]["gpushare:pools"][1]["deleteBeforeReplace"] = True  # t4
    stack_path.write_text(yaml.safe_dump(document))
    result = render_stack(project, "prod", tmp_path / "out")
    records = {r["name"]: r for r in json.loads(read(result, "resources.json"))}
    assert (
        records["gpushare-t4-pool"]["deleteBeforeReplace"],
        records["gpushare-l20-pool"]["deleteBeforeReplace"],
    ) == (True, None)
    header = read(result, "tke/gpushare-t4.yaml").split("\n")[:4]
    assert "# delete_before_replace: true (a replacement deletes this pool and its nodes first)" in header


def test_render_of_a_stack_whose_objects_are_all_the_charts_counts_its_values_file_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dev: manifests/ holds the device-plugin chart's 6 objects and the release's values file, so 7 - 6 - 1
    = 0 objects of its own; the values file is counted on its own."""
    out = tmp_path / "dev"
    code = cli_main.main(["render", "--stack", "dev", "--out", str(out), "--dir", str(PROJECT_DIR)])
    assert code == 0
    first = capsys.readouterr().out.split("\n")[0]
    assert first == (
        # 10 resources and 12 files since dev's L20 MPS pool (issue 37): its GpuNodePool, NodePool, tke/ file.
        f"Rendered stack dev into {out}: 10 resources, 12 files; no Kubernetes objects of its own (its Helm "
        "releases' are below), 1 Helm values file"
    )
