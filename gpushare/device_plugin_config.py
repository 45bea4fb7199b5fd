"""The NVIDIA k8s-device-plugin config file (API `v1`), accepted and rejected exactly as the plugin does.

The plugin (tags v0.14.5, v0.17.1 and v0.20.0) reads its `--config-file` with `sigs.k8s.io/yaml.Unmarshal`: go-yaml v2
turns the YAML into generic values, those are re-encoded as JSON, and `encoding/json` decodes that JSON into
the `api/config/v1` structs, some of which have hand-written `UnmarshalJSON` methods. The flags are then
merged with the command line and environment (CLI > env > file) and checked by `validateFlags`.
Reference: shared/reference/nvidia-device-plugin-and-mig.md, section A; the rules below were also checked
against the upstream Go code of each tag, built and run on a corpus of inputs (tests/fixtures/device_plugin).

This module reproduces that pipeline instead of describing the schema declaratively, because the
accept/reject behaviour lives in the pipeline's quirks:
- scalars resolve by go-yaml v2 rules (YAML 1.1 `y`/`n`/`on`/`off` are booleans, `1e3` is a float,
  `0:1` is a string), not PyYAML's; the `_GoYamlLoader` below swaps the resolver;
- a YAML float with an integral value is re-encoded as a JSON integer, so `replicas: 2.0` is accepted as 2
  while `2.5` and `"4"` are type errors (Go's `encoding/json` never converts strings to numbers);
- keys of plain structs match case-insensitively (`timeslicing:` works) but the keys read by the custom
  unmarshalers (a sharing section, its resources, `resources.gpus` entries) are case-sensitive;
- when several spellings of one key are present, `encoding/json` sees them in sorted order and the last wins;
- `version` is the one string field that go-yaml numbers and booleans are coerced into (`version: 1` is
  rejected as `unknown version: 1`, not as a type error); inside `flags` an upstream quirk (the embedded
  struct) disables that coercion, so `migStrategy: 1` is a type error.

What the plugin accepts but ignores at run time is reported as warnings, never as errors.

Known limits of the emulation: YAML merge keys (`<<`) follow PyYAML (explicit keys win) whereas go-yaml v2
lets a later merge override earlier keys; exotic YAML syntax accepted by only one of the two parsers; the
check (from v0.17.1) that CDI strategies need NVML (it depends on the node) is not applied.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TextIO, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict

from gpushare.errors import GpushareError
from gpushare.input_files import read_bytes
from gpushare.yaml_bounds import (
    AliasRecordingComposer,
    YamlBoundError,
    YamlTooDeepError,
    check_flow_depth,
    iter_documents,
    load_first_document,
)

PLUGIN_VERSIONS = ("0.14.5", "0.17.1", "0.20.0")
API_VERSION = "v1"

MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_ID_STRATEGIES = ("uuid", "index")
DEVICE_DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
RESOURCE_NAME_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME_LENGTH = 63
SHARED_RESOURCE_SUFFIX = ".shared"
SHARED_PRODUCT_LABEL_SUFFIX = "-SHARED"
# The v0.17.1 chart renders `MPS_ROOT={{ .Values.mps.root }}` into every device-plugin pod; this is the default.
CHART_MPS_ROOT = "/run/nvidia/mps"

SHARED_DEVICES_ALLOCATION_POLICIES = ("distributed", "packed")
# Durations (`flags.gfd.sleepInterval`) may say `infinite` from 0.20.0 on; the plugin stores math.MaxInt64.
INFINITE_DURATION_NS = 2**63 - 1

# The releases whose additions the rules below switch on: 0.17.1 stands for everything the 0.15 restructuring
# brought (MPS, IMEX, device discovery); 0.20.0 adds the allocation policy, GDRCopy, an honoured
# `failRequestsGreaterThanOne: false` for MPS and `infinite` durations.
_MPS_ERA = "0.17.1"
_ALLOCATION_POLICY_ERA = "0.20.0"


def _version_key(plugin_version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in plugin_version.split("."))


def version_at_least(plugin_version: str, release: str) -> bool:
    """Whether plugin `plugin_version` (e.g. "0.17.1") has what `release` introduced."""
    return _version_key(plugin_version) >= _version_key(release)


_since = version_at_least


def _device_list_strategies(plugin_version: str) -> tuple[str, ...]:
    base = ("envvar", "volume-mounts", "cdi-annotations")
    return (*base, "cdi-cri") if _since(plugin_version, _MPS_ERA) else base


class DevicePluginConfigError(GpushareError):
    """The plugin would refuse to start with this config. `reason` is the upstream message (plus a hint
    where one helps); `path` is the field, e.g. `sharing.timeSlicing.resources[0].replicas`."""

    def __init__(self, reason: str, path: str | None = None, *, source: str | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(reason, source=source, key=path)


# --------------------------------------------------------------------------------------------------------
# The typed model. Fields mirror `api/config/v1`; `None` means "not set in the file", which matters because
# unset flags take the CLI/env default while set ones (even to "") are kept. Build instances with `parse` or
# the builders below: constructing a model by hand skips the upstream rules (use `validate_config`).
# --------------------------------------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


class PluginFlags(_Frozen):
    pass_device_specs: bool | None = None
    device_list_strategy: tuple[str, ...] | None = None
    device_id_strategy: str | None = None
    cdi_annotation_prefix: str | None = None
    nvidia_ctk_path: str | None = None
    container_driver_root: str | None = None
    shared_devices_allocation_policy: str | None = None


class GfdFlags(_Frozen):
    oneshot: bool | None = None
    no_timestamp: bool | None = None
    sleep_interval_ns: int | None = None
    output_file: str | None = None
    machine_type_file: str | None = None


class Flags(_Frozen):
    mig_strategy: str | None = None
    fail_on_init_error: bool | None = None
    mps_root: str | None = None
    nvidia_driver_root: str | None = None
    nvidia_dev_root: str | None = None
    gdrcopy_enabled: bool | None = None
    gds_enabled: bool | None = None
    mofed_enabled: bool | None = None
    use_node_feature_api: bool | None = None
    device_discovery_strategy: str | None = None
    plugin: PluginFlags | None = None
    gfd: GfdFlags | None = None


class ResourcePattern(_Frozen):
    """An entry of `resources.gpus` / `resources.mig` (parsed, then dropped at run time by the plugin)."""

    pattern: str
    name: str


class Resources(_Frozen):
    gpus: tuple[ResourcePattern, ...] = ()
    mig: tuple[ResourcePattern, ...] = ()


Devices = str | int | tuple[str, ...]
"""`"all"`, a count > 0, or device references (GPU index, `gpu:mig` index, GPU/MIG UUID) as strings."""


class ReplicatedResource(_Frozen):
    name: str
    """Fully qualified, as the plugin stores it (`gpu` in the file becomes `nvidia.com/gpu`)."""
    replicas: int
    devices: Devices = "all"
    rename: str | None = None
    """As written in the file (fully qualified); the plugin ignores it unless it equals `<name>.shared`."""


class ReplicatedResources(_Frozen):
    """`sharing.timeSlicing` or (0.17.1 and later) `sharing.mps`."""

    rename_by_default: bool = False
    fail_requests_greater_than_one: bool | None = False
    """0.14.5/0.17.1 read an absent key as false. From 0.20.0 the field is a pointer: None means unset, which
    time-slicing treats as false and MPS turns into true (0.17.1 forces true for MPS whatever the file says)."""
    resources: tuple[ReplicatedResource, ...]


class Sharing(_Frozen):
    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None


class Imex(_Frozen):
    channel_ids: tuple[int, ...] = ()
    required: bool = False


class DevicePluginConfig(_Frozen):
    version: Literal["v1"] = "v1"
    flags: Flags = Flags()
    resources: Resources = Resources()
    sharing: Sharing = Sharing()
    imex: Imex = Imex()


@dataclass(frozen=True)
class ParseResult:
    config: DevicePluginConfig
    warnings: list[str]
    plugin_version: str
    effective_flags: EffectiveFlags


class FlagOverride(_Frozen):
    """A flag the file sets that a CLI argument or environment variable replaces."""

    name: str
    file_value: object
    effective_value: object

    @property
    def changes_value(self) -> bool:
        return self.file_value != self.effective_value


class EffectiveFlags(_Frozen):
    """The flags the plugin runs with after merging defaults, the file and overrides (CLI > env > file).
    Flags a version does not have are `None` (the 0.17.1 ones for 0.14.5, the 0.20.0 ones before 0.20.0)."""

    mig_strategy: str
    fail_on_init_error: bool
    nvidia_driver_root: str
    gds_enabled: bool
    mofed_enabled: bool
    pass_device_specs: bool
    device_list_strategy: tuple[str, ...]
    device_id_strategy: str
    cdi_annotation_prefix: str
    nvidia_ctk_path: str
    container_driver_root: str
    mps_root: str | None = None
    nvidia_dev_root: str | None = None
    device_discovery_strategy: str | None = None
    gdrcopy_enabled: bool | None = None
    shared_devices_allocation_policy: str | None = None
    overridden: tuple[FlagOverride, ...] = ()


class AdvertisedResource(_Frozen):
    """A resource the plugin advertises with `replicas` slots per physical device."""

    name: str
    replicas: int
    product_label_suffix: str
    """`-SHARED` when GFD appends it to `<source_name>.product` (shared and not renamed), else empty."""
    source_name: str
    sharing_strategy: Literal["time-slicing", "mps"]


# --------------------------------------------------------------------------------------------------------
# YAML with go-yaml v2 scalar rules
# --------------------------------------------------------------------------------------------------------

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"

# go-yaml v2 resolve.go `resolveMapList`: note `y`/`n` are booleans there but not in PyYAML.
_GO_YAML_SPECIAL_SCALARS: dict[str, tuple[str, object]] = {
    **{
        s: (_BOOL_TAG, True)
        for s in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
    },
    **{
        s: (_BOOL_TAG, False)
        for s in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
    },
    **{s: (_NULL_TAG, None) for s in ("", "~", "null", "Null", "NULL")},
    **{s: (_FLOAT_TAG, math.nan) for s in (".nan", ".NaN", ".NAN")},
    **{s: (_FLOAT_TAG, math.inf) for s in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{s: (_FLOAT_TAG, -math.inf) for s in ("-.inf", "-.Inf", "-.INF")},
    "<<": (_MERGE_TAG, "<<"),
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_DECIMAL_FLOAT = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _go_parse_uint(text: str, base: int) -> int | None:
    """strconv.ParseUint(text, base, 64) with base 0 meaning "from the prefix"; None on any error."""
    if not text:
        return None
    if base == 0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    if any(c.lower() not in digits for c in text):
        return None
    value = int(text, base) if text else 0
    return value if value <= _UINT64_MAX else None


def _go_parse_int(text: str, base: int) -> int | None:
    """strconv.ParseInt(text, base, 64); None on any error."""
    sign = 1
    if text[:1] in ("+", "-"):
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    magnitude = _go_parse_uint(text, base)
    if magnitude is None:
        return None
    value = sign * magnitude
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _go_parse_float(text: str) -> float | None:
    """strconv.ParseFloat for the decimal forms go-yaml lets through; None when Go reports an error
    (out of range counts as an error there, so `1e999` stays a string)."""
    if not _GO_DECIMAL_FLOAT.fullmatch(text):
        return None
    value = float(text)
    return None if math.isinf(value) else value


def _go_yaml_resolve_plain(value: str) -> tuple[str, object]:
    """go-yaml v2 `resolve("", value)` for a plain scalar: (tag, value). Timestamps are not resolved because
    go-yaml hands them to an untyped target as the original string anyway."""
    if value in _GO_YAML_SPECIAL_SCALARS:
        return _GO_YAML_SPECIAL_SCALARS[value]
    hint = value[:1]
    if hint == ".":
        number = _go_parse_float(value)
        if number is not None:
            return _FLOAT_TAG, number
    elif hint and hint in "+-0123456789":
        plain = value.replace("_", "")
        integer = _go_parse_int(plain, 0)
        if integer is None:
            integer = _go_parse_uint(plain, 0)
        if integer is not None:
            return _INT_TAG, integer
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            number = _go_parse_float(plain)
            if number is not None:
                return _FLOAT_TAG, number
        if plain.startswith("0b"):
            integer = _go_parse_int(plain[2:], 2)
            if integer is None:
                integer = _go_parse_uint(plain[2:], 2)
            if integer is not None:
                return _INT_TAG, integer
        elif plain.startswith("-0b"):
            integer = _go_parse_int("-" + plain[3:], 2)
            if integer is not None:
                return _INT_TAG, integer
    return _STR_TAG, value


class _GoYamlLoader(AliasRecordingComposer, yaml.SafeLoader):
    """PyYAML's parser with go-yaml v2's scalar resolution, for untyped (interface{}) targets."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _go_yaml_resolve_plain(value)[0]
        return super().resolve(kind, value, implicit)

    def _scalar_as(self, node: yaml.ScalarNode, tag: str) -> object:
        raw = str(self.construct_scalar(node))
        resolved_tag, value = _go_yaml_resolve_plain(raw)
        if resolved_tag == tag:
            return value
        if tag == _FLOAT_TAG and resolved_tag == _INT_TAG and isinstance(value, int):
            return float(value)
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot decode {raw!r} as {tag.rsplit(':', 1)[-1]}", node.start_mark
        )

    def construct_go_int(self, node: yaml.ScalarNode) -> object:
        return self._scalar_as(node, _INT_TAG)

    def construct_go_float(self, node: yaml.ScalarNode) -> object:
        return self._scalar_as(node, _FLOAT_TAG)

    def construct_go_bool(self, node: yaml.ScalarNode) -> object:
        return self._scalar_as(node, _BOOL_TAG)

    def construct_go_null(self, node: yaml.ScalarNode) -> object:
        return None

    def construct_go_string(self, node: yaml.ScalarNode) -> object:
        return str(self.construct_scalar(node))

    def construct_go_binary(self, node: yaml.ScalarNode) -> object:
        # go-yaml decodes !!binary into a string of the decoded bytes.
        try:
            return base64.b64decode(str(self.construct_scalar(node))).decode("utf-8", "replace")
        except binascii.Error as exc:
            raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from exc

    def construct_by_kind(self, node: yaml.Node) -> object:
        # go-yaml ignores tags it does not know (and !!set, !!omap) and decodes by node kind.
        if isinstance(node, yaml.MappingNode):
            return self.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_sequence(node, deep=True)
        return str(self.construct_scalar(node))  # type: ignore[arg-type]


