"""gpushare/offline/policy_driver.py drives a real policy pack: a subprocess and gRPC, as `pulumi preview` does.

A pack start costs about 0.3 s, so two module-scoped runs of the fixture pack serve most
tests; the failure cases start a pack each, and the rest needs no pack at all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from conftest import FIXTURES
from google.protobuf import empty_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc

from gpushare.offline import pack_process
from gpushare.offline.pack_process import _serve_engine, pack_python
from gpushare.offline.policy_config import load_policy_config_file, reconcile_policy_config
from gpushare.offline.policy_driver import run_policy_pack
from gpushare.offline.policy_model import (
    AnalyzedResource,
    Diagnostic,
    PackReport,
    PolicyConfigEntry,
    PolicyConfigError,
    PolicyInfo,
    PolicyPackRpcError,
    PolicyPackStartError,
    Remediation,
    root_stack_urn,
)
from gpushare.offline.policy_report import format_report
from gpushare.offline.wire import UNKNOWN, secret
from gpushare.resource_types import CONFIG_MAP

# Starts policy packs as processes and drives them over gRPC: make test-e2e, which CI runs after make test.
pytestmark = pytest.mark.e2e

PACK = FIXTURES / "sample_pack"
STACK = "dev"
PROJECT = "gpushare"
POOL_TYPE = "gpushare:index:SharedPool"
POOL_URN = f"urn:pulumi:{STACK}::{PROJECT}::{POOL_TYPE}::pool"


def config_map(
    name: str,
    data: Any,
    *,
    labels: dict[str, str] | None = None,
    parent: bool = False,
    dependencies: Sequence[str] = (),
) -> AnalyzedResource:
    qualified = f"{POOL_TYPE}${CONFIG_MAP}" if parent else CONFIG_MAP
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return AnalyzedResource(
        type=CONFIG_MAP,
        name=name,
        urn=f"urn:pulumi:{STACK}::{PROJECT}::{qualified}::{name}",
        properties={"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data},
        parent=POOL_URN if parent else None,
        dependencies=dependencies,
    )


LABELS = {"app": "demo"}
POOL = AnalyzedResource(type=POOL_TYPE, name="pool", urn=POOL_URN, properties={"slots": 4})
CM_OK = config_map("cm-ok", {"replicas": "2"}, labels=LABELS, parent=True)
CM_SINGLE = config_map("cm-single", {"replicas": "1"}, labels=LABELS, dependencies=[CM_OK.urn])
CM_SECRET = config_map("cm-secret", {"replicas": secret("1")}, labels=LABELS)
CM_BARE = config_map("cm-bare", {"replicas": "2", "a": "1", "b": "2", "c": "3"})  # 4 keys, no labels
CM_PENDING = config_map("cm-pending", UNKNOWN, labels=LABELS)  # computed during preview
BASELINE_RESOURCES = [POOL, CM_OK, CM_SINGLE, CM_SECRET, CM_BARE, CM_PENDING]


def for_urn(report: PackReport, urn: str) -> list[Diagnostic]:
    return [d for d in report.diagnostics if d.urn == urn]


def by_policy(diagnostics: Sequence[Diagnostic]) -> dict[str, Diagnostic]:
    result = {d.policy_name: d for d in diagnostics}
    assert len(result) == len(diagnostics), diagnostics
    return result


@pytest.fixture(scope="module")
def baseline() -> PackReport:
    """The pack's own levels and defaults, one run over every kind of resource."""
    return run_policy_pack(
        PACK,
        BASELINE_RESOURCES,
        stack=STACK,
        project=PROJECT,
        organization="acme",
        config={f"{PROJECT}:environment": "test"},
        stack_tags={"team": "ml"},
    )


@pytest.fixture(scope="module")
def reconfigured() -> PackReport:
    """A --policy-pack-config: "all" first, then each policy; `pulumi up` rather than preview."""
    return run_policy_pack(
        PACK,
        [CM_SINGLE, CM_BARE],
        stack=STACK,
        project=PROJECT,
        dry_run=False,
        policy_config={
            "all": "disabled",
            "stack-inventory": "advisory",
            "configmap-has-labels": "remediate",
            "max-data-keys": {"enforcementLevel": "mandatory", "maxKeys": 1},
        },
    )


