"""`pulumi preview` of every stack by the real CLI of make engine (make test-engine), held to the offline
render: what the program registers with the engine is `gpushare render`'s resources.json record for record,
what the engine plans (after the providers' Check) is the render's inputs, and `--policy-pack policies`
gives the verdicts `gpushare check` gives.

Two parts are stand-ins, named so (engine/README.md): the Python language host (the Go module proxy refuses
pulumi-language-python) and pulumi-resource-tencentcloud (the cloud). The CLI, the engine, its resource
monitor, the Kubernetes provider and the pack's process are the real ones.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import PROJECT_DIR, STACKS, pinned_charts
from engine_stack import EngineProject, chart_mirror, registrations

from gpushare.offline.check import check_stack
from gpushare.offline.manifests import to_plain
from gpushare.offline.recorded import RecordedResource
from gpushare.offline.render import _resource_record, redacted_inputs, render_stack

pytestmark = pytest.mark.engine

# The engine's display of a secret (`pulumi preview --json`) and the render's.
ENGINE_SECRET, RENDER_SECRET = "[secret]", "<secret>"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineProject]:
    """The project under the real CLI; a stack with a Helm release fetches its chart from a loopback mirror of
    the pinned charts (its `devicePlugin.chartRepository`, in the engine's stack file and the render's)."""
    project = EngineProject(PROJECT_DIR, tmp_path_factory.mktemp("engine-preview"))
    with chart_mirror(pinned_charts()) as mirror:
        project.set_up(STACKS, chart_repository=mirror)
        yield project


Preview = tuple[dict[str, Any], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def previews(engine: EngineProject) -> dict[str, Preview]:
    """`pulumi preview --json` of each stack, once per module (the CLI's JSON, its gRPC debug log)."""

    class Previews(dict[str, Preview]):
        def __missing__(self, stack: str) -> Preview:
            result = self[stack] = engine.preview(stack)
            return result

    return Previews()


@pytest.fixture(scope="module")
def renders(
    tmp_path_factory: pytest.TempPathFactory, engine: EngineProject
) -> dict[str, list[dict[str, Any]]]:
    """`gpushare render` of the stack files the engine runs (the project copy's)."""
    out = tmp_path_factory.mktemp("offline-renders")

    class Renders(dict[str, list[dict[str, Any]]]):
        def __missing__(self, stack: str) -> list[dict[str, Any]]:
            result = render_stack(engine.copy, stack, out / stack)
            records = self[stack] = json.loads((result.out_dir / "resources.json").read_text())
            return records

    return Renders()


def _without_provider_id(reference: str | None) -> str | None:
    # The offline mocks name a provider's id "<name>_id"; the engine's is a UUID after `up` and its unknown
    # sentinel at a preview. The reference is the same provider when the URN is.
    return reference.rsplit("::", 1)[0] if reference else reference


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "provider": _without_provider_id(record["provider"])}


@pytest.mark.parametrize("stack", STACKS)
def test_the_engine_receives_the_renders_registrations(
    stack: str, previews: dict[str, Preview], renders: dict[str, list[dict[str, Any]]]
) -> None:
    document, log = previews[stack]
    assert document["exitCode"] == 0, document.get("diagnostics")
    engine_records = json.loads(
        json.dumps(to_plain([_resource_record(r) for r in _redacted(registrations(log))]))
    )
    # By URN: the order of registrations is the program's asyncio scheduling, in the engine and offline.
    engine_by_urn = {r["urn"]: _comparable(r) for r in engine_records}
    rendered_by_urn = {r["urn"]: _comparable(r) for r in renders[stack]}
    assert len(engine_by_urn) == len(engine_records)
    assert sorted(engine_by_urn) == sorted(rendered_by_urn)
    for urn, record in engine_by_urn.items():
        assert record == rendered_by_urn[urn], urn


def _redacted(resources: list[RecordedResource]) -> list[RecordedResource]:
    return [dataclasses.replace(r, inputs=redacted_inputs(r)) for r in resources]


def _planned(step: dict[str, Any]) -> dict[str, Any]:
    state = step["newState"]
    inputs = dict(state.get("inputs") or {})
    return {
        "urn": state["urn"],
        "type": state["type"],
        "parent": state.get("parent"),
        "provider": _without_provider_id(state.get("provider")),
        "custom": state.get("custom", False),
        "protect": state.get("protect", False),
        "retainOnDelete": state.get("retainOnDelete", False),
        "dependencies": sorted(state.get("dependencies") or []),
        "inputs": _secrets_as_rendered(inputs),
    }