_GoYamlLoader.add_constructor(_INT_TAG, _GoYamlLoader.construct_go_int)
_GoYamlLoader.add_constructor(_FLOAT_TAG, _GoYamlLoader.construct_go_float)
_GoYamlLoader.add_constructor(_BOOL_TAG, _GoYamlLoader.construct_go_bool)
_GoYamlLoader.add_constructor(_NULL_TAG, _GoYamlLoader.construct_go_null)
_GoYamlLoader.add_constructor(_STR_TAG, _GoYamlLoader.construct_go_string)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _GoYamlLoader.construct_go_string)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:binary", _GoYamlLoader.construct_go_binary)
for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs", None):
    _GoYamlLoader.add_constructor(_tag, _GoYamlLoader.construct_by_kind)


def _load_first_document(text: str) -> object:
    """go-yaml's Unmarshal reads the first document only; later ones are never parsed."""
    try:
        check_flow_depth(text)  # before the JSON reader too: deep nesting costs both of them
    except YamlBoundError as exc:
        raise DevicePluginConfigError(f"error converting YAML to JSON: yaml: {exc.reason}") from None
    json_document = _load_json(text)
    if json_document is not _NOT_JSON:
        return json_document
    try:
        return load_first_document(_GoYamlLoader, text)
    except yaml.YAMLError as exc:
        raise DevicePluginConfigError(f"error converting YAML to JSON: yaml: {_yaml_problem(exc)}") from exc
    except YamlBoundError as exc:
        raise DevicePluginConfigError(f"error converting YAML to JSON: yaml: {exc.reason}") from None


_NOT_JSON = object()


def _load_json(text: str) -> object:
    """PyYAML rejects a tab between JSON tokens (go-yaml does not), so valid JSON is read with the json module;
    its numbers still resolve by go-yaml rules (beyond 64 bits a float, beyond float range a string)."""

    def reject_constant(name: str) -> object:
        raise ValueError(name)  # NaN/Infinity are not JSON; go-yaml reads them as plain strings

    def go_yaml_number(literal: str) -> object:
        return _go_yaml_resolve_plain(literal)[1]

    try:
        return json.loads(
            text, parse_constant=reject_constant, parse_int=go_yaml_number, parse_float=go_yaml_number
        )
    except ValueError:
        return _NOT_JSON


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"line {exc.problem_mark.line + 1}: {exc.problem}"
    if isinstance(exc, yaml.reader.ReaderError):  # go-yaml: "control characters are not allowed"
        return (
            f"control characters are not allowed (character #x{exc.character:04x} at offset {exc.position})"
        )
    return " ".join(str(exc).split())


# --------------------------------------------------------------------------------------------------------
# Go formatting helpers: the JSON text `encoding/json` sees, and the strings sigs.k8s.io/yaml builds
# --------------------------------------------------------------------------------------------------------


def _go_json_number(value: int | float) -> str:
    """The literal json.Marshal writes for a go-yaml number: floats use the shortest form, in plain notation
    when 1e-6 <= |x| < 1e21, so 2.0 becomes `2` (which then decodes into an int) and 2.5 stays `2.5`."""
    if isinstance(value, int):
        return str(value)
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, exponent = repr(value).split("e")
        return f"{mantissa}e{exponent[0]}{exponent[1:].lstrip('0') or '0'}"
    plain = format(Decimal(repr(value)), "f")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def _go_format_float32_g(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), which sigs.k8s.io/yaml uses to turn a float into a string."""
    if math.isnan(value):
        return "NaN"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return "+Inf" if single > 0 else "-Inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(1, 10):
        candidate = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(candidate)))[0] == single:
            break
    mantissa, exponent_text = candidate.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:  # Go's %g switch point for shortest formatting
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole, fraction = digits[: exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1 :]
    return f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}"


def _go_json_text(value: object) -> str:
    """Compact JSON as Go writes it (sorted keys, HTML-escaped), for messages quoting raw input."""
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{_go_json_text(k)}:{_go_json_text(v)}" for k, v in sorted(value.items())) + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(_go_json_text(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return _go_json_number(value)
    text = json.dumps(str(value), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _json_kind(value: object) -> str:
    """The word encoding/json's UnmarshalTypeError uses for a JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(value: object, go_type: str, path: str | None) -> DevicePluginConfigError:
    return DevicePluginConfigError(
        f"json: cannot unmarshal {_json_kind(value)} into Go value of type {go_type}", path
    )


def _to_json_values(node: object, path: str) -> object:
    """sigs.k8s.io/yaml's YAML->JSON step: map keys become strings (a null key is an error), and a NaN or
    infinity anywhere, even under an unknown key, makes json.Marshal fail."""
    if isinstance(node, dict):
        converted: dict[str, object] = {}
        for key, child in node.items():
            key_text = _json_key(key, child, path)
            converted[key_text] = _to_json_values(child, _join(path, key_text))
        return converted
    if isinstance(node, list):
        return [_to_json_values(child, f"{path}[{i}]") for i, child in enumerate(node)]
    if isinstance(node, float) and not math.isfinite(node):
        go_value = "NaN" if math.isnan(node) else ("+Inf" if node > 0 else "-Inf")
        raise DevicePluginConfigError(
            f"error converting YAML to JSON: json: unsupported value: {go_value}", path or None
        )
    if node is None or isinstance(node, bool | int | float | str):
        return node
    return str(node)


