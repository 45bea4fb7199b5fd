"""Policy config (`pulumi preview --policy-pack-config FILE`) as the CLI handles it
(pkg/resource/analyzer/config.go): reading the file, parsing enforcement levels and properties, and
reconciling them with each policy's defaults and JSON schema into the `Configure` request's entries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from gpushare import input_files, yaml_bounds
from gpushare.offline.policy_model import (
    ENFORCEMENT_LEVELS,
    PolicyConfigEntry,
    PolicyConfigError,
    PolicyInfo,
    UnreadablePolicyConfigError,
)

# --------------------------------------------------------------------------------------------------
# Policy config (`--policy-pack-config`) parsing and reconciliation, as pkg/resource/analyzer/config.go


def _enforcement_level(value: Any, key: str) -> str:
    # Accept pulumi_policy.EnforcementLevel members as well as their string values.
    level = getattr(value, "value", value)
    if not isinstance(level, str):
        raise PolicyConfigError(f'parsing enforcement level for "{key}": {value!r} must be a string')
    if level not in ENFORCEMENT_LEVELS:
        raise PolicyConfigError(
            f'parsing enforcement level for "{key}": "{level}" is not a valid enforcement level'
        )
    return level


def parse_policy_config(raw: Mapping[str, Any]) -> dict[str, PolicyConfigEntry]:
    """`parsePolicyPackConfig`: a level string, or an object with an optional `enforcementLevel`."""
    parsed: dict[str, PolicyConfigEntry] = {}
    for key, value in raw.items():
        if key == "environments":
            # ESC environments need the Pulumi Cloud; the DIY backend rejects them too.
            raise PolicyConfigError('"environments" (ESC) in the policy config is not supported offline')
        level = ""
        properties: dict[str, Any] | None = None
        if isinstance(value, Mapping):
            rest = dict(value)
            if "enforcementLevel" in rest:
                level = _enforcement_level(rest.pop("enforcementLevel"), key)
            properties = rest or None
        elif isinstance(value, str) or hasattr(value, "value"):
            level = _enforcement_level(value, key)
        else:
            raise PolicyConfigError(
                f'parsing "{key}": {value!r} is not a valid value; must be a string or object'
            )
        if level or properties:  # the CLI drops empty entries
            parsed[key] = PolicyConfigEntry(level, properties)
    return parsed


def _not_json(constant: str) -> Any:
    # Python's json reads NaN and Infinity; JSON has neither, and the CLI's Go decoder refuses them.
    raise PolicyConfigError(f"{constant} is not a JSON value (a number must be finite)")


def load_policy_config_file(path: Path) -> dict[str, Any]:
    """Read and check a `--policy-pack-config` JSON file; the result can be passed as `policy_config`."""
    try:
        text = input_files.read_text(path)
    except input_files.InputFileError as err:
        raise UnreadablePolicyConfigError(f"{path}: {err.message}") from None
    try:
        if not text.strip():  # the CLI accepts an empty file
            return {}
        yaml_bounds.check_flow_depth(text)  # json.loads recurses per `[`
        document = json.loads(text, parse_constant=_not_json)
    except PolicyConfigError as err:
        raise PolicyConfigError(f"{path}: {err.message}") from None
    except (yaml_bounds.YamlBoundError, yaml_bounds.YamlTooDeepError, RecursionError):
        raise PolicyConfigError(f"{path}: nested too deeply to be a policy config") from None
    except json.JSONDecodeError as err:
        raise PolicyConfigError(f"{path}: not valid JSON: {err}") from err
    if not isinstance(document, dict):
        raise PolicyConfigError(f"{path}: the policy config must be a JSON object")
    try:
        parse_policy_config(document)
    except PolicyConfigError as err:
        raise PolicyConfigError(f"{path}: {err.message}") from err
    return document


def _schema_defaults(policy: PolicyInfo) -> dict[str, Any] | None:
    properties = (policy.config_schema or {}).get("properties") or {}
    defaults = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    return defaults or None


def _apply_config(
    result: dict[str, PolicyConfigEntry], to_apply: Mapping[str, PolicyConfigEntry]
) -> dict[str, PolicyConfigEntry]:
    """`applyConfig`: the "all" level first, then each entry (unknown names are kept, as the CLI does)."""
    result = dict(result)
    everything = to_apply.get("all")
    if everything is not None and everything.enforcement_level in ENFORCEMENT_LEVELS:
        for name, entry in result.items():
            result[name] = PolicyConfigEntry(everything.enforcement_level, entry.properties)
    for name, given in to_apply.items():
        current = result.get(name, PolicyConfigEntry(""))
        level = (
            given.enforcement_level
            if given.enforcement_level in ENFORCEMENT_LEVELS
            else current.enforcement_level
        )
        properties = dict(current.properties) if current.properties is not None else None
        if given.properties:
            properties = {**(properties or {}), **given.properties}
        result[name] = PolicyConfigEntry(level, properties)
    return result


def _validate_policy_config(policy: PolicyInfo, properties: Mapping[str, Any]) -> list[str]:
    """`validatePolicyConfig`: JSON Schema of an object with the policy's properties and required list."""
    schema: dict[str, Any] = {"type": "object"}
    if policy.config_schema and policy.config_schema.get("properties"):
        schema["properties"] = policy.config_schema["properties"]
    if policy.config_schema and policy.config_schema.get("required"):
        schema["required"] = policy.config_schema["required"]
    validator_class = jsonschema.Draft7Validator
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise PolicyConfigError(
            f'policy "{policy.name}" has an invalid config schema: {err.message}'
        ) from err
    errors = []
    for error in validator_class(schema).iter_errors(dict(properties)):
        path = ".".join(str(part) for part in error.absolute_path)
        errors.append(
            f"{policy.name}: {path}: {error.message}" if path else f"{policy.name}: {error.message}"
        )
    return errors


def reconcile_policy_config(
    policies: Sequence[PolicyInfo],
    initial_config: Mapping[str, PolicyConfigEntry],
    policy_config: Mapping[str, Any] | None,
    *,
    pack_label: str = "",
) -> dict[str, PolicyConfigEntry]:
    """`ReconcilePolicyPackConfig`: levels and schema defaults, then the pack's initialConfig, then
    the user's config ("all" first, then each policy), validated against each policy's schema.

    `policies` carry the levels the pack declares. Raises `PolicyConfigError` listing every
    validation error, like the CLI's "validating policy config" failure.
    """
    result = {p.name: PolicyConfigEntry(p.enforcement_level, _schema_defaults(p)) for p in policies}
    result = _apply_config(result, initial_config)
    result = _apply_config(result, parse_policy_config(policy_config or {}))
    errors: list[str] = []
    for policy in policies:
        errors.extend(_validate_policy_config(policy, (result[policy.name].properties or {})))
    if errors:
        errors.sort()
        prefix = f"validating policy config: {pack_label}  " if pack_label else "validating policy config: "
        raise PolicyConfigError("\n".join(prefix + e for e in errors), errors=errors)
    return result
