"""What the engine receives for every resource the program registers: its type, inputs, secrets, provider
`version` and `pluginDownloadURL`, aliases and provider reference, against the SDKs' typed classes.

The components register through pulumi-kubernetes' and tencentcloud-iac-pulumi's typed classes; the SDK is
the oracle. Every resource a render records is registered again through its typed class, with the same
values under the typed class's Python names, and the two registrations must be the same request: a
component that overrode the version, dropped the aliases or sent a plain dict where the class would
translate names shows up as a difference. The versions are held against pyproject.toml's pins and the
aliases against pulumi-kubernetes' own list, written down here; `undeclared_names` holds every TKE and
Helm name, one-word names included, against the typed classes' declarations.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import pkgutil
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import tencentcloud_iac_pulumi as tencentcloud
from conftest import HELM_MIG, PROJECT_DIR, STACKS, stack_file

from components.device_plugin_release import DevicePluginRelease, DevicePluginReleaseArgs
from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.gpu_operator_release import GpuOperatorRelease, GpuOperatorReleaseArgs
from components.providers import kubernetes_provider, tencentcloud_provider
from gpushare import resource_types
from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.mock_run import run_function
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.offline.render import RenderResult
from gpushare.plan import build_plan
from gpushare.plugin_configs import plugin_config_entries
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import GpuDriver, StackConfig

# Property names are lowerCamelCase identifiers; map keys (labels, `gpu_args.cudnn`'s `doc_name`) are not
# converted: they contain `.`, `/`, `-` or `_`, or are single lower-case words, which convert to themselves.
_CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")

TYPED_KUBE_CLASSES: dict[str, Callable[..., pulumi.CustomResource]] = {
    resource_types.CONFIG_MAP: k8s.core.v1.ConfigMap,
    "kubernetes:core/v1:Namespace": k8s.core.v1.Namespace,
    resource_types.DAEMON_SET: k8s.apps.v1.DaemonSet,
    resource_types.DAEMON_SET_PATCH: k8s.apps.v1.DaemonSetPatch,
}


# Kubernetes objects are checked name by name against the Kubernetes schema by the render (strict); the
# providers' own resources against their typed classes' declarations.
TYPED_ARGS_CLASSES: dict[str, type] = {
    resource_types.NODE_POOL: tencentcloud.kubernetes.NodePoolArgs,
    resource_types.HELM_RELEASE: k8s.helm.v3.ReleaseArgs,
}


def python_name(key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key) if _CAMEL.match(key) else key


def python_names(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {python_name(k): python_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [python_names(v) for v in value]
    return value


def test_python_name_converts_property_names_only() -> None:
    assert python_name("autoScalingConfig") == "auto_scaling_config"
    assert python_name("preStartUserScript") == "pre_start_user_script"
    assert python_name("name") == "name"
    assert python_name("doc_name") == "doc_name"
    assert python_name("nvidia.com/device-plugin.config") == "nvidia.com/device-plugin.config"


_ARGS_CLASS = re.compile(r"ForwardRef\('(\w+Args)'\)")


def undeclared_names(args_class: type, inputs: Mapping[str, Any], path: str = "") -> list[str]:
    """Every key of `inputs` (wire names) that `args_class`, a typed SDK `*Args` class, does not declare,
    recursively through the nested `*Args` its annotations name; a Mapping-typed property (labels, a
    string map, chart values) holds free keys and is not descended into."""
    annotations = args_class.__init__.__annotations__
    module = sys.modules[args_class.__module__]
    found = []
    for key, value in inputs.items():
        name = python_name(key)
        if name not in annotations:
            found.append(f"{path}{key}")
            continue
        nested = _ARGS_CLASS.search(repr(annotations[name]))
        if nested is None:
            continue
        nested_class = getattr(module, nested.group(1))
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            where = f"{path}{key}[{index}]." if isinstance(value, list) else f"{path}{key}."
            found += undeclared_names(nested_class, item, where)
    return found


def registered(run: ProgramRun, *types: str) -> list[RecordedResource]:
    return [r for r in run.resources if r.type in types]


def through_typed_class(resource: RecordedResource) -> RecordedResource:
    """`resource` registered again through its typed SDK class, its inputs under their Python names."""
    if resource.type == resource_types.NODE_POOL:
        typed: Callable[..., pulumi.CustomResource] = tencentcloud.kubernetes.NodePool
        kwargs = python_names(resource.inputs)
    elif resource.type == resource_types.HELM_RELEASE:
        typed = k8s.helm.v3.Release
        # `values` is the chart's, in the chart's own names; `compat` is the typed class's own constant.
        kwargs = {python_name(k): v for k, v in resource.inputs.items() if k != "compat"}
        kwargs["repository_opts"] = python_names(kwargs["repository_opts"])
    else:
        typed = TYPED_KUBE_CLASSES[resource.type]
        # Top-level keywords in Python names; nested values as they are: a typed class translates the
        # Python names it knows and passes every other key through, so a camelCase manifest goes out as is.
        kwargs = {python_name(k): v for k, v in resource.inputs.items() if k not in ("apiVersion", "kind")}

    def build() -> None:
        typed(resource.name, **kwargs)

    [again] = registered(run_function(build, project="gpushare", stack="typed"), resource.type)
    return again


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_pool_and_kubernetes_object_is_what_its_typed_class_sends(
    stack: str, rendered: dict[str, RenderResult]
) -> None:
    resources = rendered[stack].resources
    plain = [
        r
        for r in resources
        if r.type in (resource_types.NODE_POOL, resource_types.HELM_RELEASE, *TYPED_KUBE_CLASSES)
    ]
    assert any(r.type == resource_types.NODE_POOL for r in plain)  # every stack has node pools
    for resource in plain:
        assert_same_as_typed(resource)


def registration(resource: RecordedResource) -> tuple[object, ...]:
    return (
        resource.type,
        resource.inputs,
        resource.additional_secret_outputs,
        resource.secret_input_paths,
        resource.version,
        resource.plugin_download_url,
        resource.aliases,
    )


def assert_same_as_typed(resource: RecordedResource) -> None:
    assert registration(through_typed_class(resource)) == registration(resource), resource.urn
    if resource.type in TYPED_ARGS_CLASSES:
        assert undeclared_names(TYPED_ARGS_CLASSES[resource.type], resource.inputs) == [], resource.urn
    # A typed *Args omits a property given as None; a plain dict would send null.
    assert none_paths(resource.inputs) == [], resource.urn


def none_paths(value: Any, path: str = "") -> list[str]:
    if value is None:
        return [path or "(the inputs)"]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in none_paths(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in none_paths(v, f"{path}[{i}]")]
    return []


def test_none_paths_finds_nested_nulls() -> None:
    assert none_paths({"a": {"b": None}, "c": [1, None], "d": "x"}) == ["a.b", "c[1]"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_provider_resource_has_its_provider_explicitly(
    stack: str, rendered: dict[str, RenderResult]
) -> None:
    """A default provider would be configured from the stack's `tencentcloud:`/`kubernetes:` config and the
    ambient kubeconfig, not from the cluster the stack names."""
    providers = {r.urn for r in rendered[stack].resources if r.type.startswith("pulumi:providers:")}
    custom = [r for r in rendered[stack].resources if r.custom and not r.type.startswith("pulumi:")]
    assert custom
    for resource in custom:
        assert resource.provider is not None, resource.urn
        urn, _, _ = resource.provider.rpartition("::")
        package = resource.type.split(":")[0]
        assert urn in providers and urn.split("::")[-2] == f"pulumi:providers:{package}", resource.urn


def test_helm_releases_and_their_objects_are_what_the_typed_classes_send() -> None:
    """Without the pinned charts the stack renders above are skipped for helm and gpu-operator stacks:
    the two release components on their own, under the mocks, need no chart."""
    dev = load_stack_file(stack_file("dev"))
    staging = load_stack_file(stack_file("staging"))
    staging_plan = build_plan(staging)

    def body() -> None:
        DevicePluginRelease("dp", DevicePluginReleaseArgs(dev.plugin, plugin_config_entries(build_plan(dev))))
        GpuOperatorRelease("op", GpuOperatorReleaseArgs(staging_plan, plugin_config_entries(staging_plan)))

    run = run_function(body, project="gpushare", stack="test", mocks=program_mocks())
    releases = registered(run, resource_types.HELM_RELEASE)
    objects = registered(run, *TYPED_KUBE_CLASSES)
    assert [r.inputs["chart"] for r in releases] == ["nvidia-device-plugin", "gpu-operator"]
    # The operator's namespace and its two content-addressed ConfigMaps.
    assert sorted(r.type for r in objects) == [
        resource_types.CONFIG_MAP,
        resource_types.CONFIG_MAP,
        "kubernetes:core/v1:Namespace",
    ]
    for resource in [*releases, *objects]:
        assert_same_as_typed(resource)


def _pool_with_everything(stack: StackConfig) -> GpuNodePoolArgs:
    """A pool using every TKE property the program can send: taints, a driver with CUDA and cuDNN (both
    optional cuDNN names), autoscaling (min != max) and a pre-start script."""
    pool = stack.pool("h20").model_copy(
        update={
            "taints": ({"key": "gpu", "value": "h20", "effect": "NoSchedule"},),
            "driver": GpuDriver.model_validate(
                {
                    "version": "535.161.07",
                    "name": "NVIDIA-Linux-x86_64-535.161.07.run",
                    "cuda": {"version": "12.2", "name": "cuda_12.2"},
                    "cudnn": {"version": "8.9", "name": "cudnn-8.9", "docName": "doc", "devName": "dev"},
                }
            ),
            "nodes": stack.pool("h20").nodes.model_copy(update={"min": 1, "max": 3, "desired": 2}),
        }
    )
    return GpuNodePoolArgs(stack.cluster, pool, {"extra/label": "x"}, pre_start_script="#!/bin/sh\n")


def test_a_node_pool_with_every_optional_property_is_what_the_typed_class_sends() -> None:
    args = _pool_with_everything(load_stack_file(stack_file(HELM_MIG)))
    [pool] = registered(
        run_function(lambda: GpuNodePool("h20", args), project="gpushare", stack="test"),
        resource_types.NODE_POOL,
    )
    node_config = pool.inputs["nodeConfig"]
    assert set(node_config) == {"gpuArgs", "preStartUserScript", "userData"}
    assert set(node_config["gpuArgs"]) == {"migEnable", "driver", "cuda", "cudnn"}
    assert node_config["gpuArgs"]["cudnn"] == {
        "version": "8.9",
        "name": "cudnn-8.9",
        "doc_name": "doc",
        "dev_name": "dev",
    }
    assert pool.inputs["taints"] == [{"key": "gpu", "value": "h20", "effect": "NoSchedule"}]
    assert pool.inputs["enableAutoScale"] is True
    assert_same_as_typed(pool)


def test_a_misspelt_property_name_is_caught_by_the_comparison() -> None:
    """The oracle can fail: a nested name the provider does not have is not translated by the typed class."""
    args = _pool_with_everything(load_stack_file(stack_file(HELM_MIG)))
    [pool] = registered(
        run_function(lambda: GpuNodePool("h20", args), project="gpushare", stack="test"),
        resource_types.NODE_POOL,
    )
    misspelt = RecordedResource(
        **{**pool.__dict__, "inputs": {**pool.inputs, "autoScalingConfig": {"instanceTypes": "x"}}}
    )
    assert through_typed_class(misspelt).inputs["autoScalingConfig"] != misspelt.inputs["autoScalingConfig"]
    with pytest.raises(TypeError):
        through_typed_class(
            RecordedResource(**{**pool.__dict__, "inputs": {**pool.inputs, "clusterIds": "x"}})
        )


def test_the_kubeconfig_is_looked_up_by_the_stacks_cluster_id_through_the_tke_provider() -> None:
    prod = load_stack_file(stack_file("prod"))
    assert not prod.has_kubeconfig  # prod reads the kubeconfig from TKE

    def body() -> None:
        kubernetes_provider(prod, tencentcloud.Provider("tencentcloud", region=prod.region))

    run = run_function(body, project="gpushare", stack="test", mocks=program_mocks())
    assert run.invokes == [(resource_types.GET_CLUSTERS, {"clusterId": "cls-prod0001"})]
    [provider] = registered(run, resource_types.KUBERNETES_PROVIDER)
    # The first cluster's kubeConfig, as the mocks answer for cls-prod0001.
    assert "server: https://cls-prod0001.offline.invalid" in provider.inputs["kubeconfig"]
    assert provider.secret_input_paths == ["kubeconfig"]


# pyproject.toml's `program` extra pins each provider SDK (requirements.txt installs that distribution with
# it); its typed classes ask the engine for that provider version.
def pinned_version(distribution: str) -> str:
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]
    dependencies = project["optional-dependencies"]["program"]
    pins = dict(requirement.split("==", 1) for requirement in dependencies if "==" in requirement)
    return pins[distribution].strip()


# package -> (version, pluginDownloadURL); the URL is tencentcloud-iac-pulumi's pulumi-plugin.json `server`.
PROVIDER_PLUGINS = {
    "kubernetes": (pinned_version("pulumi-kubernetes"), ""),
    "tencentcloud": (pinned_version("tencentcloud-iac-pulumi"), "github://api.github.com/tencentcloudstack"),
}

# pulumi-kubernetes' DaemonSet and DaemonSetPatch are also known under the API versions they were served
# as before apps/v1: a state written by either still matches (pulumi_kubernetes/apps/v1/DaemonSet.py).
DAEMONSET_ALIASES = {
    kind: [
        {"spec": {"parentUrn": "", "type": f"kubernetes:apps/v1beta2:{kind}"}},
        {"spec": {"parentUrn": "", "type": f"kubernetes:extensions/v1beta1:{kind}"}},
    ]
    for kind in ("DaemonSet", "DaemonSetPatch")
}


def test_pinned_versions_are_read_from_the_distributions_pins() -> None:
    assert PROVIDER_PLUGINS["kubernetes"][0] == "4.34.2"
    assert PROVIDER_PLUGINS["tencentcloud"][0] == "0.2.3"


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_carries_its_providers_version_and_the_daemonsets_their_aliases(
    stack: str, rendered: dict[str, RenderResult]
) -> None:
    """A plain `pulumi.CustomResource` under the same token sends neither: the engine could not tell
    which provider plugin a state was written with, and a DaemonSet from an older API version would not
    be matched."""
    custom = [r for r in rendered[stack].resources if r.custom]
    assert {r.type for r in custom} >= {
        resource_types.KUBERNETES_PROVIDER,
        resource_types.TENCENTCLOUD_PROVIDER,
        resource_types.NODE_POOL,
    }
    for resource in custom:
        package = resource.type.removeprefix("pulumi:providers:").split(":")[0]
        assert (resource.version, resource.plugin_download_url) == PROVIDER_PLUGINS[package], resource.urn
        kind = resource.type.rpartition(":")[2]
        expected = DAEMONSET_ALIASES[kind] if resource.type.startswith("kubernetes:apps/v1:") else []
        assert resource.aliases == expected, resource.urn
    components = [r for r in rendered[stack].resources if not r.custom]
    assert all((r.version, r.plugin_download_url, r.aliases) == ("", "", []) for r in components)


def test_the_daemonsets_stack_registers_both_daemonset_kinds_with_aliases(
    rendered: dict[str, RenderResult],
) -> None:
    """prod runs one DaemonSet per model and patches TKE's: the aliases above are held on both kinds."""
    aliased = {r.type: r.aliases for r in rendered["prod"].resources if r.aliases}
    assert aliased == {
        resource_types.DAEMON_SET: DAEMONSET_ALIASES["DaemonSet"],
        resource_types.DAEMON_SET_PATCH: DAEMONSET_ALIASES["DaemonSetPatch"],
    }


