"""Go compatibility rules the plugin's config reading rests on, independent of the config's schema:
go-yaml v2 scalar resolution and loading (YAML 1.1 `y`/`on` booleans, `1e3` floats, first document only),
the YAML->JSON step of sigs.k8s.io/yaml (string keys, no NaN/Inf), the JSON text encoding/json sees,
its case folding of keys, strconv integer/float parsing, and time.ParseDuration / Duration.String.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
from decimal import Decimal
from typing import Any

import yaml

from gpushare.device_plugin.model import DevicePluginConfigError
from gpushare.yaml_bounds import (
    AliasRecordingComposer,
    YamlBoundError,
    check_flow_depth,
    load_first_document,
)

# --------------------------------------------------------------------------------------------------------
# YAML with go-yaml v2 scalar rules
# --------------------------------------------------------------------------------------------------------

STR_TAG = "tag:yaml.org,2002:str"
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


def go_parse_uint(text: str, base: int) -> int | None:
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


def go_parse_int(text: str, base: int) -> int | None:
    """strconv.ParseInt(text, base, 64); None on any error."""
    sign = 1
    if text[:1] in ("+", "-"):
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    magnitude = go_parse_uint(text, base)
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


def go_yaml_resolve_plain(value: str) -> tuple[str, object]:
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
        integer = go_parse_int(plain, 0)
        if integer is None:
            integer = go_parse_uint(plain, 0)
        if integer is not None:
            return _INT_TAG, integer
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            number = _go_parse_float(plain)
            if number is not None:
                return _FLOAT_TAG, number
        if plain.startswith("0b"):
            integer = go_parse_int(plain[2:], 2)
            if integer is None:
                integer = go_parse_uint(plain[2:], 2)
            if integer is not None:
                return _INT_TAG, integer
        elif plain.startswith("-0b"):
            integer = go_parse_int("-" + plain[3:], 2)
            if integer is not None:
                return _INT_TAG, integer
    return STR_TAG, value


class _GoYamlLoader(AliasRecordingComposer, yaml.SafeLoader):
    """PyYAML's parser with go-yaml v2's scalar resolution, for untyped (interface{}) targets."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return go_yaml_resolve_plain(value)[0]
        return super().resolve(kind, value, implicit)

    def _scalar_as(self, node: yaml.ScalarNode, tag: str) -> object:
        raw = str(self.construct_scalar(node))
        resolved_tag, value = go_yaml_resolve_plain(raw)
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
_GoYamlLoader.add_constructor(STR_TAG, _GoYamlLoader.construct_go_string)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _GoYamlLoader.construct_go_string)
_GoYamlLoader.add_constructor("tag:yaml.org,2002:binary", _GoYamlLoader.construct_go_binary)
for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs", None):
    _GoYamlLoader.add_constructor(_tag, _GoYamlLoader.construct_by_kind)


def load_go_yaml_document(text: str) -> object:
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
        raise DevicePluginConfigError(f"error converting YAML to JSON: yaml: {yaml_problem(exc)}") from exc
    except YamlBoundError as exc:
        raise DevicePluginConfigError(f"error converting YAML to JSON: yaml: {exc.reason}") from None


_NOT_JSON = object()


def _load_json(text: str) -> object:
    """PyYAML rejects a tab between JSON tokens (go-yaml does not), so valid JSON is read with the json module;
    its numbers still resolve by go-yaml rules (beyond 64 bits a float, beyond float range a string)."""

    def reject_constant(name: str) -> object:
        raise ValueError(name)  # NaN/Infinity are not JSON; go-yaml reads them as plain strings

    def go_yaml_number(literal: str) -> object:
        return go_yaml_resolve_plain(literal)[1]

    try:
        return json.loads(
            text, parse_constant=reject_constant, parse_int=go_yaml_number, parse_float=go_yaml_number
        )
    except ValueError:
        return _NOT_JSON


def yaml_problem(exc: yaml.YAMLError) -> str:
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


def go_json_number(value: int | float) -> str:
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


def go_format_float32_g(value: float) -> str:
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


def go_json_text(value: object) -> str:
    """Compact JSON as Go writes it (sorted keys, HTML-escaped), for messages quoting raw input."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json_text(k)}:{go_json_text(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json_text(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return go_json_number(value)
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


def json_type_error(value: object, go_type: str, path: str | None) -> DevicePluginConfigError:
    return DevicePluginConfigError(
        f"json: cannot unmarshal {_json_kind(value)} into Go value of type {go_type}", path
    )


def to_json_values(node: object, path: str) -> object:
    """sigs.k8s.io/yaml's YAML->JSON step: map keys become strings (a null key is an error), and a NaN or
    infinity anywhere, even under an unknown key, makes json.Marshal fail."""
    if isinstance(node, dict):
        converted: dict[str, object] = {}
        for key, child in node.items():
            key_text = _json_key(key, child, path)
            converted[key_text] = to_json_values(child, join_path(path, key_text))
        return converted
    if isinstance(node, list):
        return [to_json_values(child, f"{path}[{i}]") for i, child in enumerate(node)]
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
        text = go_format_float32_g(key)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    if isinstance(key, str):
        return key
    # sigs.k8s.io/yaml formats this with Go's %s of a nil interface; v1.4.0 lower-cased the first word.
    raise DevicePluginConfigError(
        f"error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, "
        f"value: {go_json_text(value)}",
        path or None,
    )


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def go_fold(text: str) -> str:
    """The case folding encoding/json uses to match keys to struct fields: ASCII case, plus the two
    non-ASCII runes that fold to ASCII letters (long s, Kelvin sign)."""
    return text.lower().replace("\u017f", "s").replace("\u212a", "k")


# --------------------------------------------------------------------------------------------------------
# Durations: Go's time.ParseDuration and time.Duration.String
# --------------------------------------------------------------------------------------------------------

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
