"""Reading the engine's resource properties defensively.

The engine hands a pack camelCase properties in which, during preview, any value may be unknown; the
SDK wraps them in proxies that raise `UnknownValueError` on access. A rule that let that escape would be
skipped as a whole ("can't run policy during preview"), so every resource is first copied into plain
dicts and lists (`plain`) with unknowns replaced by the `UNKNOWN` marker; the accessors below then
return `None` for anything absent, unknown or of the wrong type, and rules skip what they cannot judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pulumi.runtime import rpc
from pulumi_policy import Secret
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

# The wire form of a secret (pulumi/sdk/go/common/resource/properties.go), as the Python SDK defines it.
# The SDK unwraps it before `validate` sees the props; a driver that does not would show it as this envelope.
SECRET_SIGNATURE_KEY: Final[str] = rpc._special_sig_key
SECRET_SIGNATURE: Final[str] = rpc._special_secret_sig

_UNKNOWN_SENTINELS: Final = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)


class _Unknown:
    """A value the engine does not know yet (preview)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Final = _Unknown()


@dataclass(frozen=True)
class Resource:
    """One resource as every rule sees it: its type, URN, logical name and plain props."""

    type: str
    urn: str
    name: str
    props: dict[str, Any]


def from_engine(resource_type: str, urn: str, name: str, props: Mapping[str, Any]) -> Resource:
    """A `Resource` from what the SDK passes a validator (`args.props` or `PolicyResource.props`)."""
    plain_props = plain(props)
    return Resource(resource_type, urn, name, plain_props if isinstance(plain_props, dict) else {})


def is_secret_envelope(value: object) -> bool:
    return isinstance(value, Mapping) and value.get(SECRET_SIGNATURE_KEY) == SECRET_SIGNATURE


def raw_item(props: Mapping[str, Any], key: str) -> Any:
    """`props[key]` as the SDK passed it (secret envelopes kept), `UNKNOWN` when unknown, None if absent."""
    try:
        return props.get(key)
    except UnknownValueError:
        return UNKNOWN


def plain(value: object) -> Any:
    """A deep copy of `value` with proxies turned into dicts and lists, unknowns into `UNKNOWN` and
    secrets (SDK `Secret` objects or wire envelopes) into their values."""
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, str):
        return UNKNOWN if value in _UNKNOWN_SENTINELS else value
    if isinstance(value, Mapping):
        if is_secret_envelope(value):
            return plain(value.get("value"))
        copied: dict[str, Any] = {}
        for key in list(value):
            try:
                copied[str(key)] = plain(value[key])
            except UnknownValueError:
                copied[str(key)] = UNKNOWN
        return copied
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        elements: list[Any] = []
        for index in range(len(value)):
            try:
                elements.append(plain(value[index]))
            except UnknownValueError:
                elements.append(UNKNOWN)
        return elements
    return value


def dig(value: object, *path: str | int) -> Any:
    """`value[path[0]][path[1]]...`, or None where a step is missing or not a container. An unknown
    step yields `UNKNOWN`, so callers can tell "not set" from "not known yet"."""
    current: Any = value
    for step in path:
        if current is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int):
            if not isinstance(current, list) or not -len(current) <= step < len(current):
                return None
            current = current[step]
        else:
            if not isinstance(current, dict):
                return None
            current = current.get(step)
    return current


def text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def string_map(value: object) -> dict[str, str]:
    """The string entries of a map (labels, annotations, nodeSelector); unknown entries are left out."""
    return {k: v for k, v in mapping(value).items() if isinstance(v, str)}


def boolean(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    # Provider configs arrive as strings ("true"), as the kubernetes provider's inputs show.
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def integer(value: object) -> int | None:
    """Numbers cross the wire as doubles: 8 arrives as 8.0."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def resource_of(args: Any) -> Resource:
    """The resource a `ResourceValidationArgs` describes."""
    return from_engine(args.resource_type, args.urn, args.name, args.props)


def resources_of(args: Any) -> list[Resource]:
    """Every resource of a `StackValidationArgs` (their outputs, which for these types echo the inputs)."""
    return [from_engine(r.resource_type, r.urn, r.name, r.props) for r in args.resources]