def _json_key(key: object, value: object, path: str) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        text = _go_format_float32_g(key)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    if isinstance(key, str):
        return key
    # sigs.k8s.io/yaml formats this with Go's %s of a nil interface; v1.4.0 lower-cased the first word.
    raise DevicePluginConfigError(
        f"error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, "
        f"value: {_go_json_text(value)}",
        path or None,
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _go_fold(text: str) -> str:
    """The case folding encoding/json uses to match keys to struct fields: ASCII case, plus the two
    non-ASCII runes that fold to ASCII letters (long s, Kelvin sign)."""
    return text.lower().replace("\u017f", "s").replace("\u212a", "k")


# --------------------------------------------------------------------------------------------------------
# Value rules: resource names, devices, durations
# --------------------------------------------------------------------------------------------------------

_DNS1123_SUBDOMAIN_FORMAT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FORMAT)
_DNS1123_SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FORMAT}')"
)


def qualify_resource_name(name: str) -> str:
    """`NewResourceName`: prefix `nvidia.com/` when missing, then check length and format.
    Raises DevicePluginConfigError with the upstream message (no path)."""
    if not name.startswith(RESOURCE_NAME_PREFIX + "/"):
        name = f"{RESOURCE_NAME_PREFIX}/{name}"
    if len(name.encode()) > MAX_RESOURCE_NAME_LENGTH:
        raise DevicePluginConfigError(
            f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {name}"
        )
    short_name = name.split("/", 1)[1]
    problems = []
    if len(short_name.encode()) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(short_name):
        problems.append(_DNS1123_SUBDOMAIN_ERROR)
    if problems:
        raise DevicePluginConfigError(f"incorrect format for resource name '{name}': [{' '.join(problems)}]")
    return name


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def _is_uuid(text: str) -> bool:
    """github.com/google/uuid Parse, byte for byte (including its lax `{...}` form, whose braces are not
    checked)."""
    data = text.encode()
    if len(data) == 32:
        return all(b in _HEX_DIGITS for b in data)
    if len(data) == 36 + 9:
        if data[:9].lower() != b"urn:uuid:":
            return False
        data = data[9:]
    elif len(data) == 36 + 2:
        data = data[1:]
    elif len(data) != 36:
        return False
    if any(data[i] != ord("-") for i in (8, 13, 18, 23)):
        return False
    hex_positions = (0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34)
    return all(data[i] in _HEX_DIGITS and data[i + 1] in _HEX_DIGITS for i in hex_positions)


def _is_decimal_uint(text: str) -> bool:
    return _go_parse_uint(text, 10) is not None


def is_device_reference(text: str) -> bool:
    """A `devices` list entry the plugin accepts: GPU index, `gpu:mig` index, `GPU-<uuid>`, `MIG-<uuid>` or
    `MIG-GPU-<uuid>/<gi>/<ci>` (replicas.go)."""
    if _is_decimal_uint(text):
        return True
    index_parts = text.split(":", 1)
    if len(index_parts) == 2 and all(_is_decimal_uint(p) for p in index_parts):
        return True
    if text.startswith("GPU-"):
        return _is_uuid(text[4:])
    if text.startswith("MIG-"):
        suffix = text[4:]
        if _is_uuid(suffix):
            return True
        parts = suffix.split("/", 2)
        return (
            len(parts) == 3
            and parts[0].startswith("GPU-")
            and _is_uuid(parts[0][4:])
            and all(_is_decimal_uint(p) for p in parts[1:])
        )
    return False


_DURATION_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}


def _go_quote(text: str) -> str:
    quoted: list[str] = []
    for char in text:
        if ord(char) < 0x20 or ord(char) >= 0x80:
            quoted.extend(f"\\x{b:02x}" for b in char.encode())
        else:
            quoted.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(quoted) + '"'


def parse_go_duration(text: str) -> int:
    """time.ParseDuration, in nanoseconds. Raises ValueError with Go's message."""
    original, rest, negative, total = text, text, False, 0
    invalid = f"time: invalid duration {_go_quote(original)}"
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(invalid)
    while rest:
        if rest[0] not in ".0123456789":
            raise ValueError(invalid)
        whole_digits = len(rest) - len(rest.lstrip("0123456789"))
        whole_text, rest = rest[:whole_digits], rest[whole_digits:]
        whole = int(whole_text) if whole_text else 0
        if whole > 2**63:
            raise ValueError(invalid)
        fraction, scale, has_fraction = 0, 1.0, False
        if rest[:1] == ".":
            rest = rest[1:]
            fraction_digits = len(rest) - len(rest.lstrip("0123456789"))
            has_fraction = fraction_digits > 0
            overflowed = False
            for digit in rest[:fraction_digits]:
                if overflowed or fraction > (2**63 - 1) // 10:
                    overflowed = True
                    continue
                fraction, scale = fraction * 10 + int(digit), scale * 10
            rest = rest[fraction_digits:]
        if not whole_text and not has_fraction:
            raise ValueError(invalid)
        unit_length = 0
        while unit_length < len(rest) and not (rest[unit_length] == "." or rest[unit_length] in "0123456789"):
            unit_length += 1
        if unit_length == 0:
            raise ValueError(f"time: missing unit in duration {_go_quote(original)}")
        unit, rest = rest[:unit_length], rest[unit_length:]
        if unit not in _DURATION_UNITS_NS:
            raise ValueError(f"time: unknown unit {_go_quote(unit)} in duration {_go_quote(original)}")
        unit_ns = _DURATION_UNITS_NS[unit]
        if whole > 2**63 // unit_ns:
            raise ValueError(invalid)
        value = whole * unit_ns
        if fraction > 0:
            value += int(float(fraction) * (float(unit_ns) / scale))
            if value > 2**63:
                raise ValueError(invalid)
        total += value
        if total > 2**63:
            raise ValueError(invalid)
    if negative:
        return -total
    if total > 2**63 - 1:
        raise ValueError(invalid)
    return total


def format_go_duration(nanoseconds: int) -> str:
    """time.Duration.String(), e.g. 60s -> `1m0s`, 1.5ms -> `1.5ms`."""
    if nanoseconds == 0:
        return "0s"
    sign, magnitude = ("-" if nanoseconds < 0 else ""), abs(nanoseconds)

    def fraction(value: int, digits: int) -> str:
        text = str(value).rjust(digits, "0")[-digits:].rstrip("0")
        return f".{text}" if text else ""

    if magnitude < 1_000_000_000:
        for limit, unit, digits in ((1_000, "ns", 0), (1_000_000, "\u00b5s", 3), (1_000_000_000, "ms", 6)):
            if magnitude < limit:
                scale = 10**digits
                return (
                    f"{sign}{magnitude // scale}{fraction(magnitude % scale, digits) if digits else ''}{unit}"
                )
    seconds, nanos = divmod(magnitude, 1_000_000_000)
    text = f"{seconds % 60}{fraction(nanos, 9)}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


# --------------------------------------------------------------------------------------------------------
# The decoder: encoding/json into the v1 structs, with the custom unmarshalers of replicas.go/resources.go
# --------------------------------------------------------------------------------------------------------

_FieldDecoder = Callable[[object, object, str], object]
"""(JSON value, current Go value, path) -> new Go value; decoding merges into the current value like
encoding/json does when a key appears twice."""


def _json_int(value: object, go_type: str, path: str, *, unsigned: bool = False) -> int:
    """A JSON number into a Go integer: the literal must parse (no fraction, no exponent, in range)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        literal = _go_json_number(value)
        parsed = _go_parse_uint(literal, 10) if unsigned else _go_parse_int(literal, 10)
        if parsed is not None:
            return parsed
        raise DevicePluginConfigError(
            f"json: cannot unmarshal number {literal} into Go value of type {go_type}", path
        )
    raise _type_error(value, go_type, path)


def _string_pointer(value: object, current: object, path: str) -> object:
    if value is None or isinstance(value, str):
        return value
    raise _type_error(value, "string", path)


def _bool_pointer(value: object, current: object, path: str) -> object:
    if value is None or isinstance(value, bool):
        return value
    raise _type_error(value, "bool", path)


def _bool_value(value: object, current: object, path: str) -> object:
    return current if value is None else _bool_pointer(value, current, path)


def _device_list_strategy(value: object, current: object, path: str) -> object:
    """deviceListStrategyFlag.UnmarshalJSON: one string or a list of strings (a null item becomes "")."""
    if value is None or isinstance(value, str):
        return None if value is None else (value,)
    if isinstance(value, list) and all(item is None or isinstance(item, str) for item in value):
        return tuple(item or "" for item in value)
    raise DevicePluginConfigError(f"invalid deviceListStrategy: {_go_json_text(value)}", path)


def _int_list(value: object, current: object, path: str) -> object:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _type_error(value, "[]int", path)
    return tuple(
        0 if item is None else _json_int(item, "int", f"{path}[{i}]") for i, item in enumerate(value)
    )


def _resource_name(value: object, path: str) -> str:
    """ResourceName.UnmarshalJSON: a JSON string (null counts as "") run through NewResourceName."""
    if value is not None and not isinstance(value, str):
        raise _type_error(value, "string", path)
    try:
        return qualify_resource_name(value or "")
    except DevicePluginConfigError as exc:
        raise DevicePluginConfigError(exc.reason, path) from exc


def _raw_map(value: object, path: str) -> dict[str, object]:
    """What a custom unmarshaler gets from `json.Unmarshal(b, &map[string]json.RawMessage{})`: null is an
    empty map, anything but an object is a type error. Keys are looked up case-sensitively from here on."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(value, "map[string]json.RawMessage", path)
    return value


