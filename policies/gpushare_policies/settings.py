"""What the rules know besides the resources: the stack config and the pack's own policy config.

The stack config reaches a pack the way it reaches the program: the CLI puts the whole stack config
(`namespace:key` -> string, secrets in plain text) in the `PULUMI_CONFIG` environment variable, and
`pulumi.policy`'s `__main__` copies it into the runtime config. The rules read the variable themselves
and validate it with the program's own model (`gpushare.stack.loading.from_config_values`), so a value
means the same to the pack as to the program; reading it from the environment also keeps the rules
testable without a Pulumi runtime.

Which config keys are secrets does not reach a pack (the SDK drops `ConfigureStack.config_secret_keys`),
so `secret_keys` comes from `PULUMI_CONFIG_SECRET_KEYS` when a driver sets it, else it is unknown. The
pack reads nothing but what the analyzer gives it (resources, this environment, the policy config): it is
published alone, and judges stacks whose files it never sees.

A stack with no `gpushare:` config at all (another team's program) is judged by what its resources carry:
`StackFacts.config` is None and `problem` says why, for the messages of what cannot be judged.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ReportViolation

from gpushare.errors import GpushareError
from gpushare.stack.credentials import SECRET_KEYS
from gpushare.stack.loading import from_config_values, stack_file_name
from gpushare.stack.model import PROJECT, Pool, Sharing, StackConfig
from gpushare.tuning import DEFAULT_CEILING

CEILING_PROPERTY: Final = "utilizationCeiling"
MAX_AGE_PROPERTY: Final = "maxMeasurementAgeDays"
NO_GPUSHARE_CONFIG: Final = f"the stack has no {PROJECT}: config (a program gpushare did not write)"
DEFAULT_MAX_AGE_DAYS: Final[int] = Sharing.model_fields["max_measurement_age_days"].default

# Policy config defaults match the stack's defaults; the CLI fills them in, direct calls get them here.
TUNING_CONFIG_SCHEMA: Final = PolicyConfigSchema(
    properties={
        CEILING_PROPERTY: {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "default": DEFAULT_CEILING,
            "description": "Share of a GPU's (or MIG instance's) memory the replicas may fill.",
        }
    }
)
MEASUREMENT_AGE_CONFIG_SCHEMA: Final = PolicyConfigSchema(
    properties={
        MAX_AGE_PROPERTY: {
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT_MAX_AGE_DAYS,
            "description": "Oldest measuredAt (days before today) a replica count may rest on.",
        }
    }
)


def refusing_unknown_properties(
    schema: PolicyConfigSchema,
    validate: Callable[[Any, ReportViolation], None],
    applies: Callable[[Any], bool] = lambda args: True,
) -> Callable[[Any, ReportViolation], None]:
    """`validate`, first reporting policy-config properties `schema` does not declare.

    The CLI checks `--policy-pack-config` against each policy's schema, but builds that schema from the
    declared properties and `required` only (pkg/resource/analyzer/config.go `convertSchema`: no
    `additionalProperties`), so a wrong type is refused before any analysis and a misspelt key is not: it
    would silently leave the default in force. The policy reports it instead, naming the key, on each
    resource it `applies` to (a resource policy is called for every resource of the stack).
    """
    declared = sorted(schema.properties or {})

    def checked(args: Any, report_violation: ReportViolation) -> None:
        for key in sorted(set(args.get_config()) - set(declared)) if applies(args) else ():
            report_violation(
                f"policy config: unknown property {key!r}; this policy takes {', '.join(declared)} "
                "(a misspelt key would leave the default in force). Fix the --policy-pack-config file.",
                None,
            )
        validate(args, report_violation)

    return checked


def configured_ceiling(policy_config: Mapping[str, Any]) -> float:
    value = policy_config.get(CEILING_PROPERTY, DEFAULT_CEILING)
    return float(value) if isinstance(value, int | float) and 0 < value <= 1 else DEFAULT_CEILING


def configured_max_age_days(policy_config: Mapping[str, Any]) -> int:
    value = policy_config.get(MAX_AGE_PROPERTY, DEFAULT_MAX_AGE_DAYS)
    # Struct numbers arrive as doubles (180.0).
    return int(value) if isinstance(value, int | float) and value >= 1 else DEFAULT_MAX_AGE_DAYS


@dataclass(frozen=True)
class StackFacts:
    stack: str
    values: Mapping[str, Any]
    """The stack config, `gpushare:` values decoded from their JSON strings."""
    config: StackConfig | None
    problem: str | None
    """Why `config` is None (no or invalid stack config), for messages."""
    secret_keys: frozenset[str] | None
    """Config keys known to be secrets; None when nothing tells."""

    def pool(self, name: str) -> Pool | None:
        if self.config is None:
            return None
        return next((pool for pool in self.config.pools if pool.name == name), None)

    def describe_missing_pool(self, name: str) -> str:
        if self.config is None:
            return f"no stack config to look up pool {name!r} ({self.problem})"
        return f"no pool {name!r} in the stack config"


def pack_enforcement_level(environ: Mapping[str, str]) -> EnforcementLevel:
    """The pack's own level, for every policy that sets none: mandatory for a gpushare stack, advisory on a
    program gpushare did not write. The CLI hands an analysed stack's config over in PULUMI_CONFIG (`{}`
    when it has none); a stack whose config names no `gpushare:` key is another team's, judged by what its
    resources carry, so its findings advise rather than block. Without PULUMI_CONFIG at all (`pulumi policy
    publish` asks for the policies without any stack) the levels are the ones published: mandatory. A
    policy config (`--policy-pack-config`, a policy group's) still sets any level it names."""
    config_json = environ.get("PULUMI_CONFIG")
    if config_json is None:
        return EnforcementLevel.MANDATORY
    try:
        config = json.loads(config_json) if config_json.strip() else {}
    except ValueError:
        return EnforcementLevel.MANDATORY  # unreadable: current_stack() reports it; do not go soft
    if isinstance(config, dict) and not any(str(key).startswith(f"{PROJECT}:") for key in config):
        return EnforcementLevel.ADVISORY
    return EnforcementLevel.MANDATORY


def current_stack() -> StackFacts:
    """The stack the pack runs for, from the environment the CLI gives it (cached per environment)."""
    return _load(
        os.environ.get("PULUMI_STACK", ""),
        os.environ.get("PULUMI_CONFIG", ""),
        os.environ.get("PULUMI_CONFIG_SECRET_KEYS"),
    )


@functools.lru_cache(maxsize=8)
def _load(stack: str, config_json: str, secret_keys_json: str | None) -> StackFacts:
    secret_keys = _secret_keys(secret_keys_json)
    try:
        raw = json.loads(config_json) if config_json else {}
    except ValueError as err:
        return StackFacts(stack, {}, None, f"PULUMI_CONFIG is not JSON: {err}", secret_keys)
    if not isinstance(raw, dict):
        return StackFacts(stack, {}, None, "PULUMI_CONFIG is not a JSON object", secret_keys)
    values = {str(key): _decode(str(key), value) for key, value in raw.items()}
    if not values:
        return StackFacts(stack, values, None, "PULUMI_CONFIG is empty", secret_keys)
    if not any(key.startswith(f"{PROJECT}:") for key in values):
        return StackFacts(stack, values, None, NO_GPUSHARE_CONFIG, secret_keys)
    try:
        # Secrecy is the credentials policy's business: here every secret key counts as secret so
        # that a plain one does not hide the measurements.
        config = from_config_values(
            values, stack=stack, source=stack_file_name(stack), secret_keys=SECRET_KEYS & set(values)
        )
    except GpushareError as err:
        return StackFacts(stack, values, None, f"stack config invalid: {err}", secret_keys)
    return StackFacts(stack, values, config, None, secret_keys)


def _decode(key: str, value: object) -> Any:
    # The CLI hands every value over as a string; the project's structured values as JSON.
    if key.startswith(f"{PROJECT}:") and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _secret_keys(secret_keys_json: str | None) -> frozenset[str] | None:
    if secret_keys_json:
        try:
            listed = json.loads(secret_keys_json)
        except ValueError:
            listed = None
        if isinstance(listed, list):
            return frozenset(str(key) for key in listed)
    return None
