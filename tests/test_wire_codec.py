"""gpushare.offline.wire_codec on its own: what the mocks may hand back to the program.

Outputs cross the gRPC boundary as a protobuf Struct: null, booleans, numbers (doubles; integral ones read
back as int), strings, lists and objects, plus the engine's unknown and secret/resource signatures
(pulumi/sdk/python/lib/pulumi/runtime/rpc.py). Anything else (a date, a set) has no wire form and is one
clear TypeError naming the property path, not a protobuf error from deep inside `Struct.update`.
"""

from __future__ import annotations

import datetime

import pytest

from gpushare.offline.wire_codec import decode_struct, encode_struct


def test_json_like_values_and_null_round_trip() -> None:
    values = {
        "none": None,
        "flag": True,
        "count": 2,
        "ratio": 1.5,
        "name": "l20",
        "list": [None, 1],
        "map": {},
    }
    assert decode_struct(encode_struct(values)) == (values, [])


def test_a_secret_path_is_wrapped_again() -> None:
    decoded, secret_paths = decode_struct(encode_struct({"data": {"token": "Zq7#kP"}}, ["data.token"]))
    assert (decoded, secret_paths) == ({"data": {"token": "Zq7#kP"}}, ["data.token"])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"measuredAt": datetime.date(2025, 6, 1)}, "cannot send date at 'measuredAt' to the program"),
        ({"spec": {"nodes": {"a", "b"}}}, "cannot send set at 'spec.nodes' to the program"),
        ({"items": [object()]}, "cannot send object at 'items[0]' to the program"),
    ],
)
def test_a_value_without_a_wire_form_is_one_type_error(values: dict[str, object], message: str) -> None:
    with pytest.raises(TypeError) as caught:
        encode_struct(values)
    assert str(caught.value) == (
        f"{message}: mocks must return JSON-like values (dict, list, str, int, float, bool, None, UNKNOWN, "
        "ResourceRef)"
    )
