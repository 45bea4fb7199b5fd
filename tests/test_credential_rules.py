"""policies/gpushare_policies/credential_rules.py: no-plaintext-cloud-secrets judges every credential input of
a provider, past one that comes from the stack config.

The provider is hand-built (tests/test_policies.py's `provider`: the program never types a credential in);
the stack config is prod's with TencentCloud credentials added, as `pulumi config set --secret` stores them.
"""

from __future__ import annotations

import json

import pytest
from test_policies import _isolated_environment, messages_of, provider, stack_config_env

__all__ = ["_isolated_environment"]  # a fixture used by name below

SECRET_ID = "AKIDexampleexampleexampleexample"  # the shape of a TencentCloud SecretId, not a real one


def _typed(name: str, env_var: str) -> str:
    return (
        f"provider tencentcloud: `{name}` is set in the program, neither from {env_var} nor from the stack "
        f"config tencentcloud:{name}, so the credential sits in plain text in the code or a file it reads. "
        f"Remove it and export {env_var} (or `pulumi config set --secret tencentcloud:{name}`)."
    )


@pytest.fixture
def secret_id_in_config(monkeypatch: pytest.MonkeyPatch) -> None:
    config = json.loads(stack_config_env("prod"))
    config["tencentcloud:secretId"] = SECRET_ID
    monkeypatch.setenv("PULUMI_STACK", "prod")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", '["tencentcloud:secretId"]')


@pytest.mark.usefixtures("secret_id_in_config")
def test_a_typed_key_after_a_secret_id_from_the_config_is_reported() -> None:
    # Inputs in order: secretId (from the secret stack config: fine), secretKey (typed in), securityToken.
    found = messages_of("no-plaintext-cloud-secrets", [provider(secretId=SECRET_ID, secretKey="typed-in")])
    assert found == [_typed("secretKey", "TENCENTCLOUD_SECRET_KEY")]


@pytest.mark.usefixtures("secret_id_in_config")
def test_a_key_from_the_environment_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "from-the-environment")
    monkeypatch.setenv("TENCENTCLOUD_SECURITY_TOKEN", "token-from-the-environment")
    resources = [
        provider(
            secretId=SECRET_ID, secretKey="from-the-environment", securityToken="token-from-the-environment"
        )
    ]
    assert messages_of("no-plaintext-cloud-secrets", resources) == []
    # The near miss: the same token typed in, beside a key the environment gives.
    resources = [provider(secretId=SECRET_ID, secretKey="from-the-environment", securityToken="typed-in")]
    assert messages_of("no-plaintext-cloud-secrets", resources) == [
        _typed("securityToken", "TENCENTCLOUD_SECURITY_TOKEN")
    ]