def _missing_key_hint(raw: Mapping[str, object], key: str) -> str:
    near = [k for k in raw if _go_fold(k) == _go_fold(key)]
    return f" (found {near[0]!r}: keys here are case-sensitive)" if near else ""


@dataclass
class _Decoder:
    plugin_version: str
    warnings: list[str] = field(default_factory=list)

    def has(self, release: str) -> bool:
        return _since(self.plugin_version, release)

    def later_keys(self, keys_by_release: Mapping[str, Iterable[str]]) -> dict[str, str]:
        """{key: the release that introduced it} for the keys this version does not know yet."""
        return {
            key: release for release, keys in keys_by_release.items() if not self.has(release) for key in keys
        }

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}" if path else message)

    # plain structs -------------------------------------------------------------------------------------

    def plain_struct(
        self,
        value: object,
        fields: Mapping[str, _FieldDecoder],
        state: dict[str, object],
        path: str,
        go_type: str,
        later: Mapping[str, str] | None = None,
    ) -> dict[str, object]:
        """encoding/json into a struct: keys in sorted order (json.Marshal sorted them), exact match first,
        else case-insensitive; the last key matching a field wins; unknown keys are ignored (`later` names
        the keys a later plugin release knows, for a more helpful warning)."""
        if value is None:
            return state
        if not isinstance(value, dict):
            raise _type_error(value, go_type, path or None)
        later = later or {}
        matched: dict[str, list[str]] = {}
        for key in sorted(value):
            child_path = _join(path, key)
            name = key if key in fields else next((f for f in fields if _go_fold(f) == _go_fold(key)), None)
            if name is None:
                later_name = next((f for f in later if _go_fold(f) == _go_fold(key)), None)
                if later_name is not None:
                    self.warn(
                        child_path,
                        f"'{later_name}' needs plugin {later[later_name]} or later; "
                        f"{self.plugin_version} ignores it",
                    )
                else:
                    self.warn(child_path, "unknown key, ignored by the plugin")
                continue
            if name != key:
                self.warn(child_path, f"matched '{name}' case-insensitively; write '{name}'")
            matched.setdefault(name, []).append(key)
            state[name] = fields[name](value[key], state.get(name), child_path)
        for name, keys in matched.items():
            if len(keys) > 1:
                self.warn(
                    _join(path, name),
                    f"set by {len(keys)} keys ({', '.join(keys)}); the plugin keeps the last in sorted order, "
                    f"'{keys[-1]}'",
                )
        return state

    def struct_pointer(
        self, fields: Mapping[str, _FieldDecoder], go_type: str, later: Mapping[str, str] | None = None
    ) -> _FieldDecoder:
        def decode(value: object, current: object, path: str) -> object:
            if value is None:
                return None
            state = dict(current) if isinstance(current, dict) else dict.fromkeys(fields)
            return self.plain_struct(value, fields, state, path, go_type, later)

        return decode

    def struct_value(
        self, fields: Mapping[str, _FieldDecoder], go_type: str, later: Mapping[str, str] | None = None
    ) -> _FieldDecoder:
        def decode(value: object, current: object, path: str) -> object:
            state = dict(current) if isinstance(current, dict) else {}
            return self.plain_struct(value, fields, state, path, go_type, later)

        return decode

    # the document --------------------------------------------------------------------------------------

    def config(self, document: object) -> DevicePluginConfig:
        plugin_fields: dict[str, _FieldDecoder] = {
            "passDeviceSpecs": _bool_pointer,
            "deviceListStrategy": _device_list_strategy,
            "deviceIDStrategy": _string_pointer,
            "cdiAnnotationPrefix": _string_pointer,
            "nvidiaCTKPath": _string_pointer,
            "containerDriverRoot": _string_pointer,
        }
        gfd_fields: dict[str, _FieldDecoder] = {
            "oneshot": _bool_pointer,
            "noTimestamp": _bool_pointer,
            "sleepInterval": self.duration,
            "outputFile": _string_pointer,
            "machineTypeFile": _string_pointer,
        }
        flag_fields: dict[str, _FieldDecoder] = {
            "migStrategy": _string_pointer,
            "failOnInitError": _bool_pointer,
            "nvidiaDriverRoot": _string_pointer,
            "gdsEnabled": _bool_pointer,
            "mofedEnabled": _bool_pointer,
        }
        sharing_fields: dict[str, _FieldDecoder] = {"timeSlicing": self.time_slicing}
        config_fields: dict[str, _FieldDecoder] = {"version": self.version}
        if self.has(_MPS_ERA):
            flag_fields.update(
                mpsRoot=_string_pointer,
                nvidiaDevRoot=_string_pointer,
                useNodeFeatureAPI=_bool_pointer,
                deviceDiscoveryStrategy=_string_pointer,
            )
            sharing_fields["mps"] = self.mps
            config_fields["imex"] = self.struct_value(
                {"channelIDs": _int_list, "required": _bool_value}, "v1.Imex"
            )
        if self.has(_ALLOCATION_POLICY_ERA):
            flag_fields["gdrcopyEnabled"] = _bool_pointer
            plugin_fields["sharedDevicesAllocationPolicy"] = _string_pointer
        # Keys of later releases are unknown (ignored) to earlier ones, but get a warning of their own.
        mps_era_flags = ("mpsRoot", "nvidiaDevRoot", "useNodeFeatureAPI", "deviceDiscoveryStrategy")
        flag_fields["plugin"] = self.struct_pointer(
            plugin_fields,
            "v1.PluginCommandLineFlags",
            self.later_keys({_ALLOCATION_POLICY_ERA: ["sharedDevicesAllocationPolicy"]}),
        )
        flag_fields["gfd"] = self.struct_pointer(gfd_fields, "v1.GFDCommandLineFlags")
        config_fields["flags"] = self.struct_value(
            flag_fields,
            "v1.Flags",
            self.later_keys({_MPS_ERA: mps_era_flags, _ALLOCATION_POLICY_ERA: ["gdrcopyEnabled"]}),
        )
        config_fields["resources"] = self.struct_value(
            {"gpus": self.resource_patterns, "mig": self.resource_patterns}, "v1.Resources"
        )
        config_fields["sharing"] = self.struct_value(
            sharing_fields, "v1.Sharing", self.later_keys({_MPS_ERA: ["mps"]})
        )
        top_level_later = self.later_keys({_MPS_ERA: ["imex"]})

        if document is None:  # an empty file: JSON null leaves the zero Config
            document = {}
        if not isinstance(document, dict):
            raise _type_error(document, "v1.Config", None)
        state = self.plain_struct(document, config_fields, {}, "", "v1.Config", top_level_later)

        version = state.get("version") or API_VERSION
        if version != API_VERSION:
            raise DevicePluginConfigError(f"unknown version: {version}", "version")
        return self.build_model(state)

    def duration(self, value: object, current: object, path: str) -> object:
        """Duration.UnmarshalJSON: a number of nanoseconds or a Go duration string (`infinite` from 0.20.0)."""
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, str):
            if value == "infinite" and self.has(_ALLOCATION_POLICY_ERA):
                return INFINITE_DURATION_NS
            try:
                return parse_go_duration(value)
            except ValueError as exc:
                raise DevicePluginConfigError(str(exc), path) from exc
        raise DevicePluginConfigError("invalid duration", path)

    def version(self, value: object, current: object, path: str) -> object:
        """Config.Version is the one string field sigs.k8s.io/yaml coerces YAML numbers and booleans into."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return _go_format_float32_g(value)
        if value is None:
            return current
        return _string_pointer(value, current, path)

    def resource_patterns(self, value: object, current: object, path: str) -> object:
        """[]Resource, each through Resource.UnmarshalJSON (pattern and name required)."""
        if value is None:
            return ()
        if not isinstance(value, list):
            raise _type_error(value, "[]v1.Resource", path)
        entries = []
        for index, item in enumerate(value):
            item_path = f"{path}[{index}]"
            raw = _raw_map(item, item_path)
            for key in ("pattern", "name"):
                if key not in raw:
                    raise DevicePluginConfigError(
                        f"resources must have a '{key}' field set{_missing_key_hint(raw, key)}", item_path
                    )
            self.warn_unknown_keys(raw, ("pattern", "name"), item_path)
            pattern = raw["pattern"]
            if pattern is not None and not isinstance(pattern, str):
                raise _type_error(pattern, "v1.ResourcePattern", f"{item_path}.pattern")
            name = _resource_name(raw["name"], f"{item_path}.name")
            entries.append(ResourcePattern(pattern=pattern or "", name=name))
        return tuple(entries)

    def time_slicing(self, value: object, current: object, path: str) -> object:
        # A non-pointer struct with UnmarshalJSON: even `timeSlicing: null` reaches the method.
        return self.replicated_resources(value, path)

    def mps(self, value: object, current: object, path: str) -> object:
        # A pointer: null leaves it nil, so MPS stays off.
        if value is None:
            return None
        section = self.replicated_resources(value, path)
        if section["failRequestsGreaterThanOne"] is None:
            section["failRequestsGreaterThanOne"] = True  # NewConfig's default for MPS (0.20.0)
        return section

    def replicated_resources(self, value: object, path: str) -> dict[str, object]:
        """ReplicatedResources.UnmarshalJSON (replicas.go)."""
        raw = _raw_map(value, path)
        known = ("renameByDefault", "failRequestsGreaterThanOne", "resources")
        flags: dict[str, bool | None] = {}
        for key in known[:2]:
            flag = raw.get(key, False)
            if flag is not None and not isinstance(flag, bool):
                raise _type_error(flag, "bool", _join(path, key))
            flags[key] = bool(flag)
        if self.has(_ALLOCATION_POLICY_ERA):
            # A *bool from 0.20.0: absent and null both leave it unset.
            flag = raw.get("failRequestsGreaterThanOne")
            flags["failRequestsGreaterThanOne"] = flag if isinstance(flag, bool) else None
        if "resources" not in raw:
            raise DevicePluginConfigError(
                f"no resources specified{_missing_key_hint(raw, 'resources')}", path
            )
        self.warn_unknown_keys(raw, known, path)
        resources_path = _join(path, "resources")
        items = raw["resources"]
        if items is not None and not isinstance(items, list):
            raise _type_error(items, "[]v1.ReplicatedResource", resources_path)
        resources = [
            self.replicated_resource(item, f"{resources_path}[{i}]") for i, item in enumerate(items or [])
        ]
        if not resources:
            raise DevicePluginConfigError("no resources specified", resources_path)
        return {**flags, "resources": resources}

    def replicated_resource(self, value: object, path: str) -> dict[str, object]:
        """ReplicatedResource.UnmarshalJSON: name, devices, replicas, rename, in that order."""
        raw = _raw_map(value, path)
        if "name" not in raw:
            raise DevicePluginConfigError(f"no resource name specified{_missing_key_hint(raw, 'name')}", path)
        name = _resource_name(raw["name"], _join(path, "name"))
        devices = self.devices(raw["devices"], _join(path, "devices")) if "devices" in raw else "all"
        if "replicas" not in raw:
            raise DevicePluginConfigError(f"no replicas specified{_missing_key_hint(raw, 'replicas')}", path)
        replicas_path = _join(path, "replicas")
        replicas = 0 if raw["replicas"] is None else _json_int(raw["replicas"], "int", replicas_path)
        if replicas < 2:
            raise DevicePluginConfigError("number of replicas must be >= 2", replicas_path)
        rename = _resource_name(raw["rename"], _join(path, "rename")) if "rename" in raw else None
        self.warn_unknown_keys(raw, ("name", "devices", "replicas", "rename"), path)
        return {"name": name, "replicas": replicas, "devices": devices, "rename": rename}

    def devices(self, value: object, path: str) -> Devices:
        """ReplicatedDevices.UnmarshalJSON: tries a string, then an int, then a list."""
        if value is None or isinstance(value, str):
            text = value or ""
            if text != "all":
                raise DevicePluginConfigError(
                    f"devices set as '{text}' but the only valid string input is 'all'", path
                )
            return "all"
        if isinstance(value, int | float) and not isinstance(value, bool):
            count = _go_parse_int(_go_json_number(value), 10)
            if count is not None:
                if count <= 0:
                    raise DevicePluginConfigError(
                        f"devices set as '{count}' but a count of devices must be > 0", path
                    )
                return count
        if not isinstance(value, list):
            raise DevicePluginConfigError(f"unrecognized type for devices spec: {_go_json_text(value)}", path)
        references = []
        for index, item in enumerate(value):
            if item is None:  # json null into a uint leaves it 0
                references.append("0")
                continue
            if isinstance(item, int | float) and not isinstance(item, bool):
                gpu_index = _go_parse_uint(_go_json_number(item), 10)
                if gpu_index is not None:
                    references.append(str(gpu_index))
                    continue
            if isinstance(item, str) and is_device_reference(item):
                references.append(item)
                continue
            shown = item if isinstance(item, str) else ""
            raise DevicePluginConfigError(
                f"unsupported type for device in devices list: {shown}, string", f"{path}[{index}]"
            )
        return tuple(references)

    def warn_unknown_keys(self, raw: Mapping[str, object], known: Sequence[str], path: str) -> None:
        for key in sorted(raw):
            if key not in known:
                hint = next(
                    (
                        f"; did you mean '{k}'? keys here are case-sensitive"
                        for k in known
                        if _go_fold(k) == _go_fold(key)
                    ),
                    "",
                )
                self.warn(_join(path, key), f"unknown key, ignored by the plugin{hint}")

    # the model -----------------------------------------------------------------------------------------

    def build_model(self, state: Mapping[str, Any]) -> DevicePluginConfig:
        flags = state.get("flags") or {}
        plugin, gfd = flags.get("plugin"), flags.get("gfd")
        sharing = state.get("sharing") or {}
        resources = state.get("resources") or {}
        imex = state.get("imex") or {}
        config = DevicePluginConfig(
            flags=Flags(
                mig_strategy=flags.get("migStrategy"),
                fail_on_init_error=flags.get("failOnInitError"),
                mps_root=flags.get("mpsRoot"),
                nvidia_driver_root=flags.get("nvidiaDriverRoot"),
                nvidia_dev_root=flags.get("nvidiaDevRoot"),
                gdrcopy_enabled=flags.get("gdrcopyEnabled"),
                gds_enabled=flags.get("gdsEnabled"),
                mofed_enabled=flags.get("mofedEnabled"),
                use_node_feature_api=flags.get("useNodeFeatureAPI"),
                device_discovery_strategy=flags.get("deviceDiscoveryStrategy"),
                plugin=_none_if_empty(
                    PluginFlags(
                        pass_device_specs=plugin.get("passDeviceSpecs"),
                        device_list_strategy=plugin.get("deviceListStrategy"),
                        device_id_strategy=plugin.get("deviceIDStrategy"),
                        cdi_annotation_prefix=plugin.get("cdiAnnotationPrefix"),
                        nvidia_ctk_path=plugin.get("nvidiaCTKPath"),
                        container_driver_root=plugin.get("containerDriverRoot"),
                        shared_devices_allocation_policy=plugin.get("sharedDevicesAllocationPolicy"),
                    )
                )
                if plugin
                else None,
                gfd=_none_if_empty(
                    GfdFlags(
                        oneshot=gfd.get("oneshot"),
                        no_timestamp=gfd.get("noTimestamp"),
                        sleep_interval_ns=gfd.get("sleepInterval"),
                        output_file=gfd.get("outputFile"),
                        machine_type_file=gfd.get("machineTypeFile"),
                    )
                )
                if gfd
                else None,
            ),
            resources=Resources(gpus=resources.get("gpus") or (), mig=resources.get("mig") or ()),
            sharing=Sharing(
                time_slicing=_replicated_model(sharing.get("timeSlicing")),
                mps=_replicated_model(sharing.get("mps")),
            ),
            imex=Imex(channel_ids=imex.get("channelIDs") or (), required=bool(imex.get("required"))),
        )
        self.warn_runtime_ignored(config)
        return config

    def warn_runtime_ignored(self, config: DevicePluginConfig) -> None:
        """What the plugin parses but drops at start-up (DisableResourceNamingInConfig) or never uses."""
        if config.resources.gpus or config.resources.mig:
            self.warn("resources", "customizing 'resources' is not supported by the plugin; ignored")
        sections = (("timeSlicing", config.sharing.time_slicing), ("mps", config.sharing.mps))
        for section, replicated in sections:
            if replicated is None:
                continue
            path = f"sharing.{section}.resources"
            seen: dict[str, int] = {}
            for index, resource in enumerate(replicated.resources):
                default_rename = resource.name + SHARED_RESOURCE_SUFFIX
                if resource.rename is not None and not (
                    replicated.rename_by_default and resource.rename == default_rename
                ):
                    effective = default_rename if replicated.rename_by_default else resource.name
                    self.warn(
                        f"{path}[{index}].rename",
                        f"'rename' is not supported by the plugin; ignored (advertised as '{effective}')",
                    )
                if resource.devices != "all":
                    self.warn(
                        f"{path}[{index}].devices",
                        "'devices' is not supported by the plugin; ignored (all devices are shared)",
                    )
                if resource.name in seen:
                    self.warn(
                        f"{path}[{index}].name",
                        f"duplicate of {path}[{seen[resource.name]}] ('{resource.name}'); the plugin processes "
                        "both, the larger replica count takes effect and GFD labels show the first",
                    )
                seen.setdefault(resource.name, index)
        if config.sharing.mps is not None:
            if config.sharing.time_slicing is not None:
                self.warn("sharing.timeSlicing", "ignored: 'mps' takes precedence over 'timeSlicing'")
            if not config.sharing.mps.fail_requests_greater_than_one and not self.has(_ALLOCATION_POLICY_ERA):
                self.warn(
                    "sharing.mps.failRequestsGreaterThanOne",
                    f"plugin {self.plugin_version} forces this to true for MPS (0.20.0 honours false)",
                )


_FlagGroup = TypeVar("_FlagGroup", PluginFlags, GfdFlags)


def _none_if_empty(model: _FlagGroup) -> _FlagGroup | None:
    """`plugin: {}` and no `plugin` mean the same to the plugin; keep one form so render round-trips."""
    return None if all(v is None for v in model.model_dump().values()) else model


def _replicated_model(state: Mapping[str, Any] | None) -> ReplicatedResources | None:
    if state is None:
        return None
    return ReplicatedResources(
        rename_by_default=state["renameByDefault"],
        fail_requests_greater_than_one=state["failRequestsGreaterThanOne"],
        resources=tuple(ReplicatedResource(**r) for r in state["resources"]),
    )


# --------------------------------------------------------------------------------------------------------
# Flags: defaults, CLI/env overrides, and validateFlags
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FlagSpec:
    name: str
    """Config-file key (under `flags`, or `flags.plugin` when `in_plugin`)."""
    attribute: str
    """Attribute on Flags/PluginFlags and EffectiveFlags."""
    kind: Literal["string", "bool", "string_list"]
    default: object
    cli_names: tuple[str, ...]
    env_names: tuple[str, ...]
    in_plugin: bool = False
    newer_only: bool = False


def _flag_specs(plugin_version: str) -> tuple[_FlagSpec, ...]:
    """The plugin's CLI flags that map onto the config file (cmd/nvidia-device-plugin/main.go per tag)."""
    newer = _since(plugin_version, _MPS_ERA)
    specs = [
        _FlagSpec("migStrategy", "mig_strategy", "string", "none", ("mig-strategy",), ("MIG_STRATEGY",)),
        _FlagSpec(
            "failOnInitError",
            "fail_on_init_error",
            "bool",
            True,
            ("fail-on-init-error",),
            ("FAIL_ON_INIT_ERROR",),
        ),
        _FlagSpec(
            "nvidiaDriverRoot",
            "nvidia_driver_root",
            "string",
            "/",
            ("driver-root", "nvidia-driver-root") if newer else ("nvidia-driver-root",),
            ("NVIDIA_DRIVER_ROOT",),
        ),
        _FlagSpec("gdsEnabled", "gds_enabled", "bool", False, ("gds-enabled",), ("GDS_ENABLED",)),
        _FlagSpec("mofedEnabled", "mofed_enabled", "bool", False, ("mofed-enabled",), ("MOFED_ENABLED",)),
        _FlagSpec(
            "passDeviceSpecs",
            "pass_device_specs",
            "bool",
            False,
            ("pass-device-specs",),
            ("PASS_DEVICE_SPECS",),
            in_plugin=True,
        ),
        _FlagSpec(
            "deviceListStrategy",
            "device_list_strategy",
            "string_list",
            ("envvar",),
            ("device-list-strategy",),
            ("DEVICE_LIST_STRATEGY",),
            in_plugin=True,
        ),
        _FlagSpec(
            "deviceIDStrategy",
            "device_id_strategy",
            "string",
            "uuid",
            ("device-id-strategy",),
            ("DEVICE_ID_STRATEGY",),
            in_plugin=True,
        ),
        _FlagSpec(
            "cdiAnnotationPrefix",
            "cdi_annotation_prefix",
            "string",
            "cdi.k8s.io/",
            ("cdi-annotation-prefix",),
            ("CDI_ANNOTATION_PREFIX",),
            in_plugin=True,
        ),
        _FlagSpec(
            "nvidiaCTKPath",
            "nvidia_ctk_path",
            "string",
            "/usr/bin/nvidia-ctk",
            ("nvidia-cdi-hook-path", "nvidia-ctk-path") if newer else ("nvidia-ctk-path",),
            ("NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH") if newer else ("NVIDIA_CTK_PATH",),
            in_plugin=True,
        ),
        _FlagSpec(
            "containerDriverRoot",
            "container_driver_root",
            "string",
            "/driver-root",
            ("driver-root-ctr-path", "container-driver-root") if newer else ("container-driver-root",),
            ("DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT") if newer else ("CONTAINER_DRIVER_ROOT",),
            in_plugin=True,
        ),
    ]
    if newer:
        specs += [
            _FlagSpec("mpsRoot", "mps_root", "string", "", ("mps-root",), ("MPS_ROOT",), newer_only=True),
            # No CLI default: NewConfig falls back to the driver root when this ends up empty.
            _FlagSpec(
                "nvidiaDevRoot",
                "nvidia_dev_root",
                "string",
                "",
                ("dev-root", "nvidia-dev-root"),
                ("NVIDIA_DEV_ROOT",),
                newer_only=True,
            ),
            _FlagSpec(
                "deviceDiscoveryStrategy",
                "device_discovery_strategy",
                "string",
                "auto",
                ("device-discovery-strategy",),
                ("DEVICE_DISCOVERY_STRATEGY",),
                newer_only=True,
            ),
        ]
    if _since(plugin_version, _ALLOCATION_POLICY_ERA):
        specs += [
            _FlagSpec(
                "gdrcopyEnabled",
                "gdrcopy_enabled",
                "bool",
                False,
                ("gdrcopy-enabled",),
                ("GDRCOPY_ENABLED",),
                newer_only=True,
            ),
            _FlagSpec(
                "sharedDevicesAllocationPolicy",
                "shared_devices_allocation_policy",
                "string",
                "distributed",
                ("shared-devices-allocation-policy",),
                ("SHARED_DEVICES_ALLOCATION_POLICY",),
                in_plugin=True,
                newer_only=True,
            ),
        ]
    return tuple(specs)


