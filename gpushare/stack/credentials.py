"""Credentials in a stack file: the keys that must be secrets, and credentials under a key the
provider does not read (a misspelled `tencentcloud:` key, a SecretId-shaped value in plain text)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpushare.stack import kube_syntax
from gpushare.stack.model import PROJECT

# Config keys that must only ever arrive as `secure:` values.
SECRET_KEYS = frozenset(
    {"tencentcloud:secretId", "tencentcloud:secretKey", "tencentcloud:securityToken", f"{PROJECT}:kubeconfig"}
)


# TencentCloud SecretIds: "AKID" and 32 letters and digits.
_is_secret_id = kube_syntax.anchored(r"AKID[A-Za-z0-9]{32}")
_CREDENTIAL_WORDS = ("secret", "token", "password", "credential", "accesskey", "apikey", "akid")


def _meant_secret_key(name: str) -> str | None:
    """The credential key a `tencentcloud:` key name probably meant (`secret_id` -> secretId), if any."""
    plain = re.sub(r"[^a-z0-9]", "", name.lower())
    if not any(word in plain for word in _CREDENTIAL_WORDS):
        return None
    if "token" in plain:
        return "tencentcloud:securityToken"
    return "tencentcloud:secretId" if plain.endswith("id") or "akid" in plain else "tencentcloud:secretKey"


def _credential_problems(values: Mapping[str, Any], secrets: set[str], source: str) -> list[str]:
    """Credentials under a misspelled `tencentcloud:` key are ignored by the provider and sit in the stack
    file in plain text; a SecretId-shaped value in plain text is refused under any `tencentcloud:` key."""
    problems = []
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace != "tencentcloud" or key in SECRET_KEYS:
            continue
        meant = _meant_secret_key(name)
        value = values[key]
        if meant is None and key not in secrets and isinstance(value, str) and _is_secret_id(value):
            meant = "tencentcloud:secretId"
        if meant is not None:
            state = "a secret" if key in secrets else "a credential in plain text"
            problems.append(
                f"{source}: {key}: looks like {state} under a key the provider does not read; probably meant "
                f"{meant} (pulumi config rm {key}; pulumi config set --secret {meant} ...)"
            )
    return problems
