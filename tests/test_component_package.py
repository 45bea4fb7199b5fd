"""The component package (package/) as the Pulumi CLI and engine use it: its provider process over the
ResourceProvider gRPC protocol (GetSchema, Construct), against the standalone program's own registrations."""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import sys
import tomllib
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast
from unittest import mock

import grpc  # type: ignore[import-untyped]
import pulumi
import pytest
import yaml
from conftest import PROJECT_DIR, STACKS
from pulumi.runtime.proto import errors_pb2, status_pb2

from components.hosted_gpu_sharing_cluster import schema_names, stack_file_names
from gpushare.errors import ConfigError
from gpushare.offline import wire
from gpushare.offline.component_host import ComponentProvider, serve_monitor, start_component_provider
from gpushare.offline.mock_run import run_function, run_program
from gpushare.offline.policy_model import PolicyPackStartError
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import ProgramRun, RecordedResource, is_unknown
from gpushare.offline.recording_monitor import RecordingMonitor
from gpushare.offline.stack_files import load_stack_config
from gpushare.offline.wire_codec import decode_struct
from gpushare.stack import loading as stack_loading
from gpushare.stack import model as stack_model
from gpushare.stack import native_pool, tke_limits
from gpushare.stack import plugin_settings as stack_plugin_settings

# Starts the component package's provider host as a process: make test-e2e, which CI runs after make test.
pytestmark = pytest.mark.e2e

TOKEN = "gpushare:index:GpuSharingCluster"
NAME = "gpushare"  # the standalone program's component name (__main__.py)


@pytest.fixture(scope="module")
def provider() -> Iterator[ComponentProvider]:
    with start_component_provider(PROJECT_DIR / "package") as started:
        yield started


@pytest.fixture(scope="module")
def schema(provider: ComponentProvider) -> dict[str, Any]:
    return provider.schema()


def stack_inputs(stack: str) -> dict[str, Any]:
    """The stack file's `gpushare:` values as the component's inputs (`gpushare:pools` -> `pools`, and
    `measuredMiB` -> `measuredMib`, the schema's spelling)."""
    config = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {
        key.split(":", 1)[1]: schema_names(value)
        for key, value in config.items()
        if key.startswith("gpushare:")
    }


@functools.cache
def standalone_run(stack: str) -> ProgramRun:
    """The standalone program's run of `stack` (once per module: nothing here changes it)."""
    config, secret_keys = load_stack_config(PROJECT_DIR, stack)
    return run_program(
        PROJECT_DIR, stack=stack, config=config, secret_keys=secret_keys, mocks=program_mocks()
    )


def provider_refs(run: ProgramRun) -> dict[str, str]:
    """package -> `<urn>::<id>` of the program's explicit providers, as the engine passes them to Construct."""
    return {
        r.type.removeprefix("pulumi:providers:"): f"{r.urn}::{r.id}"
        for r in run.resources
        if r.type.startswith("pulumi:providers:")
    }


def descendants(run: ProgramRun, ancestor_urn: str) -> dict[str, RecordedResource]:
    by_urn = {r.urn: r for r in run.resources}

    def below(resource: RecordedResource) -> bool:
        parent = resource.parent
        while parent is not None:
            if parent == ancestor_urn:
                return True
            parent = by_urn[parent].parent if parent in by_urn else None
        return False

    return {r.urn: r for r in run.resources if below(r)}


def construct(
    provider: ComponentProvider,
    inputs: dict[str, Any],
    *,
    stack: str = "prod",
    parent_program: ProgramRun | None = None,
    dry_run: bool = False,
) -> tuple[dict[str, Any], ProgramRun]:
    """Construct through the provider's gRPC service; (the component's decoded state, what it registered).
    `parent_program`: the program the component is constructed for; its explicit providers are passed by
    reference and, as the engine would, resolved by the monitor when the children's typed classes look
    them up (`getResource`)."""
    monitor = RecordingMonitor(program_mocks(), project="gpushare", stack=stack)
    providers = None
    if parent_program is not None:
        providers = provider_refs(parent_program)
        monitor.know(r for r in parent_program.resources if r.type.startswith("pulumi:providers:"))
    with serve_monitor(monitor) as address:
        response = provider.construct(
            type_=TOKEN,
            name=NAME,
            inputs=inputs,
            monitor=monitor,
            monitor_address=address,
            providers=providers,
            dry_run=dry_run,
        )
    state, _ = decode_struct(response.state)
    return state, monitor.program_run()


