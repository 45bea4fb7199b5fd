"""pydantic's validation errors as the user reads them: one line per error, naming the file and the
`pulumi config set --path` key path (`gpushare:pools[1].sharing.measuredMiB: must be > 0`), with the
nearest known key for a misspelled one."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, get_args

from pydantic import (
    BaseModel,
    ValidationError,
)

from gpushare.stack import kube_syntax
from gpushare.stack.model import PROJECT, StackConfig
from gpushare.suggest import did_you_mean


def _describe(err: ValidationError, source: str) -> list[str]:
    lines = []
    details = err.errors()
    for detail in details:
        if detail["type"] == "too_short" and errors_below(detail["loc"], details):
            continue  # pydantic counts only the valid items: "needs at least 1" would be false
        loc: list[int | str] = list(detail["loc"])
        message = validation_message(detail)
        if detail["type"] == "extra_forbidden" and loc:
            message += did_you_mean(str(loc[-1]), _keys_beside(loc))
        if message.startswith("@"):
            subpath, message = message[1:].split("|", 1)
            loc += _subpath_parts(subpath)
        if detail["type"] in {"union_tag_invalid", "union_tag_not_found"}:
            loc.append("mode")  # the tag is what is wrong, not the whole `sharing` mapping
        lines.append(f"{source}: {_key_path(loc)}: {message}")
    return lines


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _keys_beside(loc: Sequence[int | str]) -> list[str]:
    """The keys the stack model allows where the key at `loc` was found (for "did you mean"); [] when the
    place is not one model's mapping (a dict of labels, say)."""
    candidates: list[type[BaseModel]] = [StackConfig]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an item of a list: the same model
        tagged = [
            m
            for m in candidates
            if "mode" in m.model_fields and part in get_args(m.model_fields["mode"].annotation)
        ]
        if len(candidates) > 1 and tagged:  # a discriminated union's tag (`sharing.time-slicing.<key>`)
            candidates = tagged
            continue
        if len(candidates) != 1:
            return []
        fields = candidates[0].model_fields
        field = next((f for name, f in fields.items() if part in (name, f.alias)), None)
        candidates = _models_in(field.annotation) if field is not None else []
    if len(candidates) != 1:
        return []
    return [field.alias or name for name, field in candidates[0].model_fields.items()]


def errors_below(loc: Sequence[int | str], details: Sequence[Mapping[str, Any]]) -> bool:
    """Whether another error sits inside `loc` (then pydantic's "needs at least 1 item" there is false)."""
    return any(len(d["loc"]) > len(loc) and tuple(d["loc"][: len(loc)]) == tuple(loc) for d in details)


_SUBPATH_PART = re.compile(r'\.?(?P<key>[^.\["]+)|\[(?P<index>\d+)\]|\[(?P<quoted>"(?:[^"\\]|\\.)*")\]')
# A map key that can be written after a dot in a `pulumi config set --path` path; others are quoted.
_is_plain_key = kube_syntax.anchored(r"[A-Za-z_][A-Za-z0-9_-]*")


def _subpath_parts(subpath: str) -> list[int | str]:
    """`sharing.migLayout`, `[1].effect`, `["nvidia.com/x"]` -> path parts (as `_at` writes them)."""
    parts: list[int | str] = []
    for match in _SUBPATH_PART.finditer(subpath):
        if match["index"] is not None:
            parts.append(int(match["index"]))
        elif match["quoted"] is not None:
            parts.append(json.loads(match["quoted"]))
        else:
            parts.append(match["key"])
    return parts


def _key_path(loc: Sequence[int | str]) -> str:
    parts = list(loc)
    # Discriminated unions put the tag in the path (`pools[0].sharing.time-slicing.measuredMiB`): drop it.
    # Only below a pool: the top-level `sharing` is no union, and its key `qgpu` is the add-on's settings.
    parts = [p for i, p in enumerate(parts) if not (i > 1 and parts[i - 1] == "sharing" and p in _MODES)]
    if not parts:
        return PROJECT
    if parts[0] == "region":
        return "tencentcloud:region"  # the one key of another namespace in the model
    text = f"{PROJECT}:{parts[0]}"
    for part in parts[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if _is_plain_key(part) else f"[{json.dumps(part)}]"
    return text


_MODES = {"time-slicing", "mps", "mig", "exclusive", "qgpu"}


def validation_message(detail: Mapping[str, Any]) -> str:
    """One pydantic error as the user reads it (`must be > 0`, `unknown key`, `must be one of ..., got ...`)."""
    kind = detail["type"]
    ctx = detail.get("ctx") or {}
    simple = {
        "greater_than": "must be > {gt}",
        "greater_than_equal": "must be >= {ge}",
        "less_than_equal": "must be <= {le}",
        "less_than": "must be < {lt}",
        "missing": "required",
        "extra_forbidden": "unknown key",
        "string_too_long": "at most {max_length} characters",
        "too_short": "needs at least {min_length} item(s)",
        "string_pattern_mismatch": "does not match {pattern}",
        "int_type": "must be an integer",
        "float_type": "must be a number",
        "finite_number": "must be a number, not NaN or infinity",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "dict_type": "must be a mapping",
        "tuple_type": "must be a list",
        "literal_error": "must be one of {expected}",
        "union_tag_invalid": "must be one of {expected_tags}",
        "union_tag_not_found": "needs `mode` (time-slicing, mps, mig, exclusive or qgpu)",
    }
    if kind in simple:
        plain = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}
        try:
            text = simple[kind].format(**plain)
        except KeyError:
            text = simple[kind]
        return text + _got(detail)
    message = str(detail["msg"])
    return message.removeprefix("Value error, ")


_QUOTED_CHOICE = re.compile(r"'([^']*)'")


def _got(detail: Mapping[str, Any]) -> str:
    """For a value outside a fixed set (a mode, an action): the value given and the nearest choice."""
    ctx = detail.get("ctx") or {}
    if detail["type"] == "literal_error":
        given, expected = detail.get("input"), str(ctx.get("expected", ""))
    elif detail["type"] == "union_tag_invalid":
        given, expected = ctx.get("tag"), str(ctx.get("expected_tags", ""))
    else:
        return ""
    if not isinstance(given, str):
        return f", got {json.dumps(given, default=str)}"
    return f", got {given!r}{did_you_mean(given, _QUOTED_CHOICE.findall(expected))}"