def _secrets_as_rendered(value: Any) -> Any:
    if value == ENGINE_SECRET:
        return RENDER_SECRET
    if isinstance(value, dict):
        return {k: _secrets_as_rendered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_secrets_as_rendered(v) for v in value]
    return value


# What pulumi-resource-kubernetes' Check makes of a helm.sh/v3:Release's inputs (seen in this engine's
# previews): every unset option at its default, empty repository credentials, and `compat` (the SDK's marker
# of the v3 wire format, which the render keeps as registered) dropped. The render records what the program
# registers, before any provider's Check; this is the one type whose Check changes them.
RELEASE_CHECK_DEFAULTS = {
    "allowNullValues": False,
    "atomic": False,
    "cleanupOnFail": False,
    "createNamespace": False,
    "dependencyUpdate": False,
    "description": "",
    "devel": False,
    "disableCRDHooks": False,
    "disableOpenapiValidation": False,
    "disableWebhooks": False,
    "forceUpdate": False,
    "keyring": "",
    "lint": False,
    "postrender": "",
    "recreatePods": False,
    "renderSubchartNotes": False,
    "replace": False,
    "resetValues": False,
    "reuseValues": False,
    "skipAwait": False,
    "skipCrds": False,
    "timeout": 300,
    "verify": False,
    "waitForJobs": False,
}
RELEASE_REPOSITORY_DEFAULTS = {"caFile": "", "certFile": "", "keyFile": "", "password": "", "username": ""}


def _release_checked(inputs: dict[str, Any]) -> dict[str, Any]:
    checked = {**RELEASE_CHECK_DEFAULTS, **{k: v for k, v in inputs.items() if k != "compat"}}
    if "repositoryOpts" in checked:
        checked["repositoryOpts"] = {**RELEASE_REPOSITORY_DEFAULTS, **checked["repositoryOpts"]}
    return checked


def _rendered_plan(record: dict[str, Any]) -> dict[str, Any]:
    inputs = dict(record["inputs"])
    if record["type"] == "kubernetes:helm.sh/v3:Release":
        inputs = _release_checked(inputs)
    if record["type"].startswith("pulumi:providers:"):
        # The engine keeps a provider's requested version and download URL among its inputs.
        inputs["version"] = record["version"]
        url = record["pluginDownloadURL"]
        inputs["__internal"] = {"pluginDownloadURL": url} if url else {}
    return {
        "urn": record["urn"],
        "type": record["type"],
        "parent": record["parent"],
        "provider": _without_provider_id(record["provider"]),
        "custom": record["custom"],
        "protect": record["protect"],
        "retainOnDelete": record.get("retainOnDelete", False),
        "dependencies": sorted(record["dependencies"]),
        "inputs": inputs,
    }


@pytest.mark.parametrize("stack", STACKS)
def test_the_engines_plan_is_the_render(
    stack: str, previews: dict[str, Preview], renders: dict[str, list[dict[str, Any]]]
) -> None:
    document, _ = previews[stack]
    assert document["exitCode"] == 0, document.get("diagnostics")
    assert {step["op"] for step in document["steps"]} == {"create"}
    planned = {step["urn"]: _planned(step) for step in document["steps"]}
    rendered = {r["urn"]: _rendered_plan(r) for r in renders[stack]}
    assert sorted(planned) == sorted(rendered)
    for urn, plan in planned.items():
        assert plan == rendered[urn], urn


def _engine_verdicts(events: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return sorted(
        (e["policyName"], e["enforcementLevel"], e.get("resourceUrn", ""), e["message"])
        for e in (event["policyEvent"] for event in events if "policyEvent" in event)
    )


@pytest.mark.parametrize("stack", STACKS)
def test_the_packs_verdicts_are_checks(stack: str, engine: EngineProject) -> None:
    code, events = engine.preview_events(stack, "--policy-pack", str(engine.copy / "policies"))
    offline = check_stack(engine.copy, stack)
    mandatory = [d for d in offline.report.diagnostics if d.enforcement_level == "mandatory"]
    assert code == (1 if mandatory else 0)
    # The engine's event ends the text `check` prints with a newline.
    expected = sorted(
        (d.policy_name, d.enforcement_level, d.urn, f"{d.message}\n") for d in offline.report.diagnostics
    )
    assert _engine_verdicts(events) == expected


def test_the_stand_ins_say_so() -> None:
    host = (PROJECT_DIR / "engine" / "python-language-host" / "main.go").read_text()
    provider = (PROJECT_DIR / "engine" / "tencentcloud-provider" / "main.go").read_text()
    assert "STAND-IN for pulumi-language-python" in host
    assert "ONE STAND-IN" in provider
    for text in (host, provider):
        assert "403 Forbidden" in text and "This module version is not available." in text
