"""On a program without `gpushare:` config the pack advises instead of blocking, and a credential that
reaches the engine as a secret is never a finding, whatever key it came from (no-plaintext-cloud-secrets).

The pack's level is read once at start from PULUMI_CONFIG (`pack_enforcement_level`); the secrecy of a
provider's inputs is what Remediate receives (the engine's wire form, secrets marked) before the stack
policy runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy
from test_policies import _isolated_environment, messages_of, provider, stack_config_env

from gpushare.resource_types import TENCENTCLOUD_PROVIDER
from gpushare_policies import credential_rules
from gpushare_policies.props import SECRET_SIGNATURE, SECRET_SIGNATURE_KEY
from gpushare_policies.settings import pack_enforcement_level

__all__ = ["_isolated_environment"]  # a fixture used by name

TYPED = (
    "provider tencentcloud: `secretKey` is set in the program, neither from TENCENTCLOUD_SECRET_KEY nor from "
    "the stack config tencentcloud:secretKey, so the credential sits in plain text in the code or a file it "
    "reads. Remove it and export TENCENTCLOUD_SECRET_KEY (or `pulumi config set --secret tencentcloud:secretKey`)."
)


@pytest.mark.parametrize(
    ("environ", "level"),
    [
        ({}, EnforcementLevel.MANDATORY),  # `pulumi policy publish`: no stack, the published levels
        ({"PULUMI_CONFIG": "{}"}, EnforcementLevel.ADVISORY),  # a stack without any config
        ({"PULUMI_CONFIG": ""}, EnforcementLevel.ADVISORY),
        (
            {"PULUMI_CONFIG": '{"gpu-team:replicas": "10", "tencentcloud:region": "ap-singapore"}'},
            EnforcementLevel.ADVISORY,
        ),
        ({"PULUMI_CONFIG": '{"gpushare:cluster": "{}"}'}, EnforcementLevel.MANDATORY),  # even if invalid
        ({"PULUMI_CONFIG": "not json"}, EnforcementLevel.MANDATORY),
    ],
)
def test_the_pack_advises_on_programs_without_gpushare_config(
    environ: dict[str, str], level: EnforcementLevel
) -> None:
    assert pack_enforcement_level(environ) == level


def test_prods_config_keeps_the_pack_mandatory() -> None:
    assert pack_enforcement_level({"PULUMI_CONFIG": stack_config_env("prod")}) == EnforcementLevel.MANDATORY


def _use_foreign_config(monkeypatch: pytest.MonkeyPatch, config: dict[str, str]) -> None:
    monkeypatch.setenv("PULUMI_STACK", "gpu-team-prod")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))


def test_a_credential_from_another_config_key_is_not_typed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    # An ESC environment or the program's own key (`gpu-team:tcSecretKey`) hands the value to the program.
    _use_foreign_config(monkeypatch, {"gpu-team:tcSecretKey": "from-esc"})
    assert messages_of("no-plaintext-cloud-secrets", [provider(secretKey="from-esc")]) == []
    assert messages_of("no-plaintext-cloud-secrets", [provider(secretKey="typed-in")]) == [TYPED]


def _remediate_args(props: dict[str, Any]) -> ResourceValidationArgs:
    """What Remediate hands a policy: the wire properties deserialized with their secrets marked."""
    struct = struct_pb2.Struct()
    struct.update(props)
    marked = deserialize_properties(json_format.MessageToDict(struct), True)
    urn = "urn:pulumi:prod::gpushare::pulumi:providers:tencentcloud::tencentcloud"
    return ResourceValidationArgs(
        TENCENTCLOUD_PROVIDER, unknown_checking_proxy(marked), urn, "tencentcloud", None, None, {}, {}
    )


def test_a_credential_that_reached_the_engine_as_a_secret_is_never_a_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use_foreign_config(monkeypatch, {})
    secret = {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": "from-a-vault"}
    credential_rules.CREDENTIAL_SECRECY_NOTED.remediate(  # type: ignore[misc]
        _remediate_args({"region": "ap-singapore", "secretKey": secret, "secretId": "AKIDtyped"})
    )
    try:
        # Analyze then sees the values unwrapped: only the plain one is a finding.
        found = messages_of(
            "no-plaintext-cloud-secrets", [provider(secretKey="from-a-vault", secretId="AKIDtyped")]
        )
        assert found == [TYPED.replace("secretKey", "secretId").replace("SECRET_KEY", "SECRET_ID")]
    finally:
        credential_rules._SECRET_CREDENTIALS.clear()
    # Nothing noted: the same secretKey is judged by its value again.
    found = messages_of("no-plaintext-cloud-secrets", [provider(secretKey="from-a-vault")])
    assert found == [TYPED]


def test_the_secrecy_note_changes_nothing() -> None:
    args = _remediate_args({"secretKey": {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": "k"}})
    try:
        assert credential_rules.CREDENTIAL_SECRECY_NOTED.remediate(args) is None  # type: ignore[misc]
        assert {args.urn: frozenset({"secretKey"})} == credential_rules._SECRET_CREDENTIALS
    finally:
        credential_rules._SECRET_CREDENTIALS.clear()