# --------------------------------------------------------------------------------------------------
# GetSchema


def _properties_of(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, property) for every input property of the component and of every type it references."""
    resource = schema["resources"][TOKEN]
    for name, prop in resource["inputProperties"].items():
        yield f"{TOKEN}.{name}", prop
    for type_name, type_ in schema["types"].items():
        for name, prop in type_.get("properties", {}).items():
            yield f"{type_name}.{name}", prop


def _is_typed(prop: dict[str, Any]) -> bool:
    if "$ref" in prop:
        return True
    if prop.get("type") == "array":
        return _is_typed(prop["items"])
    if prop.get("type") == "object":
        return "additionalProperties" in prop and _is_typed(prop["additionalProperties"])
    return prop.get("type") in {"string", "integer", "number", "boolean"}


def test_the_schema_has_the_one_public_component_under_the_index_token(schema: dict[str, Any]) -> None:
    assert schema["name"] == "gpushare"
    pyproject = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    assert schema["version"] == pyproject["project"]["version"] == "0.1.0"
    # The subcomponents (node pools, ConfigMap, plugins, releases) stay internal.
    assert list(schema["resources"]) == [TOKEN]
    assert schema["resources"][TOKEN]["isComponent"] is True
    assert schema["resources"][TOKEN]["requiredInputs"] == ["cluster", "pools"]


def test_every_input_is_typed_and_documented(schema: dict[str, Any]) -> None:
    properties = dict(_properties_of(schema))
    assert len(properties) > 60  # every key of the stack file's model, at every depth
    untyped = [where for where, prop in properties.items() if not _is_typed(prop)]
    undocumented = [where for where, prop in properties.items() if not prop.get("description", "").strip()]
    assert untyped == []
    assert undocumented == []
    # One line each: the generated SDKs put them in doc comments as they are.
    assert [where for where, prop in properties.items() if "\n" in prop["description"]] == []
    for type_name, type_ in schema["types"].items():
        kind = "string" if type_name.removeprefix("gpushare:index:") in ENUMS else "object"
        assert type_["type"] == kind and type_.get("description", "").strip(), type_name
    # Every reference resolves to a type of the package (or Pulumi's Any).
    refs = {
        prop.get("$ref")
        or prop.get("items", {}).get("$ref")
        or prop.get("additionalProperties", {}).get("$ref")
        for prop in properties.values()
    } - {None}
    assert {ref.removeprefix("#/types/") for ref in refs if ref.startswith("#/types/")} <= set(
        schema["types"]
    )


def test_every_output_is_declared(schema: dict[str, Any]) -> None:
    outputs = schema["resources"][TOKEN]["properties"]
    assert {name: prop.get("type") for name, prop in outputs.items()} == {
        "capacity": None,
        "totalSlots": "integer",
        "slotsBefore": "integer",
        "nodePoolIds": "object",
        "configMapName": "string",
        "helmReleaseNames": "array",
    }
    assert outputs["capacity"]["$ref"] == "#/types/gpushare:index:Capacity"
    assert outputs["nodePoolIds"]["additionalProperties"]["type"] == "string"
    assert outputs["helmReleaseNames"]["items"]["type"] == "string"
    assert all(prop["description"].strip() for prop in outputs.values())
    # configMapName is absent in helm mode (the chart names its own ConfigMap).
    assert sorted(schema["resources"][TOKEN]["required"]) == [
        "capacity",
        "helmReleaseNames",
        "nodePoolIds",
        "slotsBefore",
        "totalSlots",
    ]


def _aliases(*models: type[Any]) -> set[str]:
    """The stack file's keys, as the schema spells them (`measuredMiB` -> `measuredMib`)."""
    return {
        schema_names({field.alias or name: None}).popitem()[0]
        for model in models
        for name, field in model.model_fields.items()
    }


def _required(*models: type[Any]) -> set[str]:
    """Keys every one of `models` requires."""
    sets = [
        {
            schema_names({field.alias or name: None}).popitem()[0]
            for name, field in m.model_fields.items()
            if field.is_required()
        }
        for m in models
    ]
    return set.intersection(*sets)