def test_no_component_module_defines_its_own_custom_resource() -> None:
    """Every resource goes through the SDKs' typed classes; a `pulumi.CustomResource` of our own under a
    provider's token would drop what they send (version, aliases, secret outputs)."""
    import components

    own = []
    for module_info in pkgutil.iter_modules(components.__path__):
        module = importlib.import_module(f"components.{module_info.name}")
        own += [
            f"{module.__name__}.{name}"
            for name, value in vars(module).items()
            if inspect.isclass(value)
            and issubclass(value, pulumi.CustomResource)
            and value.__module__ == module.__name__
        ]
    assert own == []


@pytest.mark.parametrize("source", ["tke", "secret"])
def test_the_kubernetes_provider_is_identified_by_the_stacks_cluster_id(source: str) -> None:
    """Only another cluster replaces the provider (and with it every object it owns), not a changed
    kubeconfig: from TKE's lookup or from the secret `gpushare:kubeconfig` alike."""
    prod = load_stack_file(stack_file("prod"))
    stack = prod.model_copy(update={"has_kubeconfig": source == "secret"})
    kubeconfig = "apiVersion: v1\nkind: Config\n# the stack's own\n"

    def body() -> None:
        kubernetes_provider(stack, tencentcloud.Provider("tencentcloud", region=prod.region))

    run = run_function(
        body,
        project="gpushare",
        stack="test",
        config={"kubeconfig": kubeconfig},
        secret_keys=["kubeconfig"],
        mocks=program_mocks(),
    )
    [provider] = registered(run, resource_types.KUBERNETES_PROVIDER)
    assert provider.inputs["clusterIdentifier"] == "cls-prod0001"
    assert "clusterIdentifier" not in provider.secret_input_paths
    assert provider.secret_input_paths == ["kubeconfig"]
    assert (provider.inputs["kubeconfig"] == kubeconfig) is (source == "secret")
    assert [token for token, _ in run.invokes] == (
        [] if source == "secret" else [resource_types.GET_CLUSTERS]
    )