# CLI flags of the plugin that do not map onto the config file; known so that they are not "undefined".
_OTHER_CLI_FLAGS: dict[str, dict[str, str]] = {
    "0.14.5": {"config-file": "string", "help": "bool", "h": "bool", "version": "bool", "v": "bool"},
    "0.17.1": {
        "config-file": "string",
        "kubelet-socket": "string",
        "imex-channel-ids": "string",
        "imex-required": "bool",
        "help": "bool",
        "h": "bool",
        "version": "bool",
        "v": "bool",
    },
    "0.20.0": {
        "config-file": "string",
        "kubelet-socket": "string",
        "imex-channel-ids": "string",
        "imex-required": "bool",
        "cdi-feature-flags": "string",
        "cdi-disable-hooks": "string",
        "help": "bool",
        "h": "bool",
        "version": "bool",
        "v": "bool",
    },
}


def _check_plugin_version(plugin_version: str) -> None:
    if plugin_version not in PLUGIN_VERSIONS:
        raise GpushareError(
            f"unsupported device-plugin version {plugin_version!r}; known: {', '.join(PLUGIN_VERSIONS)}"
        )


def _flag_path(spec: _FlagSpec) -> str:
    return f"flags.plugin.{spec.name}" if spec.in_plugin else f"flags.{spec.name}"