# schema type -> the stack models whose keys it mirrors (PoolSharing: the three modes, one `mode` key).
MIRRORS: dict[str, tuple[type[Any], ...]] = {
    "Cluster": (stack_model.Cluster,),
    "Sharing": (stack_model.Sharing,),
    "DevicePlugin": (stack_plugin_settings.DevicePlugin,),
    "ManagedPlugin": (stack_plugin_settings.ManagedPlugin,),
    "GpuOperator": (stack_plugin_settings.GpuOperator,),
    "Fallback": (stack_model.Fallback,),
    "Pool": (stack_model.Pool,),
    "Nodes": (stack_model.Nodes,),
    "PoolSharing": (stack_model.TimeSlicing, stack_model.Mig, stack_model.Exclusive, stack_model.Qgpu),
    "NativePool": (native_pool.NativePool,),
    "SystemDisk": (native_pool.SystemDisk,),
    "DataDisk": (native_pool.DataDisk,),
    "QgpuAddon": (native_pool.QgpuAddon,),
    "Measurement": (stack_model.Measurement,),
    "GpuDriver": (stack_model.GpuDriver,),
    "SoftwareVersion": (stack_model.SoftwareVersion,),
    "Cudnn": (stack_model.Cudnn,),
}


@pytest.mark.parametrize("type_name", sorted(MIRRORS))
def test_every_input_type_mirrors_the_stack_files_keys(schema: dict[str, Any], type_name: str) -> None:
    type_ = schema["types"][f"gpushare:index:{type_name}"]
    models = MIRRORS[type_name]
    assert set(type_["properties"]) == _aliases(*models)
    assert set(type_.get("required", [])) == _required(*models)


def test_the_component_inputs_are_the_stack_files_gpushare_keys(schema: dict[str, Any]) -> None:
    assert set(schema["resources"][TOKEN]["inputProperties"]) == {
        "cluster",
        "sharing",
        "pools",
        "protectPools",
    }
    assert set(schema["types"]["gpushare:index:Taint"]["properties"]) == set(tke_limits.TAINT_FIELDS)
    types = {name.removeprefix("gpushare:index:") for name in schema["types"]}
    assert types == {*MIRRORS, "Taint", *ENUMS, *CAPACITY_TYPES}


# enum type -> (the property that takes it, the stack model's closed set, written down)
ENUMS: dict[str, tuple[str, list[str]]] = {
    "DevicePluginMode": ("DevicePlugin.mode", ["daemonsets", "helm", "gpu-operator"]),
    "ManagedPluginAction": ("ManagedPlugin.action", ["park", "adopt", "optOut"]),
    "MigStrategy": ("DevicePlugin.migStrategy", ["none", "single", "mixed"]),
    "SharingMode": ("PoolSharing.mode", ["time-slicing", "mig", "exclusive", "mps", "qgpu"]),
    "QgpuSchedulePolicy": ("PoolSharing.schedulePolicy", ["fixed-share", "burst-share", "best-effort"]),
    "TaintEffect": ("Taint.effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"]),
}
CAPACITY_TYPES = {"Capacity", "PoolCapacity", "MigProfileCapacity", "FallbackCapacity", "QgpuCapacity"}


@pytest.mark.parametrize("enum_name", sorted(ENUMS))
def test_every_closed_set_is_an_enum_of_the_stack_models_values(
    schema: dict[str, Any], enum_name: str
) -> None:
    where, values = ENUMS[enum_name]
    type_name, prop = where.split(".")
    assert schema["types"][f"gpushare:index:{enum_name}"]["enum"] == [
        {"value": value, "description": mock.ANY, "name": mock.ANY} for value in values
    ]
    assert schema["types"][f"gpushare:index:{type_name}"]["properties"][prop]["$ref"] == (
        f"#/types/gpushare:index:{enum_name}"
    )


def test_the_enums_hold_exactly_what_the_stack_model_accepts() -> None:
    assert set(typing.get_args(stack_plugin_settings.ManagedAction)) == set(ENUMS["ManagedPluginAction"][1])
    modes = typing.get_args(stack_plugin_settings.DevicePlugin.model_fields["mode"].annotation)
    assert set(modes) == set(ENUMS["DevicePluginMode"][1])
    sharing = {
        typing.get_args(model.model_fields["mode"].annotation)[0]
        for model in (
            stack_model.TimeSlicing,
            stack_model.Mig,
            stack_model.Exclusive,
            stack_model.Mps,
            stack_model.Qgpu,
        )
    }
    assert sharing == set(ENUMS["SharingMode"][1])
    assert set(typing.get_args(stack_model.Qgpu.model_fields["schedule_policy"].annotation)) == set(
        ENUMS["QgpuSchedulePolicy"][1]
    )
    assert set(tke_limits.TAINT_EFFECTS) == set(ENUMS["TaintEffect"][1])


