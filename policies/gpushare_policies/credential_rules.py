"""TencentCloud credentials must not sit in plain text: not in the stack file, not in the program.

What a pack can see: `pulumi_policy` unwraps secrets before `validate` (pulumi_policy/deserialize.py,
`deserialize_properties(..., proxy_secrets=False)` for Analyze and AnalyzeStack), so a provider's
`secretKey` looks the same whether it was a secret or not. And the Python SDK of the provider marks
`secret_key` secret itself and copies `TENCENTCLOUD_SECRET_KEY` from the environment into the provider's
inputs (tencentcloud_iac_pulumi/provider.py). So the rule asks where a credential came from instead:
- a value equal to the environment variable the pack also sees came from the environment: fine;
- a value equal to the stack config's `tencentcloud:<name>`: fine if that key is a secret (checked below);
- any other value was typed into the program (or read from some plain file): a violation.
Stack config: every key gpushare requires to be secret (`gpushare.stack.credentials.SECRET_KEYS`) must be a
secret key (see policies/gpushare_policies/settings.py for where the pack learns which keys are secret; when it cannot
tell, it does not guess).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare.resource_types import TENCENTCLOUD_PROVIDER
from gpushare.stack.credentials import SECRET_KEYS
from gpushare.stack.loading import stack_file_name
from gpushare_policies.props import Resource, from_engine, is_secret_envelope, raw_item, text
from gpushare_policies.settings import current_stack

_PROVIDER_NAMESPACE: Final = "tencentcloud"
# Provider input -> the environment variable the provider reads it from (TENCENTCLOUD_SECRET_KEY, ...).
CREDENTIAL_INPUTS: Final = {
    key.split(":", 1)[1]: "TENCENTCLOUD_" + re.sub(r"([A-Z])", r"_\1", key.split(":", 1)[1]).upper()
    for key in sorted(SECRET_KEYS)
    if key.startswith(f"{_PROVIDER_NAMESPACE}:")
}


def _tencentcloud_providers(args: StackValidationArgs) -> Iterator[tuple[Mapping[str, Any], Resource]]:
    """Every TencentCloud provider: registered ones, and the provider each resource names (the engine
    attaches its inputs to every resource, so a driver that leaves providers out still shows them)."""
    seen: set[str] = set()
    candidates = [(r.resource_type, r.urn, r.name, r.props) for r in args.resources]
    candidates += [
        (r.provider.resource_type, r.provider.urn, r.provider.name, r.provider.props)
        for r in args.resources
        if r.provider is not None
    ]
    for resource_type, urn, name, props in candidates:
        if resource_type == TENCENTCLOUD_PROVIDER and urn not in seen:
            seen.add(urn)
            yield props, from_engine(resource_type, urn, name, props)


def _check_credentials(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    if stack.secret_keys is not None:
        for key in sorted(SECRET_KEYS & set(stack.values)):
            if key not in stack.secret_keys:
                report_violation(
                    f"stack config {key} is stored in plain text in {stack_file_name(stack.stack)}; set it "
                    f"with `pulumi config set --secret {key} ...`, or drop it and use the environment.",
                    None,
                )
    for raw_props, provider in _tencentcloud_providers(args):
        for name, env_var in CREDENTIAL_INPUTS.items():
            value = text(provider.props.get(name))
            if (
                value is None
                or is_secret_envelope(raw_item(raw_props, name))
                or value == os.environ.get(env_var)
            ):
                continue
            config_key = f"{_PROVIDER_NAMESPACE}:{name}"
            if value == stack.values.get(config_key):
                continue  # from the stack config: its secrecy is checked above
            report_violation(
                f"provider {provider.name}: `{name}` is set in the program, neither from {env_var} nor from "
                f"the stack config {config_key}, so the credential sits in plain text in the code or a file "
                f"it reads. Remove it and export {env_var} (or `pulumi config set --secret {config_key}`).",
                provider.urn,
            )


NO_PLAINTEXT_CLOUD_SECRETS: Final = StackValidationPolicy(
    name="no-plaintext-cloud-secrets",
    description="TencentCloud credentials come from the environment or secret stack config, "
    "never from plain text.",
    validate=_check_credentials,
    remediation_steps="Store the credential as a secret (pulumi config set --secret tencentcloud:<key> ...) or leave it "
    "to the environment (TENCENTCLOUD_SECRET_ID/KEY); never type it into the program.",
)

CREDENTIAL_POLICIES: Final = (NO_PLAINTEXT_CLOUD_SECRETS,)
