"""The `tencentcloud:` config keys the pinned TencentCloud provider (tencentcloud-iac-pulumi 0.2.3) reads.

Written down from the SDK's `ProviderArgs` (its property names on the wire, `config/vars.py` reads the same
keys); `tests/test_tencentcloud_keys.py` derives the list from the installed SDK again and fails when
an upgrade adds, drops or retypes one. Pure data: the stack loader refuses any other `tencentcloud:` key
with the closest known one, and the program hands every key a stack sets to its explicit provider.
"""

from __future__ import annotations

from typing import Literal

# How a key's config string is read: as it is, as a boolean, or as JSON (a list or an object; the SDK
# serialises those to JSON again for the bridged provider, keeping the camelCase keys inside).
ValueKind = Literal["string", "bool", "json"]

# config key -> (the Provider keyword argument, how its value is read)
PROVIDER_KEYS: dict[str, tuple[str, ValueKind]] = {
    "allowedAccountIds": ("allowed_account_ids", "json"),
    "assumeRole": ("assume_role", "json"),
    "assumeRoleWithSaml": ("assume_role_with_saml", "json"),
    "assumeRoleWithWebIdentity": ("assume_role_with_web_identity", "json"),
    "camRoleName": ("cam_role_name", "string"),
    "cosDomain": ("cos_domain", "string"),
    "domain": ("domain", "string"),
    "enablePodOidc": ("enable_pod_oidc", "bool"),
    "forbiddenAccountIds": ("forbidden_account_ids", "json"),
    "mfaCertification": ("mfa_certification", "json"),
    "profile": ("profile", "string"),
    "protocol": ("protocol", "string"),
    "region": ("region", "string"),
    "secretId": ("secret_id", "string"),
    "secretKey": ("secret_key", "string"),
    "securityToken": ("security_token", "string"),
    "sharedCredentialsDir": ("shared_credentials_dir", "string"),
}

NAMESPACE = "tencentcloud"


def known_keys() -> list[str]:
    """Every `tencentcloud:<key>` the provider reads, sorted."""
    return [f"{NAMESPACE}:{key}" for key in sorted(PROVIDER_KEYS)]