def _normalise_overrides(overrides: Mapping[str, object], plugin_version: str) -> dict[str, object]:
    """Accepts config-file flag names (`migStrategy`, `deviceListStrategy` or `plugin.deviceListStrategy`)."""
    specs = {spec.name: spec for spec in _flag_specs(plugin_version)}
    normalised: dict[str, object] = {}
    for key, value in overrides.items():
        name = key.removeprefix("plugin.")
        spec = specs.get(name)
        if spec is None or (key.startswith("plugin.") and not spec.in_plugin):
            raise GpushareError(
                f"unknown device-plugin {plugin_version} flag override {key!r}; known: {', '.join(specs)}"
            )
        if spec.kind == "bool" and not isinstance(value, bool):
            raise GpushareError(f"flag override {key!r} must be a bool, got {value!r}")
        if spec.kind == "string" and not isinstance(value, str):
            raise GpushareError(f"flag override {key!r} must be a string, got {value!r}")
        if spec.kind == "string_list":
            if isinstance(value, str):
                value = (value,)
            elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
                value = tuple(value)
            else:
                raise GpushareError(
                    f"flag override {key!r} must be a string or a list of strings, got {value!r}"
                )
        normalised[name] = value
    return normalised


def _go_parse_bool(text: str) -> bool | None:
    """strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def flag_overrides(
    args: Sequence[str] = (), env: Mapping[str, str] | None = None, plugin_version: str = "0.14.5"
) -> dict[str, object]:
    """The config-file flags that a device-plugin container's `args` and `env` set, CLI winning over env
    (urfave/cli v2 semantics: a set env var counts even when empty; a string-slice flag splits on commas;
    flag parsing stops at the first non-flag argument). The result feeds `overrides=` of `parse` and
    `effective_flags`. Raises GpushareError where the plugin itself would refuse its command line."""
    _check_plugin_version(plugin_version)
    specs = _flag_specs(plugin_version)
    by_cli_name = {name: spec for spec in specs for name in spec.cli_names}
    other_flags = _OTHER_CLI_FLAGS[plugin_version]
    overrides: dict[str, object] = {}

    for spec in specs:
        env_name = next((n for n in spec.env_names if env is not None and n in env), None)
        if env_name is None or env is None:
            continue
        raw = env[env_name]
        if spec.kind == "bool":
            parsed = _go_parse_bool(raw) if raw else False
            if parsed is None:
                raise GpushareError(
                    f"could not parse {raw!r} as bool value from environment variable {env_name!r}"
                )
            overrides[spec.name] = parsed
        elif spec.kind == "string_list":
            overrides[spec.name] = tuple(part.strip() for part in raw.split(","))
        else:
            overrides[spec.name] = raw

    from_cli: dict[str, object] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            break  # Go's flag package stops at the first positional argument
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if not name or name[0] in "-=":
            raise GpushareError(f"bad flag syntax: {arg}")
        name, has_value, value = name.partition("=")
        cli_spec = by_cli_name.get(name)
        kind = cli_spec.kind if cli_spec is not None else other_flags.get(name)
        if kind is None:
            raise GpushareError(f"flag provided but not defined: -{name}")
        if kind == "bool":
            parsed_bool = _go_parse_bool(value) if has_value else True
            if parsed_bool is None:
                raise GpushareError(f"invalid boolean value {value!r} for -{name}")
            if cli_spec is not None:
                from_cli[cli_spec.name] = parsed_bool
            continue
        if not has_value:
            if index >= len(args):
                raise GpushareError(f"flag needs an argument: -{name}")
            value, index = args[index], index + 1
        if cli_spec is None:
            continue
        if cli_spec.kind == "string_list":
            # Repeated list flags accumulate; the first CLI value discards the env value.
            previous = from_cli.get(cli_spec.name, ())
            assert isinstance(previous, tuple)
            from_cli[cli_spec.name] = (*previous, *value.split(","))
        else:
            from_cli[cli_spec.name] = value
    overrides.update(from_cli)
    return overrides


def effective_flags(
    config: DevicePluginConfig,
    overrides: Mapping[str, object] | None = None,
    *,
    plugin_version: str = "0.14.5",
    chart_supplies_mps_root: bool = False,
) -> EffectiveFlags:
    """The flags the plugin runs with: an override (CLI > env, see `flag_overrides`) beats the file, which
    beats the CLI default (`updateFromCLIFlag`: the default applies only where the file left a flag unset).

    `chart_supplies_mps_root` models the v0.17.1 chart, which always sets MPS_ROOT (an env var, so it beats
    the file); by default nothing supplies it and the file's `flags.mpsRoot` must."""
    return _resolve_flags(config, overrides, plugin_version, chart_supplies_mps_root)[0]


