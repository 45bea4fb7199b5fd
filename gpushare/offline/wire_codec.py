"""The resource monitor's wire format: protobuf Structs to plain Python and back (`decode_struct`,
`encode_struct`), with secrets unwrapped into engine property paths, unknowns as `UNKNOWN` and resource
references as `ResourceRef`.

The wire format is decoded here on purpose instead of with `pulumi.runtime.rpc.deserialize_properties`:
that function rehydrates resource references into live `Resource` objects and hangs when called from
a monitor worker (reproduced with Helm v3 `Chart`, whose outputs hold references).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from google.protobuf import struct_pb2  # type: ignore[import-untyped]  # no stubs installed

from gpushare.offline import wire
from gpushare.offline.recorded import UNKNOWN, ResourceRef, is_unknown

UNKNOWN_WIRE: Final = wire.UNKNOWN
"""The engine's unknown sentinel; decoded, it becomes `UNKNOWN`."""
_MAX_EXACT_DOUBLE: Final = 2**53


def _requires_quote(char: str) -> bool:
    return not (char.isascii() and (char.isalnum() or char == "_"))


def property_path(prefix: str, key: str) -> str:
    # Same rendering as the engine's PropertyPath.String().
    if any(_requires_quote(char) for char in key):
        escaped = key.replace('"', '\\"')
        return f'{prefix}["{escaped}"]'
    return f"{prefix}.{key}" if prefix else key


def _path_index(prefix: str, index: int) -> str:
    return f"{prefix}[{index}]"


def decode_struct(struct: struct_pb2.Struct) -> tuple[dict[str, Any], list[str]]:
    """Decode a wire Struct into plain Python, returning it and the paths of the secrets inside.

    Keys are sorted: protobuf maps have no order, and sorted keys make recordings deterministic.
    """
    secret_paths: list[str] = []
    decoded = {
        key: _decode_value(struct.fields[key], property_path("", key), secret_paths)
        for key in sorted(struct.fields)
    }
    return decoded, secret_paths


def _decode_value(value: struct_pb2.Value, path: str, secret_paths: list[str]) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        # Numbers cross the wire as doubles; give integral ones back as int so manifests read right.
        if number.is_integer() and abs(number) <= _MAX_EXACT_DOUBLE:
            return int(number)
        return number
    if kind == "string_value":
        return UNKNOWN if value.string_value == UNKNOWN_WIRE else value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "list_value":
        return [
            _decode_value(item, _path_index(path, index), secret_paths)
            for index, item in enumerate(value.list_value.values)
        ]
    if kind == "struct_value":
        return _decode_object(value.struct_value, path, secret_paths)
    return None  # null_value, or an unset Value


def _decode_object(struct: struct_pb2.Struct, path: str, secret_paths: list[str]) -> Any:
    fields = struct.fields
    signature = fields[wire.SIG_KEY].string_value if wire.SIG_KEY in fields else None
    if signature == wire.SECRET_SIG:
        secret_paths.append(path)
        return _decode_value(fields["value"], path, secret_paths) if "value" in fields else None
    if signature == wire.RESOURCE_SIG:
        reference = ResourceRef(urn=fields["urn"].string_value)
        if "id" in fields:
            resource_id = _decode_value(fields["id"], path, secret_paths)
            reference["id"] = resource_id if isinstance(resource_id, str) else ""
        return reference
    if signature == wire.OUTPUT_VALUE_SIG:  # only sent when the monitor supports outputValues (ours does not)
        if "secret" in fields and fields["secret"].bool_value:
            secret_paths.append(path)
        return _decode_value(fields["value"], path, secret_paths) if "value" in fields else UNKNOWN
    # Plain objects; assets/archives keep their signature key, so they re-encode unchanged.
    return {key: _decode_value(fields[key], property_path(path, key), secret_paths) for key in sorted(fields)}


def encode_struct(values: Mapping[str, Any], secret_paths: Collection[str] = ()) -> struct_pb2.Struct:
    """Encode plain Python (as `decode_struct` returns it) for the program; values at `secret_paths`
    are wrapped as secrets again."""
    struct = struct_pb2.Struct()
    struct.update(
        {
            str(key): _to_wire(value, property_path("", str(key)), secret_paths)
            for key, value in values.items()
        }
    )
    return struct


def _to_wire(value: Any, path: str, secret_paths: Collection[str]) -> Any:
    encoded: Any
    if is_unknown(value):
        encoded = UNKNOWN_WIRE
    elif isinstance(value, ResourceRef):
        encoded = {wire.SIG_KEY: wire.RESOURCE_SIG, **value}
    elif isinstance(value, Mapping):
        encoded = {str(k): _to_wire(v, property_path(path, str(k)), secret_paths) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        encoded = [_to_wire(item, _path_index(path, index), secret_paths) for index, item in enumerate(value)]
    elif value is None or isinstance(value, (bool, int, float, str)):
        encoded = value
    else:
        raise TypeError(
            f"cannot send {type(value).__name__} at {path or '<root>'!r} to the program: "
            "mocks must return JSON-like values (dict, list, str, int, float, bool, None, UNKNOWN, ResourceRef)"
        )
    if path in secret_paths:
        return wire.secret(encoded)
    return encoded
