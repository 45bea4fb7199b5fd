"""The pack takes the stack config from the engine's ConfigureStack when the CLI sets no PULUMI_CONFIG (a
current CLI with the Python language host; make test-engine's verdicts test is the end-to-end proof)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy
from pulumi_policy import policy as policy_sdk

from gpushare_policies import engine_config

REQUEST = analyzer_pb2.AnalyzerStackConfigureRequest(
    stack="prod",
    project="gpushare",
    organization="organization",
    dry_run=True,
    config={"gpushare:protectPools": "true", "tencentcloud:region": "ap-singapore"},
    config_secret_keys=["gpushare:kubeconfig"],
    tags={"team": "ml"},
)


@pytest.fixture
def servicer(monkeypatch: pytest.MonkeyPatch) -> type:
    cls = policy_sdk._PolicyAnalyzerServicer
    monkeypatch.setattr(cls, "ConfigureStack", cls.ConfigureStack)  # restored after the test
    return cls


def _configure(cls: type) -> None:
    # The SDK's own ConfigureStack only stores the tags on the servicer: a bare object stands in for it.
    cls.ConfigureStack(SimpleNamespace(), REQUEST, None)


def test_without_pulumi_config_the_stack_comes_from_configure_stack(servicer: type) -> None:
    environ: dict[str, str] = {}
    engine_config.take_stack_config_from_configure_stack(environ)
    _configure(servicer)
    assert environ == {
        "PULUMI_CONFIG": '{"gpushare:protectPools": "true", "tencentcloud:region": "ap-singapore"}',
        "PULUMI_STACK": "prod",
        "PULUMI_PROJECT": "gpushare",
        "PULUMI_ORGANIZATION": "organization",
        "PULUMI_DRY_RUN": "true",
    }
    # Secret keys stay unknown, as with a CLI that sets PULUMI_CONFIG.
    assert "PULUMI_CONFIG_SECRET_KEYS" not in environ


def test_a_pulumi_config_the_cli_set_is_kept(servicer: type) -> None:
    environ = {"PULUMI_CONFIG": json.dumps({"gpushare:protectPools": "false"}), "PULUMI_STACK": "dev"}
    engine_config.take_stack_config_from_configure_stack(environ)
    _configure(servicer)
    assert environ == {"PULUMI_CONFIG": '{"gpushare:protectPools": "false"}', "PULUMI_STACK": "dev"}


def _pack_servicer() -> tuple[Any, Policy, Policy]:
    """A servicer as PolicyPack builds one at start without PULUMI_CONFIG: the pack's level mandatory."""
    inherits = ResourceValidationPolicy(name="inherits", description="d", validate=lambda args, report: None)
    own = ResourceValidationPolicy(
        name="own",
        description="d",
        validate=lambda args, report: None,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
    servicer = policy_sdk._PolicyAnalyzerServicer(
        "gpushare", "0.1.0", [inherits, own], EnforcementLevel.MANDATORY
    )
    return servicer, inherits, own


@pytest.mark.parametrize(
    ("config", "inherited"),
    [
        # Another team's program: no gpushare: key, findings advise (as `gpushare check` judges it).
        ({"aws:region": "us-east-1"}, EnforcementLevel.ADVISORY),
        ({}, EnforcementLevel.ADVISORY),
        # gpushare's own stack: mandatory.
        ({"gpushare:protectPools": "true"}, EnforcementLevel.MANDATORY),
    ],
)
def test_the_pack_level_follows_the_configured_stack(
    servicer: type, config: dict[str, str], inherited: EnforcementLevel
) -> None:
    environ: dict[str, str] = {}
    engine_config.take_stack_config_from_configure_stack(environ)
    pack, inherits, own = _pack_servicer()
    request = analyzer_pb2.AnalyzerStackConfigureRequest(stack="s", project="p", config=config)
    servicer.ConfigureStack(pack, request, None)
    assert pack._get_enforcement_level(inherits) == inherited
    assert pack._get_enforcement_level(own) == EnforcementLevel.MANDATORY


def test_a_level_the_cli_started_the_pack_with_is_kept(servicer: type) -> None:
    environ = {"PULUMI_CONFIG": json.dumps({"gpushare:protectPools": "false"})}
    engine_config.take_stack_config_from_configure_stack(environ)
    pack, inherits, _ = _pack_servicer()
    servicer.ConfigureStack(pack, analyzer_pb2.AnalyzerStackConfigureRequest(stack="s", config={}), None)
    assert pack._get_enforcement_level(inherits) == EnforcementLevel.MANDATORY