def _resolve_flags(
    config: DevicePluginConfig,
    overrides: Mapping[str, object] | None,
    plugin_version: str,
    chart_supplies_mps_root: bool,
) -> tuple[EffectiveFlags, frozenset[str]]:
    """The effective flags and the names of the flags whose value came from an override."""
    _check_plugin_version(plugin_version)
    normalised = _normalise_overrides(overrides or {}, plugin_version)
    if chart_supplies_mps_root and _since(plugin_version, _MPS_ERA):
        normalised.setdefault("mpsRoot", CHART_MPS_ROOT)
    plugin_flags = config.flags.plugin or PluginFlags()
    values: dict[str, object] = {}
    replaced: list[FlagOverride] = []
    for spec in _flag_specs(plugin_version):
        file_value = getattr(plugin_flags if spec.in_plugin else config.flags, spec.attribute)
        if spec.name in normalised:
            values[spec.attribute] = normalised[spec.name]
            if file_value is not None:
                replaced.append(
                    FlagOverride(name=spec.name, file_value=file_value, effective_value=normalised[spec.name])
                )
        else:
            values[spec.attribute] = spec.default if file_value is None else file_value
    if _since(plugin_version, _MPS_ERA) and not values["nvidia_dev_root"]:
        values["nvidia_dev_root"] = values["nvidia_driver_root"]
    values["overridden"] = tuple(replaced)
    return EffectiveFlags.model_validate(values), frozenset(normalised)


def _check_flags(
    config: DevicePluginConfig, flags: EffectiveFlags, plugin_version: str, overridden: Iterable[str]
) -> None:
    """validateFlags (and, for 0.14.5, the MIG-strategy check of NewPluginManager), in upstream order."""
    from_override = set(overridden)
    specs = {spec.name: spec for spec in _flag_specs(plugin_version)}

    def fail(flag: str, reason: str) -> DevicePluginConfigError:
        suffix = " (value from a CLI/env override)" if flag in from_override else ""
        return DevicePluginConfigError(reason + suffix, _flag_path(specs[flag]))

    allowed_lists = _device_list_strategies(plugin_version)
    for strategy in flags.device_list_strategy:
        if strategy not in allowed_lists:
            raise fail(
                "deviceListStrategy", f"invalid --device-list-strategy option: invalid strategy: {strategy}"
            )
    if flags.device_id_strategy not in DEVICE_ID_STRATEGIES:
        raise fail("deviceIDStrategy", f"invalid --device-id-strategy option: {flags.device_id_strategy}")
    policy = flags.shared_devices_allocation_policy
    if policy is not None and policy not in SHARED_DEVICES_ALLOCATION_POLICIES:
        raise fail(
            "sharedDevicesAllocationPolicy", f"invalid --shared-devices-allocation-policy option: {policy}"
        )
    if not _since(plugin_version, _MPS_ERA):
        if flags.mig_strategy not in MIG_STRATEGIES:
            raise fail("migStrategy", f"unknown strategy: {flags.mig_strategy}")
        return
    if config.sharing.mps is not None:
        if flags.mig_strategy == "mixed":
            raise DevicePluginConfigError(
                "using --mig-strategy=mixed is not supported with MPS", "sharing.mps"
            )
        if not flags.mps_root:
            raise fail("mpsRoot", "using MPS requires --mps-root to be specified")
    if flags.device_discovery_strategy not in DEVICE_DISCOVERY_STRATEGIES:
        raise fail(
            "deviceDiscoveryStrategy",
            f"invalid --device-discovery-strategy option {flags.device_discovery_strategy}",
        )
    if flags.mig_strategy not in MIG_STRATEGIES:
        raise fail("migStrategy", f"unknown MIG strategy: {flags.mig_strategy}")
    channel_ids = config.imex.channel_ids
    if channel_ids not in ((), (0,)):
        found = "[" + " ".join(str(i) for i in channel_ids) + "]"
        raise DevicePluginConfigError(
            f"invalid IMEX channel IDs: invalid IMEX config: channelIDs must be [] or [0]; found {found}",
            "imex.channelIDs",
        )


# --------------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------------


def parse(
    text: str,
    plugin_version: str = "0.14.5",
    *,
    overrides: Mapping[str, object] | None = None,
    chart_supplies_mps_root: bool = False,
) -> ParseResult:
    """Parse and validate a config file as plugin `plugin_version` does at start-up, with no CLI flags or
    env vars unless `overrides` says otherwise (they can make a file valid: MIG_STRATEGY=single rescues
    `migStrategy: bogus`). Raises DevicePluginConfigError exactly when the plugin would refuse to start,
    and YamlTooDeepError (no verdict) for nesting deeper than this checker follows."""
    _check_plugin_version(plugin_version)
    try:
        document = _load_first_document(text)
        decoder = _Decoder(plugin_version)
        config = decoder.config(_to_json_values(document, ""))
    except RecursionError:  # JSON input, or our own walks, deeper than Python follows
        raise YamlTooDeepError() from None
    flags, overridden = _resolve_flags(config, overrides, plugin_version, chart_supplies_mps_root)
    _check_flags(config, flags, plugin_version, overridden)
    return ParseResult(
        config=config, warnings=decoder.warnings, plugin_version=plugin_version, effective_flags=flags
    )


def validate_config(
    config: DevicePluginConfig,
    plugin_version: str = "0.14.5",
    *,
    overrides: Mapping[str, object] | None = None,
    chart_supplies_mps_root: bool = False,
) -> ParseResult:
    """Check a model (e.g. one built by hand) by rendering it and parsing it back."""
    return parse(
        render(config), plugin_version, overrides=overrides, chart_supplies_mps_root=chart_supplies_mps_root
    )


