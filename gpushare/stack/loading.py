"""Loading a stack: config values (from the stack file or `pulumi.Config`) checked for secrets and
placeholders, then validated into `StackConfig` once; `load_stack`, the one way every command reads a
stack by name. The bounded file reading is `gpushare.stack.reader`'s, the messages
`gpushare.stack.messages`'."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpushare.errors import ConfigError
from gpushare.stack import kube_syntax
from gpushare.stack.credentials import SECRET_KEYS, _credential_problems
from gpushare.stack.messages import _describe
from gpushare.stack.model import PROJECT, StackConfig
from gpushare.stack.placeholders import _placeholder_problems
from gpushare.stack.reader import _read_stack_document
from gpushare.stack.tencentcloud_keys import NAMESPACE as TENCENTCLOUD
from gpushare.stack.tencentcloud_keys import PROVIDER_KEYS, known_keys
from gpushare.suggest import did_you_mean

_CONFIG_FIELDS = {
    "cluster": "cluster",
    "sharing": "sharing",
    "pools": "pools",
    "protectPools": "protectPools",
}


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def from_config_values(
    values: Mapping[str, Any],
    *,
    stack: str,
    source: str,
    secret_keys: Iterable[str] = (),
    today: date | None = None,
) -> StackConfig:
    """Validate config values keyed `namespace:key` (already parsed from YAML/JSON). `today`: the day
    `measuredAt` may not be after (default: the latest calendar day anywhere on Earth)."""
    secrets = set(secret_keys)
    problems: list[str] = []
    for key in sorted(SECRET_KEYS & set(values)):
        if key not in secrets:
            problems.append(f"{source}: {key}: must be a secret (pulumi config set --secret {key} ...)")
    problems.extend(_unpassable_problems(values, source))
    credential_problems = _credential_problems(values, secrets, source)
    problems.extend(credential_problems)
    problems.extend(_unknown_tencentcloud_keys(values, source, already=credential_problems))
    problems.extend(_placeholder_problems(values, source))
    unknown = sorted(
        key
        for key in values
        if key.startswith(f"{PROJECT}:") and key.split(":", 1)[1] not in {*_CONFIG_FIELDS, "kubeconfig"}
    )
    known_keys = [f"{PROJECT}:{k}" for k in _CONFIG_FIELDS]
    for key in unknown:
        problems.append(
            f"{source}: {key}: unknown key{did_you_mean(key, known_keys)} (known: {', '.join(known_keys)})"
        )
    if problems:
        raise ConfigError("\n".join(problems))
    data: dict[str, Any] = {
        "stack": stack,
        "source": source,
        "hasKubeconfig": f"{PROJECT}:kubeconfig" in values,
        "configEnvBytes": config_env_bytes(values),
    }
    for field, alias in _CONFIG_FIELDS.items():
        key = f"{PROJECT}:{field}"
        if key in values:
            data[alias] = values[key]
    if "tencentcloud:region" in values:
        data["region"] = values["tencentcloud:region"]
    data["providerKeys"] = sorted(
        key.split(":", 1)[1]
        for key in values
        if key.startswith(f"{TENCENTCLOUD}:") and key != "tencentcloud:region"
    )
    if f"{PROJECT}:cluster" not in values:
        raise ConfigError(
            "missing (set the TKE cluster: {id, vpcId, subnetIds, kubernetesVersion})",
            source=source,
            key=f"{PROJECT}:cluster",
        )
    try:
        return StackConfig.model_validate_json(
            json.dumps(data, default=_json_scalar), context={"today": today} if today else None
        )
    except ValidationError as err:
        raise ConfigError("\n".join(_describe(err, source))) from None


def _unknown_tencentcloud_keys(
    values: Mapping[str, Any], source: str, *, already: list[str]
) -> Iterator[str]:
    """A `tencentcloud:` key the pinned provider does not read would be dropped without a word (the
    explicit provider gets only the keys it knows): refused with the closest known key, as `gpushare:` keys
    are. A key the credential check already refused is not named twice."""
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace != TENCENTCLOUD or name in PROVIDER_KEYS or any(f": {key}: " in p for p in already):
            continue
        yield (
            f"{source}: {key}: unknown key{did_you_mean(key, known_keys())} (the TencentCloud provider "
            f"reads: {', '.join(sorted(PROVIDER_KEYS))})"
        )


def _unpassable_problems(values: Mapping[str, Any], source: str) -> Iterator[str]:
    """Values no stack file or `pulumi config` can hold (bytes, sets, ... from a caller of this
    function), each named as an input rather than left to fail as a TypeError further down."""
    for key in sorted(values):
        try:
            json.dumps(values[key], default=_json_scalar)
        except (TypeError, ValueError) as err:
            yield (
                f"{source}: {key}: {err} (a config value is a string, number, boolean, null, list or mapping)"
            )


def _json_scalar(value: object) -> str:
    # YAML turns an unquoted `2025-06-01` into a date; the Pulumi CLI would hand it over as a string.
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(f"cannot pass {type(value).__name__} as config")


def load_stack(project_dir: Path, stack: str, *, today: date | None = None) -> StackConfig:
    """THE way every command (plan, render, check, verify) reads a stack: `Pulumi.<stack>.yaml` in
    `project_dir`, refused in one `ConfigError` naming the file and key before anything runs."""
    if not is_stack_name(stack):
        raise ConfigError(f"not a stack name: {stack!r} (letters, digits, '_', '.' and '-')")
    return load_stack_file(Path(project_dir) / stack_file_name(stack), stack, today=today)


def load_stack_file(path: Path, stack: str | None = None, *, today: date | None = None) -> StackConfig:
    """Read a stack file the way the Pulumi CLI does (keys without a namespace belong to the project)
    and validate it; `load_stack` for a stack by name."""
    stack = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    source = path.name
    document = _read_stack_document(path)
    if document is None:
        document = {}
    if not isinstance(document, dict) or not isinstance(document.get("config") or {}, dict):
        raise ConfigError("expected a mapping with a `config:` mapping", source=source)
    values: dict[str, Any] = {}
    secret_keys = []
    for key, value in (document.get("config") or {}).items():
        full = key if ":" in str(key) else f"{PROJECT}:{key}"
        if full in values:
            # The CLI reads `pools` as `gpushare:pools` (the project's namespace is implied): one would
            # silently replace the other.
            first = next(k for k in document["config"] if (k if ":" in str(k) else f"{PROJECT}:{k}") == full)
            raise ConfigError(
                f"given twice, as config.{first} and as config.{key} (a key without a namespace is the "
                f"project's: both are {full}); keep one",
                source=source,
                key=full,
            )
        if isinstance(value, dict) and "secure" in value:
            if set(value) != {"secure"} or not isinstance(value["secure"], str):
                raise ConfigError(
                    "`secure:` must be the one ciphertext string `pulumi config set --secret` writes",
                    source=source,
                    key=full,
                )
            secret_keys.append(full)
            value = "<secret>"
        elif not full.startswith(f"{PROJECT}:") and not isinstance(value, dict | list):
            value = _cli_string(value)  # the CLI hands other namespaces' scalars to providers as strings
        elif isinstance(value, str):
            # The CLI hands the program every top-level value as a string and the program decodes it
            # (`program_config_value`): a quoted `"true"` is the program's true. The CLI itself writes that
            # form: saving config (`pulumi stack init`, `config set`) re-quotes `protectPools: true`.
            value = program_config_value(value)
        values[full] = value
    config = from_config_values(values, stack=stack, source=source, secret_keys=secret_keys, today=today)
    _check_kubernetes_schema(config)
    return config


# Pulumi stack names (optionally org/project/stack are not file names); anything else would make a path.
is_stack_name = kube_syntax.anchored(r"[A-Za-z0-9_.-]+")
# Linux's MAX_ARG_STRLEN: the most one environment variable (`PULUMI_CONFIG=...`) may hold.
CONFIG_ENV_LIMIT_BYTES = 128 * 1024
# plan and render warn from here on: `check` (and `pulumi preview --policy-pack`) stop at the limit.
CONFIG_ENV_WARN_BYTES = 96 * 1024


def program_config_value(cli_string: str) -> Any:
    """A project config value as the program reads it from the string the CLI hands over: JSON where it
    parses (objects, lists, booleans, numbers), else the string itself."""
    try:
        return json.loads(cli_string)
    except ValueError:
        return cli_string


def _cli_string(value: Any) -> str:
    # How the CLI turns a YAML scalar into a config string: true/false, numbers as written, null as "".
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)


def config_env_bytes(values: Mapping[str, Any]) -> int:
    """About how large `PULUMI_CONFIG` is when the CLI hands these values to a policy pack (structured
    values as compact JSON strings inside a JSON object)."""
    as_strings = {
        key: value
        if isinstance(value, str)
        else json.dumps(value, separators=(",", ":"), default=_json_scalar)
        for key, value in values.items()
    }
    return len("PULUMI_CONFIG=") + len(json.dumps(as_strings).encode("utf-8")) + 1


def _check_kubernetes_schema(config: StackConfig) -> None:
    """The offline commands validate manifests with kubernetes-validate's bundled schemas: a version it
    has none for is refused by every command alike (render cannot check its manifests, so none may pass)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return  # the Pulumi program alone (no offline tooling installed) has nothing to check against
    schemas = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    found = re.compile(r"v([0-9]+)\.([0-9]+)\.[0-9]+-local")
    minors = sorted(
        (int(m[1]), int(m[2])) for m in (found.fullmatch(p.name) for p in schemas.iterdir()) if m is not None
    )
    wanted = config.cluster.kubernetes_version
    if minors and tuple(int(n) for n in wanted.split(".")[:2]) not in minors:
        raise ConfigError(
            f"no Kubernetes {wanted} schema to check the manifests against (kubernetes-validate has "
            f"{minors[0][0]}.{minors[0][1]} to {minors[-1][0]}.{minors[-1][1]})",
            source=config.source,
            key=f"{PROJECT}:cluster.kubernetesVersion",
        )