def test_no_property_name_reads_oddly_in_python(schema: dict[str, Any]) -> None:
    """Pulumi's Python SDK generator splits names at every capital: `measuredMiB` -> `measured_mi_b`. Two
    capitals in a row are what makes such a name; the schema spells `MiB` as `Mib` (-> `measured_mib`)."""
    names = {where for where, _ in _properties_of(schema)}
    outputs = schema["resources"][TOKEN]["properties"]
    names |= {f"{TOKEN}.{name}" for name in outputs}
    assert sorted(where for where in names if re.search(r"[A-Z]{2}", where.rsplit(".", 1)[1])) == []
    assert "measuredMib" in schema["types"]["gpushare:index:PoolSharing"]["properties"]


def test_the_capacity_output_is_typed_to_the_plan(schema: dict[str, Any]) -> None:
    capacity = schema["types"]["gpushare:index:Capacity"]["properties"]
    assert capacity["pools"]["items"]["$ref"] == "#/types/gpushare:index:PoolCapacity"
    assert capacity["fallback"]["$ref"] == "#/types/gpushare:index:FallbackCapacity"
    pool = schema["types"]["gpushare:index:PoolCapacity"]["properties"]
    assert {name: prop.get("type") for name, prop in pool.items() if "Mib" in name} == {
        "memoryUsedMib": "integer",
        "memoryTotalMib": "integer",
        "headroomMibPerSlot": "number",
        "mpsClientMemoryLimitMib": "integer",
    }


# --------------------------------------------------------------------------------------------------
# Construct


@pytest.fixture(scope="module")
def prod_standalone() -> ProgramRun:
    return standalone_run("prod")


def _component(run: ProgramRun) -> RecordedResource:
    (component,) = [r for r in run.resources if r.type == TOKEN]
    return component


@pytest.mark.parametrize("stack", STACKS)
def test_construct_registers_what_the_standalone_program_registers(
    provider: ComponentProvider, stack: str
) -> None:
    standalone = standalone_run(stack)
    state, hosted = construct(provider, stack_inputs(stack), stack=stack, parent_program=standalone)
    component = _component(hosted)
    # The same URN as the standalone program's component (same token, same name, under the stack).
    assert component.urn == _component(standalone).urn == f"urn:pulumi:{stack}::gpushare::{TOKEN}::{NAME}"
    children = [r for r in hosted.resources if r.type != TOKEN]
    expected = descendants(standalone, component.urn)
    # Types, names, parents, inputs, providers, dependencies and options, record for record.
    assert {r.urn: r for r in children} == expected
    assert len(children) == len(expected) > 0
    assert state["totalSlots"] == standalone.stack_outputs["totalSlots"]


def test_construct_with_prods_values_builds_the_seeds_end_state(
    provider: ComponentProvider, prod_standalone: ProgramRun
) -> None:
    state, hosted = construct(provider, stack_inputs("prod"), parent_program=prod_standalone)
    names = sorted((r.type, r.name) for r in hosted.resources)
    # Two pools; daemonsets mode with TKE's DaemonSet adopted as the T4's plugin: one DaemonSet, for the L20.
    assert names == [
        ("gpushare:index:GpuSharingCluster", "gpushare"),
        ("gpushare:k8s:DevicePluginDaemonSets", "gpushare-plugins"),
        ("gpushare:k8s:ManagedDevicePlugin", "gpushare-managed-plugin"),
        ("gpushare:k8s:TimeSlicingConfig", "gpushare-config"),
        ("gpushare:tke:GpuNodePool", "gpushare-l20"),
        ("gpushare:tke:GpuNodePool", "gpushare-t4"),
        ("kubernetes:apps/v1:DaemonSet", "gpushare-plugins-l20"),
        ("kubernetes:apps/v1:DaemonSetPatch", "gpushare-managed-plugin-patch"),
        ("kubernetes:core/v1:ConfigMap", "gpushare-config-configmap"),
        ("tencentcloud:Kubernetes/nodePool:NodePool", "gpushare-l20-pool"),
        ("tencentcloud:Kubernetes/nodePool:NodePool", "gpushare-t4-pool"),
    ]
    # The seed: L20 floor(0.9 x 46068 / 4621) = 8 slots, T4 floor(0.9 x 15360 / 4401) = 3; 11 from 2 GPUs.
    assert state["totalSlots"] == 11
    assert state["slotsBefore"] == 2
    assert [(p["name"], p["replicas"]) for p in state["capacity"]["pools"]] == [("l20", 8), ("t4", 3)]
    # The mocks' ids ("<name>_id") of the two TKE node pools.
    assert state["nodePoolIds"] == {"l20": "gpushare-l20-pool_id", "t4": "gpushare-t4-pool_id"}
    assert state["configMapName"] == "time-slicing-config"
    assert state["helmReleaseNames"] == []


