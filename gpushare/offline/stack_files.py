"""Project and stack files as the Pulumi CLI reads them: `read_project_name` from Pulumi.yaml, and
`load_stack_config`, which builds what the CLI puts in `PULUMI_CONFIG` from `Pulumi.<stack>.yaml`
(namespaced keys, Go json.Marshal of maps and lists, `secure:` values as `SECRET_PLACEHOLDER`, never
decrypted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import yaml

from gpushare import input_files, yaml_bounds
from gpushare.stack.reader import MAX_STACK_FILE_BYTES
from gpushare.stack.yaml import load_cli_yaml

SECRET_PLACEHOLDER: Final = "[secret]"
"""What `load_stack_config` returns for a `secure:` value (it never decrypts)."""


def _find_project_file(program_dir: Path) -> Path:
    for candidate in ("Pulumi.yaml", "Pulumi.yml"):
        if (program_dir / candidate).is_file():
            return program_dir / candidate
    raise FileNotFoundError(f"{program_dir}: no Pulumi.yaml")


def _read_project(program_dir: Path) -> tuple[dict[str, Any], Path]:
    path = _find_project_file(Path(program_dir))
    document = _load_yaml_file(path)
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}: missing project `name`")
    return document, path


def read_project_file(program_dir: Path) -> tuple[dict[str, Any], Path]:
    """Pulumi.yaml (or .yml) as a mapping with a `name`, and its path; OSError or ValueError otherwise."""
    return _read_project(Path(program_dir))


def read_project_name(program_dir: Path) -> str:
    """`name:` from the program's Pulumi.yaml."""
    document, _ = _read_project(program_dir)
    return str(document["name"])


def load_stack_config(program_dir: Path, stack: str) -> tuple[dict[str, str], list[str]]:
    """Read `Pulumi.<stack>.yaml` like the CLI builds `PULUMI_CONFIG`: (config, secret keys).

    Keys without a namespace get the project's; maps/lists become compact JSON (sorted keys, as Go's
    json.Marshal); scalars become strings (`true`/`false`, `2`, ...); `{secure: ...}` values become
    `SECRET_PLACEHOLDER` and their keys are listed as secret. Project-level `config:` values and
    defaults from Pulumi.yaml fill keys the stack file does not set. Values are not validated.
    """
    program_dir = Path(program_dir)
    project_doc, _ = _read_project(program_dir)
    project_name = str(project_doc["name"])
    stack_file = _stack_file(program_dir, project_doc, stack)
    document = _load_yaml_file(stack_file)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ValueError(f"{stack_file}: expected a mapping at the top level")
    section = document.get("config") or {}
    if not isinstance(section, dict):
        raise ValueError(f"{stack_file}: `config` must be a mapping")

    values: dict[str, str] = {}
    secret_keys: set[str] = set()
    for key, raw in section.items():
        full_key = namespaced_key(str(key), project_name)
        values[full_key], is_secret = _config_value(raw)
        if is_secret:
            secret_keys.add(full_key)

    project_section = project_doc.get("config")
    if isinstance(project_section, dict):  # a string here is the legacy stack-config directory
        for key, declaration in project_section.items():
            full_key = namespaced_key(str(key), project_name)
            if full_key in values:
                continue
            if isinstance(declaration, dict):
                if "value" in declaration:
                    raw = declaration["value"]
                elif "default" in declaration:
                    raw = declaration["default"]
                else:
                    continue
            else:  # short-hand: a bare value
                raw = declaration
            values[full_key], is_secret = _config_value(raw)
            if is_secret:
                secret_keys.add(full_key)
    return values, sorted(secret_keys)


def _stack_file(program_dir: Path, project_doc: Mapping[str, Any], stack: str) -> Path:
    directory = project_doc.get("stackConfigDir")
    if directory is None and isinstance(project_doc.get("config"), str):
        directory = project_doc["config"]
    base = program_dir / str(directory) if directory else program_dir
    candidates = [base / f"Pulumi.{stack}.yaml", base / f"Pulumi.{stack}.yml"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"stack config file not found: {candidates[0]}")


def namespaced_key(key: str, project: str) -> str:
    parts = key.split(":")
    if len(parts) == 3 and parts[1] == "config":  # legacy `<ns>:config:<name>`
        return f"{parts[0]}:{parts[2]}"
    return key if ":" in key else f"{project}:{key}"


def _is_secure(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def _config_value(raw: object) -> tuple[str, bool]:
    """One stack-file value -> (the string the program sees, is it secret)."""
    if _is_secure(raw):
        return SECRET_PLACEHOLDER, True
    if isinstance(raw, (dict, list)):
        found_secret = False

        def hide_secrets(value: Any) -> Any:
            nonlocal found_secret
            if _is_secure(value):
                found_secret = True
                return SECRET_PLACEHOLDER
            if isinstance(value, dict):
                return {str(key): hide_secrets(item) for key, item in value.items()}
            if isinstance(value, list):
                return [hide_secrets(item) for item in value]
            return value

        return _go_json(hide_secrets(raw)), found_secret
    return config_string(raw), False


def config_string(value: object) -> str:
    """A config value as the string the CLI would put in PULUMI_CONFIG."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float, dict, list, tuple)):
        return _go_json(value)
    return str(value)


def _go_json(value: Any) -> str:
    """Go's json.Marshal of a decoded YAML value: compact, sorted keys, HTML-safe, Go number format."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escape in _GO_JSON_ESCAPES:
            text = text.replace(char, escape)
        return text
    if isinstance(value, dict):
        items = sorted((str(key), item) for key, item in value.items())
        return "{" + ",".join(f"{_go_json(key)}:{_go_json(item)}" for key, item in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_go_json(item) for item in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as a config value")


_GO_JSON_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _go_float(number: float) -> str:
    # encoding/json: shortest digits, plain notation for 1e-6 <= |x| < 1e21, else e-notation "1e-7".
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"config value {number!r} cannot be represented in JSON")
    magnitude = abs(number)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        if number.is_integer():
            return str(int(number))
        return format(Decimal(repr(number)), "f")
    return re.sub(r"e([-+])0(\d)$", r"e\1\2", repr(number))


def _load_yaml_file(path: Path) -> Any:
    # The bounded reader (regular files only, at most 4 MiB as for stack files); the CLI strips a BOM too.
    try:
        text = input_files.read_text(path, MAX_STACK_FILE_BYTES)
        yaml_bounds.check_flow_depth(text)  # before libyaml, which recurses per `[`
        return load_cli_yaml(text)
    except input_files.InputFileError as error:
        raise ValueError(str(error)) from None
    except (yaml_bounds.YamlBoundError, yaml_bounds.YamlTooDeepError, RecursionError):
        raise ValueError(f"{path}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: invalid YAML: {error}") from error