# --- one run, the pack's own configuration -----------------------------------------------------------


def test_compliant_config_map_has_no_diagnostics(baseline: PackReport) -> None:
    assert for_urn(baseline, CM_OK.urn) == []
    assert {d.urn for d in baseline.mandatory} == {CM_SINGLE.urn, CM_SECRET.urn}


def test_violation_is_one_mandatory_diagnostic(baseline: PackReport) -> None:
    assert for_urn(baseline, CM_SINGLE.urn) == [
        Diagnostic(
            policy_name="configmap-replicas",
            policy_pack_name="sample-pack",
            description="ConfigMaps must not pin a single replica.",
            message=(
                "ConfigMaps must not pin a single replica.\n"  # the SDK puts the description first
                'ConfigMap "cm-single" sets data.replicas to "1"; run at least 2.'
            ),
            enforcement_level="mandatory",
            urn=CM_SINGLE.urn,
            severity="",
            policy_pack_version="0.1.0",  # PulumiPolicy.yaml wins over the SDK's 0.0.1
        )
    ]


def test_secrets_reach_policies_unwrapped(baseline: PackReport) -> None:
    [diagnostic] = for_urn(baseline, CM_SECRET.urn)
    assert (diagnostic.policy_name, diagnostic.enforcement_level) == ("configmap-replicas", "mandatory")


def test_advisory_policies_and_schema_defaults(baseline: PackReport) -> None:
    found = by_policy(for_urn(baseline, CM_BARE.urn))
    assert set(found) == {"configmap-has-labels", "max-data-keys"}
    assert {d.enforcement_level for d in found.values()} == {"advisory"}
    assert found["max-data-keys"].message.endswith("has 4 data keys; at most 3 allowed.")  # default: 3


def test_unknown_values_become_advisories(baseline: PackReport) -> None:
    found = by_policy(for_urn(baseline, CM_PENDING.urn))
    assert set(found) == {"configmap-replicas", "max-data-keys"}
    replicas = found["configmap-replicas"]
    assert replicas.enforcement_level == "advisory"  # although the policy is mandatory
    assert replicas.message == (
        "can't run policy 'configmap-replicas' from policy pack 'sample-pack@v0.0.1' during preview: "
        "string value at .data can't be known during preview"
    )


def test_stack_policy_sees_every_resource_and_the_stack(baseline: PackReport) -> None:
    [inventory] = [d for d in baseline.diagnostics if d.policy_name == "stack-inventory"]
    assert inventory.urn == root_stack_urn(STACK, PROJECT)  # no URN given: the root stack
    assert inventory.resource_type == "pulumi:pulumi:Stack"
    _, resources, settings = inventory.message.split("\n")
    assert resources == (
        "6 resources: cm-bare(parent=- deps=-) cm-ok(parent=pool deps=-) cm-pending(parent=- deps=-) "
        "cm-secret(parent=- deps=-) cm-single(parent=- deps=cm-ok) pool(parent=- deps=-)"
    )
    assert settings == "stack=dev project=gpushare org=acme dry_run=True environment=test tags={'team': 'ml'}"
    assert "stack-inventory saw 6 resources" in baseline.stderr


def test_policies_are_listed_like_the_cli(baseline: PackReport) -> None:
    assert [(p.name, p.enforcement_level, p.policy_type) for p in baseline.policies] == [
        ("configmap-has-labels", "advisory", "resource"),
        ("configmap-replicas", "mandatory", "resource"),
        ("max-data-keys", "advisory", "resource"),
        ("stack-inventory", "advisory", "stack"),
    ]
    [max_keys] = [p for p in baseline.policies if p.config_schema is not None]
    assert max_keys.config_schema == {
        "properties": {"maxKeys": {"type": "integer", "minimum": 1.0, "default": 3.0}},  # numbers are doubles
        "required": [],
    }
    assert (baseline.pack_name, baseline.pack_version, baseline.remediations) == ("sample-pack", "0.1.0", [])