def test_construct_reports_the_helm_releases(provider: ComponentProvider) -> None:
    state, hosted = construct(provider, stack_inputs("staging"), stack="staging")
    assert state["helmReleaseNames"] == ["gpu-operator"]
    # The content-addressed ConfigMap the operator's ClusterPolicy points its device plugin at.
    (release,) = [r for r in hosted.resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert state["configMapName"] == release.inputs["values"]["devicePlugin"]["config"]["name"]
    assert state["configMapName"].startswith("gpushare-device-plugin-config-")
    state, _ = construct(provider, stack_inputs("dev"), stack="dev")
    assert state["helmReleaseNames"] == ["nvidia-device-plugin"]
    assert "configMapName" not in state


def _loader_message(tmp_path: Path, inputs: dict[str, Any]) -> str:
    """What the stack loader says about `inputs` written as prod's stack file."""
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    document["config"].update({f"gpushare:{key}": value for key, value in inputs.items()})
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(ConfigError) as caught:
        stack_loading.load_stack_file(path)
    return str(caught.value)


def _refused(
    provider: ComponentProvider, inputs: dict[str, Any], *, dry_run: bool = False
) -> tuple[grpc.RpcError, list[tuple[str, str]]]:
    monitor = RecordingMonitor(program_mocks(), project="gpushare", stack="prod")
    with serve_monitor(monitor) as address, pytest.raises(grpc.RpcError) as caught:
        provider.construct(
            type_=TOKEN, name=NAME, inputs=inputs, monitor=monitor, monitor_address=address, dry_run=dry_run
        )
    # Nothing half-built: the inputs are validated before the component itself is registered.
    assert [r.type for r in monitor.program_run().resources] == []
    error = caught.value
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    found = errors_pb2.InputPropertiesError()
    assert status.details[0].Unpack(found)
    return error, [(e.property_path, e.reason) for e in found.errors]


@pytest.mark.parametrize(
    ("change", "path", "reason"),
    [
        (
            lambda i: i["pools"][1]["sharing"].update(measuredMib=0),
            "pools[1].sharing.measuredMib",
            "must be > 0",
        ),
        (
            lambda i: i["sharing"]["devicePlugin"]["managedPlugin"].update(pool="a100"),
            "sharing.devicePlugin.managedPlugin.pool",
            "no pool named 'a100'",
        ),
        (
            lambda i: i["pools"][0]["labels"].update({"nvidia.com/device-plugin.config": "x"}),
            'pools[0].labels["nvidia.com/device-plugin.config"]',
            "gpushare sets nvidia.com/device-plugin.config on this pool's nodes itself; a value here would be overwritten",
        ),
    ],
)
def test_a_bad_input_fails_with_the_stack_loaders_key_path_message(
    provider: ComponentProvider, tmp_path: Path, change: Any, path: str, reason: str
) -> None:
    inputs = copy.deepcopy(stack_inputs("prod"))
    inputs["pools"][0].setdefault("labels", {})
    change(inputs)
    loader = _loader_message(tmp_path, stack_file_names(inputs))
    # The loader names the stack file's key (`measuredMiB`), the component its input (`measuredMib`).
    assert loader == f"Pulumi.prod.yaml: gpushare:{path.replace('Mib', 'MiB')}: {reason}"
    error, errors = _refused(provider, inputs)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == loader.replace("Pulumi.prod.yaml", f"GpuSharingCluster {NAME}", 1)
    assert errors == [(path, reason)]


def test_a_fractional_number_is_refused_not_rounded(provider: ComponentProvider) -> None:
    # The wire carries every number as a double; 0.5 of a day is not the integer the model wants.
    inputs = copy.deepcopy(stack_inputs("prod"))
    inputs["sharing"]["maxMeasurementAgeDays"] = 0.5
    _, errors = _refused(provider, inputs)
    assert errors == [("sharing.maxMeasurementAgeDays", "must be an integer")]


def _output_value(
    value: Any = None, *, dependencies: tuple[str, ...] = (), known: bool = True
) -> dict[str, Any]:
    """An output value as the engine sends it to a provider that accepts outputs (Configure says so)."""
    encoded: dict[str, Any] = {wire.SIG_KEY: wire.OUTPUT_VALUE_SIG, "dependencies": list(dependencies)}
    if known:
        encoded["value"] = value
    return encoded


CLUSTER_URN = "urn:pulumi:prod::gpushare::tencentcloud:Kubernetes/cluster:Cluster::gpu"


def test_a_cluster_id_from_another_resource_makes_the_component_depend_on_it(
    provider: ComponentProvider, prod_standalone: ProgramRun
) -> None:
    inputs = copy.deepcopy(stack_inputs("prod"))
    inputs["cluster"]["id"] = _output_value("cls-prod0001", dependencies=(CLUSTER_URN,))
    _, hosted = construct(provider, inputs, parent_program=prod_standalone)
    assert _component(hosted).dependencies == [CLUSTER_URN]
    pools = [r for r in hosted.resources if r.type == NODE_POOL]
    assert [p.inputs["clusterId"] for p in pools] == ["cls-prod0001", "cls-prod0001"]
    # The id reaches the node pools as the output it is: each pool depends on the cluster through clusterId.
    assert [(p.dependencies, p.property_dependencies["clusterId"]) for p in pools] == [
        ([CLUSTER_URN], [CLUSTER_URN])
    ] * 2
    # The objects annotated with the cluster they belong to (gpushare.io/cluster, read by verify and measure)
    # depend on it through their metadata.
    annotated = sorted(
        r.name
        for r in hosted.resources
        if r.type != NODE_POOL and CLUSTER_URN in r.property_dependencies.get("metadata", [])
    )
    assert annotated == [
        "gpushare-config-configmap",
        "gpushare-managed-plugin-patch",
        "gpushare-plugins-l20",
    ]
    # Otherwise the same registrations as with a plain id.
    expected = descendants(prod_standalone, _component(hosted).urn)
    assert {r.urn: _without_dependency_on(r, CLUSTER_URN) for r in hosted.resources if r.type != TOKEN} == {
        urn: _without_dependency_on(r, CLUSTER_URN) for urn, r in expected.items()
    }


def _without_dependency_on(resource: RecordedResource, urn: str) -> RecordedResource:
    """The record with `urn` left out of its dependencies (and property lists left empty by that dropped)."""
    properties = {key: [d for d in deps if d != urn] for key, deps in resource.property_dependencies.items()}
    return dataclasses.replace(
        resource,
        dependencies=[d for d in resource.dependencies if d != urn],
        property_dependencies={key: deps for key, deps in properties.items() if deps},
    )


NODE_POOL = "tencentcloud:Kubernetes/nodePool:NodePool"
SUBNET_URN = "urn:pulumi:prod::gpushare::tencentcloud:Vpc/subnet:Subnet::gpu"


def _placements_as_outputs(*, known: bool, secret: bool = False) -> dict[str, Any]:
    """prod's inputs with the cluster, its VPC and every subnet coming from other resources of the
    consumer's program (the docs' example), unknown as in a first preview or known; `secret` wraps them."""
    inputs = copy.deepcopy(stack_inputs("prod"))
    cluster = inputs["cluster"]

    def placed(value: Any, urn: str) -> Any:
        output = _output_value(value, dependencies=(urn,), known=known)
        return wire.secret(output) if secret and not known else output

    if secret:
        cluster["id"] = wire.secret(cluster["id"])
        cluster["vpcId"] = wire.secret(cluster["vpcId"])
        cluster["subnetIds"] = [wire.secret(subnet) for subnet in cluster["subnetIds"]]
    else:
        cluster["id"] = placed(cluster["id"], CLUSTER_URN)
        cluster["vpcId"] = placed(cluster["vpcId"], CLUSTER_URN)
        cluster["subnetIds"] = [placed(subnet, SUBNET_URN) for subnet in cluster["subnetIds"]]
    return inputs


def _annotations(resource: RecordedResource) -> dict[str, Any]:
    metadata = resource.inputs.get("metadata")
    return dict(metadata.get("annotations") or {}) if isinstance(metadata, dict) else {}


def _without_placements(
    resources: Iterable[RecordedResource],
) -> dict[str, tuple[str, str | None, str | None, dict[str, Any]]]:
    """urn -> (type, parent, provider, inputs) with the node pools' placement inputs, and the cluster id the
    other objects are annotated with, left out."""
    placement = {"clusterId", "vpcId", "subnetIds"}
    return {
        r.urn: (
            r.type,
            r.parent,
            r.provider,
            _without_cluster_annotation(
                {k: v for k, v in r.inputs.items() if not (r.type == NODE_POOL and k in placement)}
            ),
        )
        for r in resources
    }


def _without_cluster_annotation(inputs: dict[str, Any]) -> dict[str, Any]:
    metadata = inputs.get("metadata")
    if not isinstance(metadata, dict) or "gpushare.io/cluster" not in (metadata.get("annotations") or {}):
        return inputs
    annotations = {k: v for k, v in metadata["annotations"].items() if k != "gpushare.io/cluster"}
    return {**inputs, "metadata": {**metadata, "annotations": annotations}}


def _children_without_placements(
    run: ProgramRun,
) -> dict[str, tuple[str, str | None, str | None, dict[str, Any]]]:
    return _without_placements(r for r in run.resources if r.type != TOKEN)


def test_a_preview_with_unknown_placement_inputs_registers_every_child(
    provider: ComponentProvider, prod_standalone: ProgramRun
) -> None:
    # A consumer creating its cluster and subnets in the same program previews with them unknown: every
    # child must still be registered (else an existing stack plans to delete them all, and the policy pack
    # sees nothing). The unknowns reach the node pools; everything else is what the standalone program gives.
    state, hosted = construct(
        provider, _placements_as_outputs(known=False), parent_program=prod_standalone, dry_run=True
    )
    expected = descendants(prod_standalone, _component(hosted).urn)
    # The objects tied to their cluster (gpushare.io/cluster) carry its id as the unknown it is.
    annotated = [r for r in hosted.resources if "gpushare.io/cluster" in _annotations(r)]
    assert len(annotated) == 3 and all(is_unknown(_annotations(r)["gpushare.io/cluster"]) for r in annotated)
    assert _children_without_placements(hosted) == _without_placements(expected.values())
    pools = [r for r in hosted.resources if r.type == NODE_POOL]
    assert len(pools) == 2
    for pool in pools:
        assert is_unknown(pool.inputs["clusterId"]) and is_unknown(pool.inputs["vpcId"])
        assert [is_unknown(subnet) for subnet in pool.inputs["subnetIds"]] == [True]
        assert pool.property_dependencies["clusterId"] == [CLUSTER_URN]
        assert pool.property_dependencies["subnetIds"] == [SUBNET_URN]
    # The plan is known at preview: it depends on no placement.
    assert (state["totalSlots"], state["slotsBefore"]) == (11, 2)


def test_secret_placement_inputs_stay_secret_in_the_node_pools(
    provider: ComponentProvider, prod_standalone: ProgramRun
) -> None:
    _, hosted = construct(
        provider, _placements_as_outputs(known=True, secret=True), parent_program=prod_standalone
    )
    pools = [r for r in hosted.resources if r.type == NODE_POOL]
    assert [(p.inputs["clusterId"], p.inputs["vpcId"], p.inputs["subnetIds"]) for p in pools] == [
        ("cls-prod0001", "vpc-prod0001", ["subnet-prod0001"])
    ] * 2
    assert [sorted(p.secret_input_paths) for p in pools] == [["clusterId", "subnetIds[0]", "vpcId"]] * 2
    expected = descendants(prod_standalone, _component(hosted).urn)
    assert _children_without_placements(hosted) == _without_placements(expected.values())


UNKNOWN_REASON = "must be known at preview: it decides which resources gpushare registers"
SECRET_REASON = (
    "is or holds a secret: gpushare writes it, or what it derives, in plain resource inputs "
    "(only cluster.id, cluster.vpcId and cluster.subnetIds may be secret)"
)
REFERENCE_REASON = "is a resource reference; pass one of its outputs (like its `id`)"


def _set(inputs: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    target = inputs
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return inputs


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        # An integer, unknown at preview and secret (the host crashed with gRPC UNKNOWN on both). The host
        # marks the whole top-level input secret when a value in it is, so the error names `pools`.
        (
            ("pools", 0, "nodes", "desired"),
            _output_value(known=False),
            ("pools[0].nodes.desired", UNKNOWN_REASON),
        ),
        (
            ("pools", 1, "sharing", "measuredMiB"),
            wire.secret(4401),
            ("pools", SECRET_REASON),
        ),
        (
            ("sharing", "maxMeasurementAgeDays"),
            _output_value(known=False),
            ("sharing.maxMeasurementAgeDays", UNKNOWN_REASON),
        ),
        # Objects: the SDK would map an unknown object to {} (the defaults: a wrong preview) or call its
        # fields missing.
        (("sharing", "devicePlugin"), _output_value(known=False), ("sharing.devicePlugin", UNKNOWN_REASON)),
        (("pools", 0, "nodes"), _output_value(known=False), ("pools[0].nodes", UNKNOWN_REASON)),
        (("pools", 0, "sharing"), wire.secret({"mode": "exclusive"}), ("pools", SECRET_REASON)),
        # The pool list decides how many pools there are.
        (("pools",), _output_value(known=False), ("pools", UNKNOWN_REASON)),
        # A resource reference where a string goes.
        (
            ("cluster", "id"),
            {wire.SIG_KEY: wire.RESOURCE_SIG, "urn": CLUSTER_URN, "id": "cls-prod0001"},
            ("cluster.id", REFERENCE_REASON),
        ),
        (
            ("pools", 0, "gpu"),
            {wire.SIG_KEY: wire.RESOURCE_SIG, "urn": CLUSTER_URN, "id": "cls-prod0001"},
            ("pools[0].gpu", REFERENCE_REASON),
        ),
    ],
)
def test_an_input_that_decides_the_resources_must_be_known_and_plain(
    provider: ComponentProvider, path: tuple[Any, ...], value: Any, expected: tuple[str, str]
) -> None:
    inputs = _set(copy.deepcopy(stack_inputs("prod")), path, value)
    error, errors = _refused(provider, inputs, dry_run=True)
    assert errors == [expected]
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == f"GpuSharingCluster {NAME}: {expected[0]}: {expected[1]}"


