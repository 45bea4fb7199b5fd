"""gpushare.offline.mock_run: running a Pulumi program without the CLI and recording what the engine would see.

Most tests run the fixture program in tests/fixtures/sample_program (a provider, a component with a
ConfigMap and a Secret, a Helm v3 Release, a Helm v4 Chart, a secret config value, exports).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import sys
import textwrap
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import FIXTURES
from google.protobuf import struct_pb2
from pulumi.runtime import config as pulumi_config
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.mocks import MockResourceArgs

from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.mock_run import run_program
from gpushare.offline.recorded import UNKNOWN, ProgramRun, ResourceRef, engine_urn, is_unknown
from gpushare.offline.stack_files import SECRET_PLACEHOLDER, load_stack_config
from gpushare.offline.wire_codec import UNKNOWN_WIRE, decode_struct, encode_struct
from gpushare.resource_types import HELM_RELEASE

PROGRAM = FIXTURES / "sample_program"
TOKEN = "tok-3f9a"
CONFIG = {"namespace": "gpu-system", "replicas": "2", "labels": '{"team":"gpu"}', "token": TOKEN}
STACK = "urn:pulumi:dev::sample::pulumi:pulumi:Stack::sample-dev"
AGENT = "urn:pulumi:dev::sample::sample:index:NodeAgent::agent"
PROVIDER = "urn:pulumi:dev::sample::pulumi:providers:kubernetes::k8s"
CONFIG_MAP = "urn:pulumi:dev::sample::sample:index:NodeAgent$kubernetes:core/v1:ConfigMap::agent-config"
SECRET = "urn:pulumi:dev::sample::sample:index:NodeAgent$kubernetes:core/v1:Secret::agent-token"


def run_sample(**overrides: Any) -> ProgramRun:
    arguments: dict[str, Any] = {"stack": "dev", "config": CONFIG, "secret_keys": ["token"], **overrides}
    return run_program(PROGRAM, **arguments)


@pytest.fixture(scope="module")
def sample() -> ProgramRun:
    return run_sample()


def write_program(directory: Path, main: str, project: str = "scratch") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Pulumi.yaml").write_text(f"name: {project}\nruntime: python\n")
    (directory / "__main__.py").write_text(textwrap.dedent(main))
    return directory


def leaf_paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaf_paths(item, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaf_paths(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


# ---------------------------------------------------------------------------------------------- program


def test_resources_are_recorded_in_registration_order_with_engine_urns(sample: ProgramRun) -> None:
    assert [(r.type, r.name) for r in sample.resources] == [
        ("pulumi:pulumi:Stack", "sample-dev"),
        ("pulumi:providers:kubernetes", "k8s"),
        ("sample:index:NodeAgent", "agent"),
        ("kubernetes:helm.sh/v4:Chart", "gpu-operator"),
        ("kubernetes:core/v1:ConfigMap", "agent-config"),
        ("kubernetes:core/v1:Secret", "agent-token"),
        (HELM_RELEASE, "device-plugin"),
    ]
    urns = {r.name: r.urn for r in sample.resources}
    assert urns["sample-dev"] == STACK
    assert urns["k8s"] == PROVIDER
    assert urns["agent"] == AGENT  # the root Stack type is not part of the qualified type
    assert urns["agent-config"] == CONFIG_MAP  # the parent's full qualified type is
    parents = {r.name: r.parent for r in sample.resources}
    assert parents == {
        "sample-dev": None,
        "k8s": STACK,
        "agent": STACK,
        "gpu-operator": STACK,
        "agent-config": AGENT,
        "agent-token": AGENT,
        "device-plugin": STACK,
    }


def test_flags_provider_references_and_options(sample: ProgramRun) -> None:
    provider_ref = f"{PROVIDER}::k8s_id"
    by_name = {r.name: r for r in sample.resources}
    assert (by_name["k8s"].custom, by_name["k8s"].provider, by_name["k8s"].id) == (True, None, "k8s_id")
    assert (by_name["agent"].custom, by_name["agent"].remote, by_name["agent"].id) == (False, False, None)
    chart = by_name["gpu-operator"]
    assert (chart.custom, chart.remote, chart.provider) == (False, True, provider_ref)
    assert by_name["agent-config"].provider == provider_ref  # via the component's providers=[...]
    release = by_name["device-plugin"]
    assert (release.provider, release.id, release.ignore_changes) == (
        provider_ref,
        "device-plugin_id",
        ["values"],
    )
    assert set(release.dependencies) == {CONFIG_MAP, SECRET}  # depends_on a component = its children
    assert release.property_dependencies["values"] == [CONFIG_MAP]
    assert by_name["agent-token"].additional_secret_outputs == ["data", "stringData"]
    assert not any(r.protect or r.delete_before_replace or r.external for r in sample.resources)


def test_inputs_are_decoded_wire_json(sample: ProgramRun) -> None:
    release = sample.resource(HELM_RELEASE, "device-plugin")
    assert release.inputs["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    replicas = release.inputs["values"]["replicas"]
    assert replicas == 2 and type(replicas) is int  # a double on the wire
    config_map = sample.resource("kubernetes:core/v1:ConfigMap", "agent-config")
    assert config_map.inputs == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"labels": {"team": "gpu"}, "namespace": "gpu-system"},
        "data": {"replicas": "2", "sharing.yaml": "version: v1\n"},
    }
    # Providers' non-string inputs are JSON strings, as the SDK sends them.
    assert sample.resource("pulumi:providers:kubernetes", "k8s").inputs == {
        "enableServerSideApply": "true",
        "namespace": "gpu-system",
    }
    json.dumps([r.inputs for r in sample.resources])  # plain JSON-able data


def test_secret_value_appears_only_at_recorded_secret_paths(sample: ProgramRun) -> None:
    # Offline we keep the value (a render needs it) but record where the engine saw a secret.
    release = sample.resource(HELM_RELEASE, "device-plugin")
    assert release.inputs["values"]["auth"] == {"token": TOKEN}
    assert release.secret_input_paths == ["values.auth.token"]
    secret = sample.resource("kubernetes:core/v1:Secret", "agent-token")
    assert secret.secret_input_paths == ["stringData"]  # pulumi-kubernetes marks the whole map secret
    for resource in sample.resources:
        for path, value in leaf_paths(resource.inputs):
            if value == TOKEN:
                assert any(path == p or path.startswith(p + ".") for p in resource.secret_input_paths), path
    assert TOKEN not in json.dumps(sample.stack_outputs)


def test_stack_outputs_component_outputs_and_logs(sample: ProgramRun) -> None:
    config_map = sample.resource("kubernetes:core/v1:ConfigMap", "agent-config")
    generated = config_map.outputs["metadata"]["name"]
    assert generated.startswith("agent-config-") and len(generated) == len("agent-config-") + 8
    # releaseStatus is None in an update (the mocks do not return it) and pulumi.export drops None.
    assert sample.stack_outputs == {"namespace": "gpu-system", "configMapName": generated}
    assert sample.component_outputs == {AGENT: {"configMapName": generated, "replicas": 2}}
    assert sample.resources[0].outputs == sample.stack_outputs
    assert sample.by_urn(AGENT).outputs == sample.component_outputs[AGENT]
    assert sample.resource(HELM_RELEASE, "device-plugin").inputs["values"]["config"] == {"name": generated}
    assert sample.invokes == []
    assert sample.logs == [("info", "sample: 2 replicas in gpu-system")]


def test_preview_makes_unprovided_outputs_unknown() -> None:
    preview = run_sample(preview=True)
    assert preview.stack_outputs["releaseStatus"] is UNKNOWN
    assert json.loads(json.dumps(preview.stack_outputs))["releaseStatus"] == "<unknown>"

    # With nothing echoed, the ConfigMap's generated name is unknown too, and so is what uses it.
    silent = run_sample(preview=True, mocks=Mocks(echo_inputs=False))
    release = silent.resource(HELM_RELEASE, "device-plugin")
    assert is_unknown(release.inputs["values"]["config"]["name"])
    assert silent.stack_outputs["configMapName"] is UNKNOWN

    status = {"status": {"status": "deployed", "revision": 1}}
    provided = run_sample(preview=True, mocks=Mocks(outputs_by_type={HELM_RELEASE: status}))
    assert provided.stack_outputs["releaseStatus"] == {"status": "deployed", "revision": 1}


def test_consecutive_runs_are_identical_and_isolated() -> None:
    caller_config = dict(pulumi_config.CONFIG.get())
    caller_cwd, caller_path = Path.cwd(), list(sys.path)
    first, second = run_sample(), run_sample()
    assert first == second

    other = run_sample(stack="prod", config={**CONFIG, "replicas": "3"})
    assert other != first
    assert other.resources[0].urn == "urn:pulumi:prod::sample::pulumi:pulumi:Stack::sample-prod"
    assert other.resource(HELM_RELEASE, "device-plugin").inputs["values"]["replicas"] == 3

    # Nothing leaks into the caller: root resource, config, settings, modules, cwd, threads.
    assert pulumi_settings.get_root_resource() is None
    assert dict(pulumi_config.CONFIG.get()) == caller_config
    assert not any(
        getattr(m, "__file__", None) and str(PROGRAM) in str(m.__file__) for m in sys.modules.values()
    )
    assert (Path.cwd(), sys.path) == (caller_cwd, caller_path)
    assert [t.name for t in threading.enumerate() if t.name == "pulumi-offline-program"] == []
    seen: dict[str, Any] = {}
    probe = threading.Thread(target=lambda: seen.update(monitor=pulumi_settings.SETTINGS.monitor))
    probe.start()
    probe.join()
    assert seen["monitor"] is None  # the SDK's ContextProperty fallback was restored


def test_program_exception_propagates_and_the_next_run_works() -> None:
    without_replicas = {key: value for key, value in CONFIG.items() if key != "replicas"}
    with pytest.raises(pulumi.ConfigMissingError, match="sample:replicas"):
        run_sample(config=without_replicas)
    assert pulumi_settings.get_root_resource() is None
    assert run_sample() == run_sample()


def test_error_inside_apply_propagates(tmp_path: Path) -> None:
    program = write_program(
        tmp_path / "boom",
        """
        import pulumi

        def fail(value):
            raise pulumi.RunError(f"bad value {value}")

        pulumi.export("x", pulumi.Output.from_input(1).apply(fail))
        """,
    )
    with pytest.raises(pulumi.RunError, match="bad value 1"):
        run_program(program, stack="dev", config={})


def test_hang_becomes_timeout_error(tmp_path: Path) -> None:
    program = write_program(
        tmp_path / "hang",
        """
        import asyncio
        import pulumi

        pulumi.export("never", pulumi.Output.from_input(asyncio.get_event_loop().create_future()))
        """,
    )
    with pytest.raises(TimeoutError, match="did not finish within 0.3s"):
        run_program(program, stack="dev", config={}, timeout=0.3)
    assert [t.name for t in threading.enumerate() if t.name == "pulumi-offline-program"] == []


def test_invokes_are_recorded_and_answered(tmp_path: Path) -> None:
    program = write_program(
        tmp_path / "invokes",
        """
        import pulumi

        thing = pulumi.runtime.invoke("test:index:getThing", {"count": 1, "tags": ["a"]})
        pulumi.export("thing", thing.value)
        pulumi.export("other", pulumi.runtime.invoke_output("test:index:other", {}))
        pulumi.export("chart", pulumi.runtime.invoke("kubernetes:helm:template", {}).value)
        """,
    )
    mocks = Mocks(invoke_handlers={"test:index:getThing": lambda args: {"next": args["count"] + 1}})
    run = run_program(program, stack="dev", config={}, mocks=mocks)
    assert run.invokes == [  # the synchronous invokes run first; invoke_output's RPC is scheduled
        ("test:index:getThing", {"count": 1, "tags": ["a"]}),
        ("kubernetes:helm:template", {}),
        ("test:index:other", {}),
    ]
    assert run.stack_outputs == {"thing": {"next": 2}, "other": {}, "chart": {"result": []}}


def test_helm_v3_chart_references_and_reads(tmp_path: Path) -> None:
    # register_outputs({"resources": ...}) holds resource references: decoded, never rehydrated.
    program = write_program(
        tmp_path / "chart",
        """
        import pulumi
        import pulumi_kubernetes as k8s

        k8s.helm.v3.Chart("dp", k8s.helm.v3.ChartOpts(chart="nvidia-device-plugin"))
        existing = k8s.core.v1.ConfigMap.get("existing", "kube-system/existing")
        pulumi.export("existing", existing.metadata.name)
        """,
    )
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dp-cfg", "namespace": "ns"}}
    mocks = Mocks(invoke_handlers={"kubernetes:helm:template": lambda args: {"result": [manifest]}})
    run = run_program(program, stack="dev", config={}, mocks=mocks, timeout=30)
    chart_urn = "urn:pulumi:dev::scratch::kubernetes:helm.sh/v3:Chart::dp"
    child = run.resource("kubernetes:core/v1:ConfigMap", "ns/dp-cfg")
    assert (child.parent, child.inputs["metadata"]) == (chart_urn, manifest["metadata"])
    reference = run.component_outputs[chart_urn]["resources"]["v1/ConfigMap:ns/dp-cfg"]
    assert isinstance(reference, ResourceRef) and reference == {"urn": child.urn, "id": "ns/dp-cfg_id"}
    read = run.resource("kubernetes:core/v1:ConfigMap", "existing")
    assert (read.external, read.id, read.inputs) == (True, "kube-system/existing", {})
    assert run.stack_outputs == {"existing": "existing"}


def test_program_modules_win_over_cached_modules_of_the_same_name() -> None:
    impostor = types.ModuleType("components")
    impostor.__file__ = "/elsewhere/components/__init__.py"
    previous = sys.modules.get("components")
    sys.modules["components"] = impostor
    try:
        run = run_sample()
        assert sys.modules["components"] is impostor  # put back after the run
    finally:
        if previous is None:
            sys.modules.pop("components", None)
        else:
            sys.modules["components"] = previous
    assert run.resource("sample:index:NodeAgent", "agent").type == "sample:index:NodeAgent"


def test_only_the_programs_own_modules_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A project venv lives below the program directory; its libraries must stay cached (re-importing
    # pulumi_kubernetes fails: "Cannot re-register package kubernetes@...").
    program = write_program(tmp_path / "project", "import helper\nimport vendored_lib\n")
    (program / "helper.py").write_text("")
    site_packages = program / "venv" / "lib" / "site-packages"
    site_packages.mkdir(parents=True)
    (site_packages / "vendored_lib.py").write_text("")
    monkeypatch.syspath_prepend(str(site_packages))
    try:
        run_program(program, stack="dev", config={})
        assert "helper" not in sys.modules
        assert "vendored_lib" in sys.modules
    finally:
        sys.modules.pop("vendored_lib", None)


def test_a_linked_package_leaves_one_generation_of_its_modules(tmp_path: Path) -> None:
    """A project copy that links a package the caller has imported (`gpushare -> the repo's`) imports it
    afresh through the link; everything imported that way, including submodules the caller had not
    imported yet, goes after the run. Before, those stayed, built on the fresh copy's classes, and later
    isinstance checks against the caller's classes failed (prod planned as exclusive in the same test
    session: found under pytest-xdist)."""
    library = tmp_path / "lib"
    (library / "linkedpkg").mkdir(parents=True)
    (library / "linkedpkg" / "__init__.py").write_text("")
    (library / "linkedpkg" / "kinds.py").write_text("class Kind:\n    pass\n")
    (library / "linkedpkg" / "later.py").write_text("from linkedpkg.kinds import Kind\nKIND = Kind\n")
    sys.path.insert(0, str(library))
    try:
        import linkedpkg.kinds

        program = write_program(tmp_path / "project", "import linkedpkg.later\n")
        (program / "linkedpkg").symlink_to(library / "linkedpkg")
        run_program(program, stack="dev", config={})
        assert sys.modules["linkedpkg.kinds"] is linkedpkg.kinds  # the caller's, put back
        assert "linkedpkg.later" not in sys.modules  # imported through the link: dropped with its classes
        import linkedpkg.later

        assert linkedpkg.later.KIND is linkedpkg.kinds.Kind
    finally:
        sys.path.remove(str(library))
        for name in [n for n in sys.modules if n == "linkedpkg" or n.startswith("linkedpkg.")]:
            del sys.modules[name]


def test_runs_from_inside_an_event_loop_and_a_copied_context() -> None:
    async def caller() -> ProgramRun:
        return run_sample()

    run = contextvars.copy_context().run(lambda: asyncio.run(caller()))
    assert run.stack_outputs["namespace"] == "gpu-system"


# ---------------------------------------------------------------------------------------------- wire


def test_decode_struct_handles_unknowns_secrets_references_and_numbers() -> None:
    struct = struct_pb2.Struct()
    secret = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
    struct.update(
        {
            "count": 3.0,
            "ratio": 0.5,
            "pending": UNKNOWN_WIRE,
            "data": {"a.b": {**secret, "value": "s"}, "plain": "p"},
            "items": [1.0, {**secret, "value": {"k": 2.0}}],
            "ref": {
                "4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e",
                "urn": "u",
                "id": "i",
            },
        }
    )
    decoded, secret_paths = decode_struct(struct)
    assert decoded == {
        "count": 3,
        "ratio": 0.5,
        "pending": "<unknown>",
        "data": {"a.b": "s", "plain": "p"},
        "items": [1, {"k": 2}],
        "ref": {"urn": "u", "id": "i"},
    }
    assert type(decoded["count"]) is int and decoded["pending"] is UNKNOWN
    assert isinstance(decoded["ref"], ResourceRef) and decoded["ref"].urn == "u"
    assert secret_paths == ['data["a.b"]', "items[1]"]  # the engine's PropertyPath syntax

    # Encoding is the inverse, re-wrapping secrets at the given paths.
    again, again_paths = decode_struct(encode_struct(decoded, secret_paths))
    assert again == decoded and again_paths == secret_paths and again["pending"] is UNKNOWN


def test_engine_urn_uses_the_full_parent_type_but_skips_the_stack() -> None:
    component = engine_urn("dev", "sample", STACK, "sample:index:NodeAgent", "agent")
    child = engine_urn("dev", "sample", component, "sample:index:Inner", "inner")
    grandchild = engine_urn("dev", "sample", child, "kubernetes:core/v1:ConfigMap", "cm")
    assert component == AGENT
    assert grandchild == (
        "urn:pulumi:dev::sample::sample:index:NodeAgent$sample:index:Inner$kubernetes:core/v1:ConfigMap::cm"
    )
    assert engine_urn("dev", "sample", None, "pulumi:pulumi:Stack", "sample-dev") == STACK


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({}, "cm-"),
        ({"name": "fixed"}, "fixed"),
        ({"generateName": "gen-"}, "gen-"),
    ],
)
def test_mocks_imitate_kubernetes_auto_naming(metadata: dict[str, str], expected: str) -> None:
    inputs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    args = MockResourceArgs("kubernetes:core/v1:ConfigMap", "cm", inputs, custom=True)
    resource_id, outputs = Mocks().new_resource(args)
    assert resource_id == "cm_id" and inputs["metadata"] == metadata  # inputs untouched
    assert outputs["metadata"]["name"].startswith(expected)
    assert outputs == Mocks().new_resource(args)[1]  # deterministic suffix


def test_mocks_extra_outputs_and_components() -> None:
    def by_args(args: MockResourceArgs) -> dict[str, Any]:
        return {"seen": args.name}

    mocks = Mocks(outputs_by_type={"a:b:C": {"status": "ok"}, "a:b:D": by_args})
    assert mocks.new_resource(MockResourceArgs("a:b:C", "c", {"x": 1}, custom=True)) == (
        "c_id",
        {"x": 1, "status": "ok"},
    )
    assert mocks.new_resource(MockResourceArgs("a:b:D", "d", {}, custom=False)) == (None, {"seen": "d"})
    list_inputs = {"apiVersion": "v1", "kind": "ConfigMapList"}
    list_args = MockResourceArgs("kubernetes:core/v1:ConfigMapList", "l", list_inputs, custom=True)
    assert "metadata" not in Mocks().new_resource(list_args)[1]


# ---------------------------------------------------------------------------------------------- stack config


def write_project(directory: Path, stack_yaml: str, project_yaml: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Pulumi.yaml").write_text("name: sample\nruntime: python\n" + textwrap.dedent(project_yaml))
    (directory / "Pulumi.dev.yaml").write_text(textwrap.dedent(stack_yaml))
    return directory


def test_load_stack_config_like_the_cli(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        """\
        encryptionsalt: v1:abc
        config:
          replicas: 2
          sample:enabled: true
          sample:loud: yes
          sample:ratio: 1.50
          sample:since: 2024-01-02
          sample:empty: ""
          sample:nodePools:
            - name: l20
              gpus: 8
              taint: {key: nvidia.com/gpu, effect: "<NoSchedule>"}
            - name: a100
              gpus: 4
          sample:token:
            secure: v1:bm9uY2U=:Y2lwaGVy
          sample:registry:
            user: bot
            password:
              secure: v1:bm9uY2U=:cGFzcw==
          kubernetes:context: tke
          aws:config:region: us-east-1
        """,
        """\
        config:
          sample:fromProject:
            default: 7
          sample:replicas:
            default: 1
          other:value: [1, 2]
        """,
    )
    values, secret_keys = load_stack_config(project, "dev")
    assert values == {
        "sample:replicas": "2",
        "sample:enabled": "true",
        "sample:loud": "yes",  # YAML 1.2 (yaml.v3): not a boolean
        "sample:ratio": "1.5",
        "sample:since": "2024-01-02",
        "sample:empty": "",
        "sample:nodePools": (
            '[{"gpus":8,"name":"l20","taint":{"effect":"\\u003cNoSchedule\\u003e","key":"nvidia.com/gpu"}},'
            '{"gpus":4,"name":"a100"}]'
        ),
        "sample:token": SECRET_PLACEHOLDER,
        "sample:registry": '{"password":"[secret]","user":"bot"}',
        "kubernetes:context": "tke",
        "aws:region": "us-east-1",
        "sample:fromProject": "7",
        "other:value": "[1,2]",
    }
    assert secret_keys == ["sample:registry", "sample:token"]
    # The program reads them back like PULUMI_CONFIG values.
    assert json.loads(values["sample:nodePools"])[0]["taint"]["effect"] == "<NoSchedule>"


def test_load_stack_config_of_the_fixture_runs_the_fixture() -> None:
    values, secret_keys = load_stack_config(PROGRAM, "dev")
    assert values["sample:labels"] == '{"team":"gpu","tier":"infra"}'
    assert secret_keys == ["sample:token"]
    run = run_program(PROGRAM, stack="dev", config=values, secret_keys=secret_keys)
    release = run.resource(HELM_RELEASE, "device-plugin")
    assert release.inputs["values"]["auth"]["token"] == SECRET_PLACEHOLDER


@pytest.mark.parametrize(
    ("stack_yaml", "error", "match"),
    [
        ("config:\n  sample:a: [1\n", ValueError, r"Pulumi\.dev\.yaml: invalid YAML"),
        ("config:\n  sample:a: 1\n  sample:a: 2\n", ValueError, "already defined"),
        ("config: [1, 2]\n", ValueError, "must be a mapping"),
    ],
)
def test_load_stack_config_errors_name_the_file(
    tmp_path: Path, stack_yaml: str, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        load_stack_config(write_project(tmp_path, stack_yaml), "dev")


def test_load_stack_config_missing_file(tmp_path: Path) -> None:
    project = write_project(tmp_path, "config: {}\n")
    with pytest.raises(FileNotFoundError, match=r"Pulumi\.prod\.yaml"):
        load_stack_config(project, "prod")
    assert load_stack_config(project, "dev") == ({}, [])