def test_format_report_is_the_preview_policies_block(baseline: PackReport) -> None:
    text = format_report(baseline)
    assert text.startswith(f"Policies:\n    ❌ sample-pack@v0.1.0 (local: {PACK})\n")
    assert (
        "        - [mandatory]  configmap-replicas  (kubernetes:core/v1:ConfigMap: cm-single)\n"
        "          ConfigMaps must not pin a single replica.\n"
        '          ConfigMap "cm-single" sets data.replicas to "1"; run at least 2.\n'
    ) in text
    # Mandatory first, then advisory; by policy name, then URN.
    levels = [line.split("]")[0].strip() for line in text.splitlines() if line.startswith("        - [")]
    assert levels == ["- [mandatory"] * 2 + ["- [advisory"] * 5


# --- one run, reconfigured -----------------------------------------------------------------------


def test_policy_config_levels_and_properties(reconfigured: PackReport) -> None:
    assert {p.name: p.enforcement_level for p in reconfigured.policies} == {
        "configmap-has-labels": "remediate",
        "configmap-replicas": "disabled",  # by "all"
        "max-data-keys": "mandatory",  # promoted
        "stack-inventory": "advisory",  # set after "all"
    }
    assert [(d.policy_name, d.urn, d.enforcement_level) for d in reconfigured.diagnostics] == [
        ("max-data-keys", CM_BARE.urn, "mandatory"),
        ("stack-inventory", root_stack_urn(STACK, PROJECT), "advisory"),
    ]
    assert reconfigured.mandatory[0].message.endswith("has 4 data keys; at most 1 allowed.")
    assert "dry_run=False" in reconfigured.diagnostics[-1].message