CREDENTIAL_VARIABLES = {
    "TENCENTCLOUD_SECRET_ID": "AKIDexample0000000000000000000000000",
    "TENCENTCLOUD_SECRET_KEY": "example-secret-key",
    "TENCENTCLOUD_SECURITY_TOKEN": "example-token",
}


def tencentcloud_registration(
    body: Callable[[], object], config: Mapping[str, str] | None = None, secret_keys: Sequence[str] = ()
) -> RecordedResource:
    run = run_function(body, project="gpushare", stack="test", config=config, secret_keys=secret_keys)
    [provider] = registered(run, resource_types.TENCENTCLOUD_PROVIDER)
    return provider


def test_the_sdk_alone_sends_the_secret_id_in_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the program passes the credentials itself: the SDK wraps only the key and the token."""
    for name, value in CREDENTIAL_VARIABLES.items():
        monkeypatch.setenv(name, value)
    provider = tencentcloud_registration(lambda: tencentcloud.Provider("tencentcloud", region="ap-singapore"))
    assert provider.inputs["secretId"] == CREDENTIAL_VARIABLES["TENCENTCLOUD_SECRET_ID"]
    assert provider.secret_input_paths == ["secretKey", "securityToken"]


def test_the_credentials_from_the_environment_reach_the_engine_as_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in CREDENTIAL_VARIABLES.items():
        monkeypatch.setenv(name, value)
    prod = load_stack_file(stack_file("prod"))
    provider = tencentcloud_registration(lambda: tencentcloud_provider(prod))
    assert provider.inputs == {
        "region": "ap-singapore",
        "secretId": CREDENTIAL_VARIABLES["TENCENTCLOUD_SECRET_ID"],
        "secretKey": CREDENTIAL_VARIABLES["TENCENTCLOUD_SECRET_KEY"],
        "securityToken": CREDENTIAL_VARIABLES["TENCENTCLOUD_SECURITY_TOKEN"],
    }
    assert provider.secret_input_paths == ["secretId", "secretKey", "securityToken"]


def test_the_credentials_from_secret_config_reach_the_explicit_provider_as_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine configures only default providers from `tencentcloud:` config; the explicit one gets it
    from the program. The config wins over the environment."""
    for name, value in CREDENTIAL_VARIABLES.items():
        monkeypatch.setenv(name, value)
    prod = load_stack_file(stack_file("prod"))
    config = {"tencentcloud:secretId": "AKIDfromconfig00000000000000000000000", "tencentcloud:secretKey": "k"}
    provider = tencentcloud_registration(
        lambda: tencentcloud_provider(prod), config, secret_keys=list(config)
    )
    assert provider.inputs == {
        "region": "ap-singapore",
        "secretId": "AKIDfromconfig00000000000000000000000",
        "secretKey": "k",
        "securityToken": CREDENTIAL_VARIABLES["TENCENTCLOUD_SECURITY_TOKEN"],
    }
    assert provider.secret_input_paths == ["secretId", "secretKey", "securityToken"]