class _GoSafeDumper(yaml.SafeDumper):
    """Quotes every string that go-yaml v2 *or* PyYAML would read as something else (`y`, `1e3`, `on`)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            go_tag = _go_yaml_resolve_plain(value)[0]
            if go_tag != _STR_TAG:
                return go_tag
        return super().resolve(kind, value, implicit)


def _render_replicated(replicated: ReplicatedResources) -> dict[str, object]:
    resources = []
    for resource in replicated.resources:
        entry: dict[str, object] = {"name": resource.name, "replicas": resource.replicas}
        if resource.devices != "all":
            entry["devices"] = (
                list(resource.devices) if isinstance(resource.devices, tuple) else resource.devices
            )
        if resource.rename is not None:
            entry["rename"] = resource.rename
        resources.append(entry)
    return _set_fields(
        [
            ("renameByDefault", replicated.rename_by_default),
            ("failRequestsGreaterThanOne", replicated.fail_requests_greater_than_one),
            ("resources", resources),
        ]
    )


def _set_fields(pairs: Iterable[tuple[str, object]]) -> dict[str, object]:
    return {key: value for key, value in pairs if value is not None}


def render(config: DevicePluginConfig) -> str:
    """Deterministic YAML: version, flags (Go struct order, set fields only), resources, sharing, imex."""
    flags = config.flags
    plugin, gfd = flags.plugin, flags.gfd
    plugin_doc = (
        _set_fields(
            [
                ("passDeviceSpecs", plugin.pass_device_specs),
                (
                    "deviceListStrategy",
                    None
                    if plugin.device_list_strategy is None
                    else (
                        plugin.device_list_strategy[0]
                        if len(plugin.device_list_strategy) == 1
                        else list(plugin.device_list_strategy)
                    ),
                ),
                ("deviceIDStrategy", plugin.device_id_strategy),
                ("cdiAnnotationPrefix", plugin.cdi_annotation_prefix),
                ("nvidiaCTKPath", plugin.nvidia_ctk_path),
                ("containerDriverRoot", plugin.container_driver_root),
                ("sharedDevicesAllocationPolicy", plugin.shared_devices_allocation_policy),
            ]
        )
        if plugin
        else {}
    )
    gfd_doc = (
        _set_fields(
            [
                ("oneshot", gfd.oneshot),
                ("noTimestamp", gfd.no_timestamp),
                (
                    "sleepInterval",
                    None if gfd.sleep_interval_ns is None else format_go_duration(gfd.sleep_interval_ns),
                ),
                ("outputFile", gfd.output_file),
                ("machineTypeFile", gfd.machine_type_file),
            ]
        )
        if gfd
        else {}
    )
    flags_doc = _set_fields(
        [
            ("migStrategy", flags.mig_strategy),
            ("failOnInitError", flags.fail_on_init_error),
            ("mpsRoot", flags.mps_root),
            ("nvidiaDriverRoot", flags.nvidia_driver_root),
            ("nvidiaDevRoot", flags.nvidia_dev_root),
            ("gdrcopyEnabled", flags.gdrcopy_enabled),
            ("gdsEnabled", flags.gds_enabled),
            ("mofedEnabled", flags.mofed_enabled),
            ("useNodeFeatureAPI", flags.use_node_feature_api),
            ("deviceDiscoveryStrategy", flags.device_discovery_strategy),
            ("plugin", plugin_doc or None),
            ("gfd", gfd_doc or None),
        ]
    )
    document: dict[str, object] = {"version": config.version}
    if flags_doc:
        document["flags"] = flags_doc
    resources = _set_fields(
        [
            ("gpus", [r.model_dump() for r in config.resources.gpus] or None),
            ("mig", [r.model_dump() for r in config.resources.mig] or None),
        ]
    )
    if resources:
        document["resources"] = resources
    sharing = _set_fields(
        [
            ("timeSlicing", config.sharing.time_slicing and _render_replicated(config.sharing.time_slicing)),
            ("mps", config.sharing.mps and _render_replicated(config.sharing.mps)),
        ]
    )
    if sharing:
        document["sharing"] = sharing
    if config.imex.channel_ids or config.imex.required:
        document["imex"] = _set_fields(
            [
                ("channelIDs", list(config.imex.channel_ids) or None),
                ("required", config.imex.required or None),
            ]
        )
    return yaml.dump(
        document, Dumper=_GoSafeDumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def time_slicing_config(
    resources: Sequence[tuple[str, int]],
    mig_strategy: str,
    fail_requests_greater_than_one: bool = True,
    rename_by_default: bool = False,
) -> DevicePluginConfig:
    """A time-slicing config both plugin versions accept. Names are qualified like the plugin does
    (`gpu` -> `nvidia.com/gpu`). Raises DevicePluginConfigError for anything the plugin would refuse
    (replicas < 2, no resources, a bad name or MIG strategy)."""
    draft = DevicePluginConfig(
        flags=Flags(mig_strategy=mig_strategy),
        sharing=Sharing(
            time_slicing=ReplicatedResources(
                rename_by_default=rename_by_default,
                fail_requests_greater_than_one=fail_requests_greater_than_one,
                resources=tuple(
                    ReplicatedResource(name=name, replicas=replicas) for name, replicas in resources
                ),
            )
        ),
    )
    return _validated_for_all_versions(draft)


def exclusive_config(mig_strategy: str) -> DevicePluginConfig:
    """No sharing: every device is advertised once."""
    return _validated_for_all_versions(DevicePluginConfig(flags=Flags(mig_strategy=mig_strategy)))


def _validated_for_all_versions(draft: DevicePluginConfig) -> DevicePluginConfig:
    parsed = [validate_config(draft, version).config for version in PLUGIN_VERSIONS]
    return parsed[0]


def advertised_resources(config: DevicePluginConfig) -> list[AdvertisedResource]:
    """The shared resources the plugin advertises, in file order, one per name.

    Per-resource `rename` and `devices` are ignored at run time, so the name is `<name>.shared` when
    `renameByDefault` is true, else the name itself, and then GFD suffixes the product label with `-SHARED`.
    MPS (0.17.1) takes precedence over time-slicing. Duplicated names count once with the larger replica
    count. A name the node does not have (e.g. `nvidia.com/mig-*` without MIG mixed) is skipped at run time."""
    if config.sharing.mps is not None:
        strategy: Literal["time-slicing", "mps"] = "mps"
        replicated = config.sharing.mps
    elif config.sharing.time_slicing is not None:
        strategy, replicated = "time-slicing", config.sharing.time_slicing
    else:
        return []
    replicas_by_name: dict[str, int] = {}
    for resource in replicated.resources:
        replicas_by_name[resource.name] = max(resource.replicas, replicas_by_name.get(resource.name, 0))
    return [
        AdvertisedResource(
            name=name + SHARED_RESOURCE_SUFFIX if replicated.rename_by_default else name,
            replicas=replicas,
            product_label_suffix="" if replicated.rename_by_default else SHARED_PRODUCT_LABEL_SUFFIX,
            source_name=name,
            sharing_strategy=strategy,
        )
        for name, replicas in replicas_by_name.items()
    ]


def _decode_file_bytes(data: bytes) -> str:
    """go-yaml accepts UTF-8 (optionally with a BOM) and UTF-16 with a BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DevicePluginConfigError(
            "error converting YAML to JSON: yaml: invalid leading UTF-8 octet"
        ) from exc


class _ManifestLoader(AliasRecordingComposer, yaml.SafeLoader):
    """Kubernetes manifests: plain YAML, bounded like config files."""


@dataclass(frozen=True)
class _ConfigMapFile:
    """The ConfigMaps of a manifest file (`name` is `namespace/name` when the namespace is set)."""

    config_maps: list[tuple[str, Mapping[str, object]]]
    skipped: list[str]


def _manifest_of(text: str) -> _ConfigMapFile | None:
    """The ConfigMaps of `text` when it is a Kubernetes manifest (its first document has `apiVersion` and
    `kind`); None when it is not one (then it is a config file). Raises GpushareError for a manifest that
    cannot be read past its first document."""
    try:
        documents = iter_documents(_ManifestLoader, text)
        first = next(documents, None)
    except (yaml.YAMLError, YamlBoundError, YamlTooDeepError, ValueError):
        return None  # not a manifest; the config-file parser gives the verdict
    if not (isinstance(first, dict) and isinstance(first.get("apiVersion"), str) and "kind" in first):
        return None
    found = _ConfigMapFile([], [])
    index = 0
    try:
        for index, document in enumerate(itertools.chain([first], documents)):  # noqa: B007
            fields: dict[Any, Any] = document if isinstance(document, dict) else {}
            items = fields.get("items")  # `kubectl get ... -o yaml` of several objects: a List
            for item in items if fields.get("kind") == "List" and isinstance(items, list) else [document]:
                if item is not None:
                    _collect_config_map(item, found)
    except (yaml.YAMLError, YamlBoundError, ValueError) as exc:
        problem = _yaml_problem(exc) if isinstance(exc, yaml.YAMLError) else str(exc)
        raise GpushareError(f"manifest document {index + 2}: not readable YAML: {problem}") from None
    return found


def _collect_config_map(document: object, found: _ConfigMapFile) -> None:
    fields: dict[Any, Any] = document if isinstance(document, dict) else {}
    metadata = fields.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = "/".join(str(metadata[k]) for k in ("namespace", "name") if metadata.get(k)) or "(unnamed)"
    kind = fields.get("kind")
    if kind != "ConfigMap":
        found.skipped.append(f"{kind or 'a non-object'} {name}")
        return
    data = fields.get("data")
    found.config_maps.append((name, data if isinstance(data, dict) else {}))


def _validate_text(
    text: str, where: str, plugin_version: str, overrides: Mapping[str, object], out: TextIO, err: TextIO
) -> int:
    try:
        result = parse(text, plugin_version, overrides=overrides)
    except DevicePluginConfigError as exc:
        out.write(f"{where}: invalid: {exc}\n")
        return 1
    except GpushareError as exc:  # nesting beyond what is checked: no verdict
        err.write(f"{where}: error: {exc}\n")
        return 2
    warnings = list(result.warnings)
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        warnings.append("empty: the plugin starts with its defaults (no sharing)")
    for warning in warnings:
        err.write(f"{where}: warning: {warning}\n")
    out.write(f"{where}: valid\n")
    return 0


def _validate_file(
    path: str, plugin_version: str, overrides: Mapping[str, object], out: TextIO, err: TextIO
) -> int:
    try:
        text = _decode_file_bytes(read_bytes(path))
        manifest = _manifest_of(text)
    except DevicePluginConfigError as exc:  # not UTF-8: the plugin refuses such a file
        out.write(f"{path}: invalid: {exc}\n")
        return 1
    except GpushareError as exc:
        err.write(f"{exc}\n" if exc.source else f"{path}: error: {exc}\n")
        return 2
    if manifest is None:
        return _validate_text(text, path, plugin_version, overrides, out, err)
    for skipped in manifest.skipped:
        err.write(f"{path}: warning: {skipped} is not a ConfigMap; not checked\n")
    if not manifest.config_maps:
        err.write(f"{path}: error: a Kubernetes manifest without a ConfigMap; nothing to validate\n")
        return 2
    status = 0
    for name, entries in manifest.config_maps:
        # One ConfigMap in the file: `FILE: data.<key>`; several: `FILE: ConfigMap <name> data.<key>`.
        where_map = f"{path}: " if len(manifest.config_maps) == 1 else f"{path}: ConfigMap {name} "
        if not entries:
            err.write(f"{path}: error: ConfigMap {name} has no data keys; nothing to validate\n")
            status = 2
            continue
        for key, value in entries.items():
            where = f"{where_map}data.{key}"
            if not isinstance(value, str):
                out.write(f"{where}: invalid: not a string (ConfigMap data values are strings)\n")
                status = max(status, 1)
                continue
            status = max(status, _validate_text(value, where, plugin_version, overrides, out, err))
    return status


def run_validate_cli(
    paths: Sequence[str], plugin_version: str, out: TextIO, err: TextIO, *, mps_root: str | None = None
) -> int:
    """`gpushare validate device-plugin-config FILE...`: one line per file on `out` (`FILE: valid` or
    `FILE: invalid: <field>: <reason>`), warnings and errors on `err`. A Kubernetes manifest is read for its
    ConfigMaps, each `data` value judged as a config file (`FILE: data.<key>: valid`). `mps_root` judges
    files as NVIDIA's charts run them (they set MPS_ROOT). Exit 0 all valid, 1 any invalid, 2 any
    unreadable, too big or too deeply nested (or an unknown plugin version)."""
    if plugin_version not in PLUGIN_VERSIONS:
        err.write(
            f"error: unsupported device-plugin version {plugin_version!r}; known: {', '.join(PLUGIN_VERSIONS)}\n"
        )
        return 2
    overrides: dict[str, object] = {}
    if mps_root is not None:
        if not _since(plugin_version, _MPS_ERA):
            err.write(f"error: --mps-root: plugin {plugin_version} has no MPS (0.17.1 and later do)\n")
            return 2
        overrides["mpsRoot"] = mps_root
    status = 0
    for path in paths:
        status = max(status, _validate_file(path, plugin_version, overrides, out, err))
    return status