def test_remediation_rewrites_inputs_before_analyze(reconfigured: PackReport) -> None:
    # Analyze saw the remediated labels, so configmap-has-labels reports nothing.
    [remediation] = reconfigured.remediations
    assert remediation == Remediation(
        policy_name="configmap-has-labels",
        policy_pack_name="sample-pack",
        description="ConfigMaps should carry labels.",
        urn=CM_BARE.urn,
        properties={
            **CM_BARE.properties,
            "metadata": {"name": "cm-bare", "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        },
    )
    assert "        - [remediate]  configmap-has-labels  (1 resource)\n" in format_report(reconfigured)


# --- failures ------------------------------------------------------------------------------------


def test_config_schema_violation_fails_before_analysis() -> None:
    with pytest.raises(PolicyConfigError) as caught:
        run_policy_pack(
            PACK, [CM_BARE], stack=STACK, project=PROJECT, policy_config={"max-data-keys": {"maxKeys": 0}}
        )
    assert caught.value.errors == ["max-data-keys: maxKeys: 0 is less than the minimum of 1.0"]
    assert str(caught.value).startswith("validating policy config: sample-pack 0.1.0  max-data-keys:")


def write_pack(directory: Path, main: str) -> Path:
    directory.mkdir()
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (directory / "__main__.py").write_text(main)
    return directory


def test_pack_that_crashes_at_start(tmp_path: Path) -> None:
    pack = write_pack(tmp_path / "broken", 'raise RuntimeError("no policies today")\n')
    with pytest.raises(PolicyPackStartError) as caught:
        run_policy_pack(pack, [CM_OK], stack=STACK, project=PROJECT)
    assert caught.value.message.startswith("could not read plugin [")
    assert "exit status 1" in caught.value.message
    assert "RuntimeError: no policies today" in caught.value.stderr


def test_policy_that_raises_fails_the_run(tmp_path: Path) -> None:
    pack = write_pack(
        tmp_path / "buggy",
        "from pulumi_policy import PolicyPack, ResourceValidationPolicy\n\n\n"
        "def validate(args, report_violation):\n"
        '    raise ValueError("policy bug")\n\n\n'
        'PolicyPack("buggy", [ResourceValidationPolicy("buggy-policy", "Always raises.", validate)])\n',
    )
    with pytest.raises(PolicyPackRpcError) as caught:
        run_policy_pack(pack, [CM_OK], stack=STACK, project=PROJECT)
    assert (caught.value.rpc, caught.value.code) == ("Analyze", "UNKNOWN")
    # grpc logs handler exceptions to a NullHandler, so only the status detail carries the message.
    assert caught.value.details == "Exception calling application: policy bug"


def test_malformed_policy_config_fails_before_the_pack_starts() -> None:
    # A pack start would fail with PolicyPackStartError: this interpreter does not exist.
    with pytest.raises(PolicyConfigError, match='"strict" is not a valid enforcement level'):
        run_policy_pack(
            PACK, [], stack=STACK, project=PROJECT, policy_config={"all": "strict"}, python="/nonexistent"
        )
    with pytest.raises(ValueError, match="must be namespaced"):
        run_policy_pack(
            PACK, [], stack=STACK, project=PROJECT, config={"environment": "x"}, python="/nonexistent"
        )


def test_pack_python_follows_the_virtualenv_option(tmp_path: Path) -> None:
    assert pack_python(PACK, default="python3") == "python3"  # bare `runtime: python`
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "PulumiPolicy.yaml").write_text("runtime:\n  name: python\n  options:\n    virtualenv: venv\n")
    with pytest.raises(PolicyPackStartError, match="run `pulumi install`"):
        pack_python(pack)
    interpreter = pack / "venv" / "bin" / "python"
    interpreter.parent.mkdir(parents=True)
    interpreter.touch()
    assert pack_python(pack) == str(interpreter)


def test_pack_without_runtime_is_rejected(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "PulumiPolicy.yaml").write_text("description: no runtime\n")
    with pytest.raises(PolicyPackStartError, match="a `runtime` is required"):
        run_policy_pack(pack, [], stack=STACK, project=PROJECT)


# --- no pack needed --------------------------------------------------------------------------------


def policy(name: str, level: str, schema: dict[str, Any] | None = None) -> PolicyInfo:
    return PolicyInfo(name=name, description=name, enforcement_level=level, config_schema=schema)


def test_reconcile_policy_config_like_the_cli() -> None:
    policies = [
        policy("a", "mandatory"),
        policy("b", "advisory", {"properties": {"limit": {"type": "integer", "default": 3}}, "required": []}),
        policy("c", "mandatory"),
    ]
    initial = {
        "c": PolicyConfigEntry("advisory", {})
    }  # an initialConfig entry without a level reads advisory
    user = {"all": "disabled", "b": {"limit": 5}, "a": {"enforcementLevel": "mandatory"}, "typo": "advisory"}
    assert reconcile_policy_config(policies, initial, user) == {
        "a": PolicyConfigEntry("mandatory"),
        "b": PolicyConfigEntry(
            "disabled", {"limit": 5}
        ),  # "all" keeps the properties; the default is replaced
        "c": PolicyConfigEntry("disabled", None),
        "all": PolicyConfigEntry("disabled"),  # the CLI sends these too; the SDK ignores unknown names
        "typo": PolicyConfigEntry("advisory"),
    }
    assert reconcile_policy_config(policies, {}, None)["b"] == PolicyConfigEntry("advisory", {"limit": 3})
    with pytest.raises(PolicyConfigError) as caught:
        reconcile_policy_config(policies, {}, {"b": {"limit": "many"}}, pack_label="pack 1.0.0")
    assert (
        str(caught.value) == "validating policy config: pack 1.0.0  b: limit: 'many' is not of type 'integer'"
    )


def test_load_policy_config_file(tmp_path: Path) -> None:
    path = tmp_path / "policy-config.json"
    document = {"all": "mandatory", "max-data-keys": {"enforcementLevel": "advisory", "maxKeys": 2}}
    path.write_text(json.dumps(document))
    assert load_policy_config_file(path) == document
    path.write_text("  \n")
    assert load_policy_config_file(path) == {}
    for bad, problem in [
        ('{"x": "loud"}', '"loud" is not a valid enforcement level'),
        ('{"x": {"enforcementLevel": 1}}', "must be a string"),
        ('{"x": 3}', "must be a string or object"),
        ('{"environments": ["team/policy"]}', "not supported offline"),
        ("[]", "must be a JSON object"),
        ("{", "not valid JSON"),
    ]:
        path.write_text(bad)
        with pytest.raises(PolicyConfigError, match=problem) as caught:
            load_policy_config_file(path)
        assert str(caught.value).startswith(str(path))


def test_format_report_marks_and_type_names() -> None:
    advisory = Diagnostic(
        policy_name="tags",
        policy_pack_name="aws-pack",
        description="Buckets need tags.",
        message="Buckets need tags.\n",
        enforcement_level="advisory",
        urn="urn:pulumi:dev::site::aws:s3/bucket:Bucket::logs",
        severity="high",
    )
    clean = PackReport("clean-pack", [], [], [], "", pack_version="1.2.0")
    warned = PackReport("aws-pack", [], [advisory], [], "", pack_version="0.3.0", pack_path="policies")
    assert format_report(warned, clean) == (
        "Policies:\n"
        "    ⚠️ aws-pack@v0.3.0 (local: policies)\n"
        "        - [advisory] [severity: high]  tags  (aws:s3:Bucket: logs)\n"
        "          Buckets need tags.\n"
        "    ✅ clean-pack@v1.2.0\n"
    )


def test_fake_engine_answers_what_a_pack_may_ask() -> None:
    with _serve_engine() as (address, engine), grpc.insecure_channel(address) as channel:
        stub = engine_pb2_grpc.EngineStub(channel)
        stub.Log(
            engine_pb2.LogRequest(severity=engine_pb2.WARNING, message="careful", urn="urn:x"), timeout=5
        )
        stub.SetRootResource(engine_pb2.SetRootResourceRequest(urn="urn:root"), timeout=5)
        assert stub.GetRootResource(engine_pb2.GetRootResourceRequest(), timeout=5).urn == "urn:root"
        stub.RequirePulumiVersion(
            engine_pb2.RequirePulumiVersionRequest(pulumi_version_range=">=3"), timeout=5
        )
        assert stub.StartDebugging(engine_pb2.StartDebuggingRequest(), timeout=5) == empty_pb2.Empty()
    assert engine.logs == ["warning: careful (urn:x)"]


_PRINT_SIGINT = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT).__name__)"]


