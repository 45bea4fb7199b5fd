"""TencentCloud credentials must not sit in plain text: not in the stack file, not in the program.

What a pack can see: `pulumi_policy` unwraps secrets before `validate` (pulumi_policy/deserialize.py,
`deserialize_properties(..., proxy_secrets=False)` for Analyze and AnalyzeStack), so a provider's
`secretKey` looks the same whether it was a secret or not. And the Python SDK of the provider marks
`secret_key` secret itself and copies `TENCENTCLOUD_SECRET_KEY` from the environment into the provider's
inputs (tencentcloud_iac_pulumi/provider.py). So the rule asks where a credential came from instead:
- a value equal to the environment variable the pack also sees came from the environment: fine;
- a value equal to the stack config's `tencentcloud:<name>`: fine if that key is a secret (checked below);
- a value equal to any other stack config value (another key, an ESC environment's value) came from the
  config, not from the code: fine;
- a value that reached the engine as a secret (a vault's, `pulumi.Output.secret`, ...) is never a finding,
  whatever key it came from. Analyze and AnalyzeStack see no secrets, but Remediate does (the SDK keeps
  `Secret` markers there), and the engine calls it for every resource first: the policy
  `credential-secrecy-noted` (level remediate, it changes nothing) notes which credential inputs of each
  TencentCloud provider arrived as secrets. Configured to another level, nothing is noted and only the
  value checks above decide.
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

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.secret import Secret

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


# Provider URN -> its credential inputs that reached the engine as secrets (noted in Remediate).
_SECRET_CREDENTIALS: dict[str, frozenset[str]] = {}


def _secret_inputs(props: Any) -> frozenset[str]:
    """The top-level inputs of `props` (Remediate's proxy) that are `Secret`s. The proxies unwrap secrets
    on access; their `"__target"` item is how pulumi_policy itself reaches the marked values (serialize)."""
    target = props
    for _ in range(2):  # the unknown-checking proxy around the secrets-preserving one
        try:
            target = target["__target"]
        except (KeyError, TypeError):
            break
    if not isinstance(target, Mapping):
        return frozenset()
    return frozenset(name for name, value in target.items() if isinstance(value, Secret))


def _note_secret_credentials(args: ResourceValidationArgs) -> None:
    if args.resource_type == TENCENTCLOUD_PROVIDER:
        _SECRET_CREDENTIALS[args.urn] = _secret_inputs(args.props) & set(CREDENTIAL_INPUTS)
    return None  # changes nothing


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
    config_values = {text(value) for value in stack.values.values()} - {None}
    for raw_props, provider in _tencentcloud_providers(args):
        secret = _SECRET_CREDENTIALS.get(provider.urn, frozenset())
        for name, env_var in CREDENTIAL_INPUTS.items():
            value = text(provider.props.get(name))
            if (
                value is None
                or name in secret
                or is_secret_envelope(raw_item(raw_props, name))
                or value == os.environ.get(env_var)
            ):
                continue
            config_key = f"{_PROVIDER_NAMESPACE}:{name}"
            if value in config_values:
                continue  # from the stack config (this key's secrecy is checked above), or another key
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

CREDENTIAL_SECRECY_NOTED: Final = ResourceValidationPolicy(
    name="credential-secrecy-noted",
    description="Notes which TencentCloud provider credentials reach the engine as secrets, for "
    "no-plaintext-cloud-secrets (changes nothing, reports nothing).",
    validate=lambda args, report_violation: None,
    remediate=_note_secret_credentials,
    enforcement_level=EnforcementLevel.REMEDIATE,
)

CREDENTIAL_POLICIES: Final = (CREDENTIAL_SECRECY_NOTED, NO_PLAINTEXT_CLOUD_SECRETS)
