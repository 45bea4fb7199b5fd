"""policies/gpushare_policies/settings.py: how the pack reads the stack the CLI gives it (PULUMI_STACK,
PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS), met through the policies that use it.

The resource is prod's ConfigMap kube-system/time-slicing-config from the real program (tests/test_policies.py's
helpers), key l20 set to 10 replicas: floor(0.9 x 46068 MiB / 4621 MiB) = floor(8.97) = 8 allowed.
"""

from __future__ import annotations

import copy
import json

import pytest
from test_policies import (
    Program,
    Res,
    _isolated_environment,
    messages_of,
    prod,
    provider,
    replicas_text,
    stack_config_env,
    with_data,
)

__all__ = ["_isolated_environment", "prod"]  # fixtures used by name below

CM = "ConfigMap kube-system/time-slicing-config"
ABOVE_TUNED = (
    f'{CM} key "l20": nvidia.com/gpu replicas 10 exceeds the tuned maximum 8 = floor(0.9 x 46068 MiB L20 / '
    "4621 MiB measured, stack pool l20). Time-slicing does not isolate memory: more replicas than fit run the "
    "GPU out of memory."
)


def _unannotated_l20_at_ten(prod: Program) -> Res:
    """No gpushare.io/tuning-* annotations: only the stack config can tell what l20's replicas rest on."""
    cm = with_data(prod.get("gpushare-config-configmap"), "l20", replicas_text(10))
    cm.props["metadata"] = copy.deepcopy(cm.props["metadata"])
    del cm.props["metadata"]["annotations"]
    return cm


def test_without_pulumi_stack_the_config_still_tunes(prod: Program, monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver that passes PULUMI_CONFIG but no PULUMI_STACK: the config alone is the basis."""
    monkeypatch.setenv("PULUMI_CONFIG", stack_config_env("prod"))
    assert messages_of("time-slicing-replicas-tuned", [_unannotated_l20_at_ten(prod)]) == [ABOVE_TUNED]
    assert messages_of("judged-without-stack-config", [_unannotated_l20_at_ten(prod)]) == []


UNJUDGED = "; ".join(  # every key: the annotations are gone
    f'the tuned maximum of {CM} key "{key}" (nvidia.com/gpu): which GPU it serves and the largest process '
    "measured on it are unknown"
    for key in ("any", "l20", "t4")
)


@pytest.mark.parametrize(
    ("pulumi_config", "problem"),
    [
        (None, "PULUMI_CONFIG is empty"),
        ("{}", "PULUMI_CONFIG is empty"),
        ("[1]", "PULUMI_CONFIG is not a JSON object"),
        ('"gpushare:pools"', "PULUMI_CONFIG is not a JSON object"),
        (
            '{"tencentcloud:region": "ap-singapore"}',
            "The stack has no gpushare: config (a program gpushare did not write)",
        ),
    ],
)
def test_a_stack_config_the_pack_cannot_use_is_named_in_the_advisory(
    prod: Program, monkeypatch: pytest.MonkeyPatch, pulumi_config: str | None, problem: str
) -> None:
    monkeypatch.setenv("PULUMI_STACK", "prod")
    if pulumi_config is not None:
        monkeypatch.setenv("PULUMI_CONFIG", pulumi_config)
    assert messages_of("judged-without-stack-config", [_unannotated_l20_at_ten(prod)]) == [
        f"{problem}: judged by what its resources carry. Not judged: {UNJUDGED}. A stack with gpushare: config "
        "(pools with measurements), or a gpushare.io/tuning-<key> annotation on the config, lets the pack "
        "judge these too."
    ]


def test_config_that_is_not_json_is_named_with_the_parsers_reason(
    prod: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", "{gpushare:pools: []}")
    (message,) = messages_of("judged-without-stack-config", [_unannotated_l20_at_ten(prod)])
    assert message.startswith("PULUMI_CONFIG is not JSON: Expecting property name enclosed in double quotes")


def test_an_invalid_gpushare_config_is_named_and_tunes_nothing(
    prod: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = json.loads(stack_config_env("prod"))
    config["gpushare:pools"] = json.dumps([{"name": "l20"}])
    monkeypatch.setenv("PULUMI_STACK", "prod")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))
    invalid = "stack config invalid: Pulumi.prod.yaml: gpushare:pools[0].gpu: required\n"
    (message,) = messages_of("judged-without-stack-config", [_unannotated_l20_at_ten(prod)])
    assert message.startswith("S" + invalid[1:])
    untuned = messages_of("time-slicing-replicas-tuned", [_unannotated_l20_at_ten(prod)])
    assert [m.split(": ", 1)[0] for m in untuned] == [f'{CM} key "{key}"' for key in ("any", "l20", "t4")]
    assert untuned[1].startswith(
        f"{CM} key \"l20\": nvidia.com/gpu replicas 10 is not tuned: no stack config to look up pool 'l20' ({invalid}"
    )


# --------------------------------------------------------------------------------------------------------
# PULUMI_CONFIG_SECRET_KEYS: which keys are secret, when something tells

PLAIN_SECRET_KEY = (
    "stack config tencentcloud:secretKey is stored in plain text in Pulumi.prod.yaml; set it with "
    "`pulumi config set --secret tencentcloud:secretKey ...`, or drop it and use the environment."
)


@pytest.mark.parametrize(
    ("secret_keys", "expected"),
    [
        ('["tencentcloud:secretKey"]', []),  # the CLI says it is a secret
        ("[]", [PLAIN_SECRET_KEY]),  # the CLI lists no secrets: the value is plain
        ('["gpushare:kubeconfig"]', [PLAIN_SECRET_KEY]),
        (None, []),  # nothing tells: no verdict
        ("not json", []),
        ('{"tencentcloud:secretKey": true}', []),  # not a list: nothing tells
    ],
)
def test_a_secret_key_is_plain_only_when_the_cli_says_which_keys_are_secret(
    monkeypatch: pytest.MonkeyPatch, secret_keys: str | None, expected: list[str]
) -> None:
    config = json.loads(stack_config_env("prod"))
    config["tencentcloud:secretKey"] = "a-key-typed-into-the-stack"
    monkeypatch.setenv("PULUMI_STACK", "prod")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))
    if secret_keys is not None:
        monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", secret_keys)
    assert messages_of("no-plaintext-cloud-secrets", []) == expected


def test_a_cloud_credential_from_the_stack_config_stays_the_string_the_cli_gave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only `gpushare:` values are JSON; a secret id of digits is still the string the provider receives."""
    config = json.loads(stack_config_env("prod"))
    config["tencentcloud:secretId"] = "100012345678"
    monkeypatch.setenv("PULUMI_STACK", "prod")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", '["tencentcloud:secretId"]')
    from_config = provider(secretId="100012345678")
    assert messages_of("no-plaintext-cloud-secrets", [from_config]) == []
    # The near miss: a value the stack config does not hold was typed into the program.
    (typed,) = messages_of("no-plaintext-cloud-secrets", [provider(secretId="100012345679")])
    assert typed.startswith("provider tencentcloud: `secretId` is set in the program, neither from ")