def test_pack_gets_sigint_back_even_when_the_driver_ignores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A driver started in the background by a non-interactive shell has SIGINT ignored, and children
    # inherit that: the pack would never see the CLI's interrupt and every run would end in a kill.
    spawned: list[dict[str, object]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        spawned.append(kwargs)
        return real_popen(*args, **kwargs)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        monkeypatch.setattr(pack_process.subprocess, "Popen", popen)
        pack = pack_process.PackProcess(_PRINT_SIGINT, Path.cwd(), os.environ)
        still_ignored = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    with pytest.raises(PolicyPackStartError) as refused:
        pack.read_port(timeout=60)  # the child's first line is where a pack prints its port
    # KeyboardInterrupt, as pulumi_policy expects:
    assert (
        str(refused.value).splitlines()[0].endswith("wrote an invalid port to stdout: 'default_int_handler'")
    )
    assert still_ignored is signal.SIG_IGN  # the driver itself still ignores it
    # No pre-exec hook: with one, subprocess forks instead of vforking, and gRPC's fork handlers can abort
    # the child before exec (epoll_wait: Bad file descriptor) -- the pack "crashes" with exit -6.
    assert [kwargs["preexec_fn"] for kwargs in spawned] == [None]


def test_off_the_main_thread_the_child_gets_sigint_back_through_the_hook() -> None:
    outcome: list[str] = []

    def spawn() -> None:
        with pack_process.sigint_for_children() as preexec_fn:
            child = subprocess.run(_PRINT_SIGINT, preexec_fn=preexec_fn, capture_output=True, text=True)
        outcome.append(child.stdout.strip())
        outcome.append("hook" if preexec_fn is not None else "none")

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        worker = threading.Thread(target=spawn)
        worker.start()
        worker.join(timeout=60)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert outcome == ["default_int_handler", "hook"]