def test_without_credentials_the_provider_is_sent_only_its_region(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    prod = load_stack_file(stack_file("prod"))
    provider = tencentcloud_registration(lambda: tencentcloud_provider(prod))
    assert (provider.inputs, provider.secret_input_paths) == ({"region": "ap-singapore"}, [])


@pytest.mark.parametrize(
    "answer", [{"lists": []}, {"lists": [{"clusterId": "cls-prod0001", "kubeConfig": ""}]}]
)
def test_a_cluster_lookup_without_a_kubeconfig_stops_the_program(answer: dict[str, Any]) -> None:
    """The Kubernetes provider would otherwise fall back to the ambient kubeconfig: some other cluster."""
    prod = load_stack_file(stack_file("prod"))

    def body() -> None:
        kubernetes_provider(prod, tencentcloud.Provider("tencentcloud", region=prod.region))

    mocks = Mocks(invoke_handlers={resource_types.GET_CLUSTERS: lambda _: answer})
    with pytest.raises(pulumi.RunError, match="^TKE cluster cls-prod0001: no kubeconfig from getClusters"):
        run_function(body, project="gpushare", stack="test", mocks=mocks)
    # The SDK leaves the failed output's futures behind; asyncio reports them when they are collected:
    # collect them here, inside the test's captured output, rather than in some later test's.
    gc.collect()
