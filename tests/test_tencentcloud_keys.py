"""Every `tencentcloud:` key the pinned provider reads reaches the explicit provider (secrets as secrets);
any other `tencentcloud:` key is refused with the closest known one, as `gpushare:` keys are.

The key list is derived here from the installed SDK (tencentcloud-iac-pulumi 0.2.3, `ProviderArgs`: each
property's wire name and its annotation), not from gpushare's own table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import tencentcloud_iac_pulumi as tencentcloud
from conftest import PROJECT_DIR, stack_file

from components.providers import tencentcloud_provider
from gpushare import resource_types
from gpushare.errors import ConfigError
from gpushare.offline.mock_run import run_function
from gpushare.stack.loading import load_stack, load_stack_file
from gpushare.stack.tencentcloud_keys import PROVIDER_KEYS


def _sdk_keys() -> dict[str, tuple[str, str]]:
    keys = {}
    for attribute, value in vars(tencentcloud.ProviderArgs).items():
        if not isinstance(value, property):
            continue
        annotation = str(value.fget.__annotations__["return"])  # type: ignore[union-attr]
        if "Sequence" in annotation or "Args" in annotation:
            kind = "json"
        elif "bool" in annotation:
            kind = "bool"
        else:
            kind = "string"
        keys[value.fget._pulumi_name] = (attribute, kind)  # type: ignore[union-attr]
    return keys


def test_the_key_table_is_the_pinned_providers_arguments() -> None:
    sdk = _sdk_keys()
    assert len(sdk) == 17  # counted in tencentcloud_iac_pulumi 0.2.3's provider.py
    assert sdk == PROVIDER_KEYS


def _stack_with(tmp_path: Path, extra: str) -> Path:
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml"):
        shutil.copy(PROJECT_DIR / name, tmp_path / name)
    path = tmp_path / "Pulumi.prod.yaml"
    text = path.read_text()
    path.write_text(text.replace("config:\n", f"config:\n{extra}", 1))
    return path


def test_a_misspelt_tencentcloud_key_is_refused_with_the_closest_known_key(tmp_path: Path) -> None:
    _stack_with(tmp_path, "  tencentcloud:regoin: ap-shanghai\n")
    with pytest.raises(ConfigError) as raised:
        load_stack(tmp_path, "prod")  # what plan, render, check and verify read a stack through
    assert str(raised.value) == (
        "Pulumi.prod.yaml: tencentcloud:regoin: unknown key; did you mean 'tencentcloud:region'? (the "
        "TencentCloud provider reads: allowedAccountIds, assumeRole, assumeRoleWithSaml, "
        "assumeRoleWithWebIdentity, camRoleName, cosDomain, domain, enablePodOidc, forbiddenAccountIds, "
        "mfaCertification, profile, protocol, region, secretId, secretKey, securityToken, sharedCredentialsDir)"
    )


def test_an_unknown_key_far_from_every_known_one_is_refused_without_a_guess(tmp_path: Path) -> None:
    _stack_with(tmp_path, "  tencentcloud:zzz: 1\n")
    with pytest.raises(ConfigError, match=r"^Pulumi.prod.yaml: tencentcloud:zzz: unknown key \(the Tencent"):
        load_stack(tmp_path, "prod")


def test_a_misspelt_credential_is_named_once_by_the_credential_check(tmp_path: Path) -> None:
    _stack_with(tmp_path, "  tencentcloud:secret_key: abc\n")
    with pytest.raises(ConfigError) as raised:
        load_stack(tmp_path, "prod")
    assert str(raised.value).count("tencentcloud:secret_key") == 2  # the key, and `pulumi config rm` of it
    assert "unknown key" not in str(raised.value)


def test_the_stack_records_which_provider_keys_it_sets(tmp_path: Path) -> None:
    path = _stack_with(tmp_path, "  tencentcloud:profile: ci\n  tencentcloud:domain: tencentcloudapi.com\n")
    assert load_stack_file(path).provider_keys == ("domain", "profile")
    assert load_stack_file(stack_file("prod")).provider_keys == ()


def _provider_inputs(config: dict[str, Any], secret_keys: list[str]) -> tuple[dict[str, Any], list[str]]:
    prod = load_stack_file(stack_file("prod"))
    keys = tuple(sorted(key.split(":", 1)[1] for key in config if key != "tencentcloud:region"))
    stack = prod.model_copy(update={"provider_keys": keys})
    strings = {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    run = run_function(
        lambda: tencentcloud_provider(stack),
        project="gpushare",
        stack="test",
        config=strings,
        secret_keys=secret_keys,
    )
    [provider] = [r for r in run.resources if r.type == resource_types.TENCENTCLOUD_PROVIDER]
    return provider.inputs, provider.secret_input_paths


def test_every_provider_key_reaches_the_explicit_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    role = {
        "roleArn": "qcs::cam::uin/100000000001:roleName/gpushare",
        "sessionName": "ci",
        "sessionDuration": 3600,
    }
    config = {
        "tencentcloud:profile": "ci",
        "tencentcloud:sharedCredentialsDir": "/home/ci/.tccli",
        "tencentcloud:domain": "internal.tencentcloudapi.com",
        "tencentcloud:protocol": "HTTPS",
        "tencentcloud:camRoleName": "gpushare-node",
        "tencentcloud:cosDomain": "cos.internal",
        "tencentcloud:enablePodOidc": "true",
        "tencentcloud:allowedAccountIds": ["100000000001"],
        "tencentcloud:assumeRole": role,
    }
    inputs, secret_paths = _provider_inputs(config, secret_keys=["tencentcloud:assumeRole"])
    assert inputs == {
        "region": "ap-singapore",
        "profile": "ci",
        "sharedCredentialsDir": "/home/ci/.tccli",
        "domain": "internal.tencentcloudapi.com",
        "protocol": "HTTPS",
        "camRoleName": "gpushare-node",
        "cosDomain": "cos.internal",
        # the SDK hands lists, objects and booleans to the bridged provider as JSON strings
        "enablePodOidc": "true",
        "allowedAccountIds": '["100000000001"]',
        "assumeRole": json.dumps(role),
    }
    assert secret_paths == ["assumeRole"]


def test_plan_refuses_a_misspelt_tencentcloud_key_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpushare.cli.main import main

    _stack_with(tmp_path, "  tencentcloud:profil: ci\n")
    assert main(["plan", "--stack", "prod", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "Pulumi.prod.yaml: tencentcloud:profil: unknown key; did you mean 'tencentcloud:profile'? "
    )
    assert err.count("\n") == 1