@pytest.fixture
def forget_program_modules() -> Iterator[None]:
    """The program's `components` imported in this process are dropped afterwards, as the offline runner
    drops a run's own modules: a later run of another project copy must import its own."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name == "components" or name.startswith("components."):
            del sys.modules[name]


@pytest.mark.usefixtures("forget_program_modules")
def test_the_hosted_component_in_a_python_program_registers_what_the_standalone_one_does() -> None:
    # A Python program may also import the class directly (no package, no gRPC): same children.
    from components.hosted_gpu_sharing_cluster import GpuSharingCluster
    from components.providers import kubernetes_provider, tencentcloud_provider

    stack = stack_loading.load_stack(PROJECT_DIR, "prod")

    def program() -> None:
        cloud = tencentcloud_provider(stack)
        cluster = GpuSharingCluster(
            NAME,
            cast(Any, stack_inputs("prod")),
            pulumi.ResourceOptions(providers=[cloud, kubernetes_provider(stack, cloud)]),
        )
        pulumi.export("totalSlots", cluster.total_slots)

    hosted = run_function(program, project="gpushare", stack="prod", mocks=program_mocks())
    urn = _component(hosted).urn
    assert descendants(hosted, urn) == descendants(standalone_run("prod"), urn)
    assert hosted.stack_outputs["totalSlots"] == 11


def test_a_package_directory_that_cannot_start_fails_with_the_processes_own_words(tmp_path: Path) -> None:
    # No __main__.py: Python exits (status 1) before printing a port, and the error says what it said.
    with pytest.raises(PolicyPackStartError) as caught, start_component_provider(tmp_path):
        pass
    assert caught.value.message.endswith(": exit status 1")
    assert "can't find '__main__' module" in caught.value.stderr


def test_the_docs_example_is_valid_and_gives_the_seeds_t4_slots(provider: ComponentProvider) -> None:
    # docs/component-package.md's TypeScript example, as its SDK sends it.
    example = {
        "cluster": {
            "id": "cls-prod0001",
            "vpcId": "vpc-prod0001",
            "subnetIds": ["subnet-prod0001"],
            "kubernetesVersion": "1.30",
        },
        "pools": [
            {
                "name": "t4",
                "gpu": "T4",
                "instanceType": "GN7.2XLARGE32",
                "nodes": {"min": 1, "max": 1, "desired": 1},
                "sharing": {"mode": "time-slicing", "measuredMib": 4401, "measuredAt": "2025-06-01"},
            }
        ],
    }
    state, hosted = construct(provider, example)
    # The capacity plan under the schema's names.
    [pool] = state["capacity"]["pools"]
    assert (pool["memoryUsedMib"], pool["memoryTotalMib"], pool["replicas"]) == (13203, 15360, 3)
    # floor(0.9 x 15360 / 4401) = 3 on the one T4.
    assert (state["totalSlots"], state["slotsBefore"]) == (3, 1)
    assert [r.name for r in hosted.resources if r.type == "tencentcloud:Kubernetes/nodePool:NodePool"] == [
        "gpushare-t4-pool"
    ]
