"""policies/gpushare_policies/props.py: how the pack reads the scalars the engine hands it.

The engine's values cross a protobuf Struct: numbers arrive as doubles (8 as 8.0), and the kubernetes
provider's inputs carry booleans as strings ("true"), so each reader takes those shapes and nothing else.
"""

from __future__ import annotations

import pytest

from gpushare_policies.props import UNKNOWN, boolean, dig, integer


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("false", False),
        ("True", True),  # case is ignored
        ("FALSE", False),
        ("yes", None),  # YAML 1.1's booleans are not the provider's: no verdict
        ("", None),
        (1, None),
        (None, None),
    ],
)
def test_boolean_reads_bools_and_their_strings_only(value: object, expected: bool | None) -> None:
    assert boolean(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8, 8), (8.0, 8), (0.0, 0), (-2.0, -2), (8.5, None), (True, None), ("8", None), (None, None)],
)
def test_integer_reads_whole_numbers_as_the_struct_gives_them(value: object, expected: int | None) -> None:
    assert integer(value) == expected
    assert type(integer(value)) is type(expected)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("items", 0, "name"), "a"),
        (("items", 1, "name"), "b"),
        (("items", -1, "name"), "b"),  # counted from the end, as Python and the pack's readers do
        (("items", -2, "name"), "a"),
        (("items", 2, "name"), None),  # one past the end: missing, not an IndexError
        (("items", -3, "name"), None),  # one before the start
        (("items", "0"), None),  # a key into a list
        (("items", 0, 0), None),  # an index into a mapping
        (("missing", "deeper"), None),
        (("unknown", "deeper", 0), UNKNOWN),  # not known yet (preview) is not "not set"
    ],
)
def test_dig_finds_a_value_or_says_missing_or_unknown(path: tuple[str | int, ...], expected: object) -> None:
    value = {"items": [{"name": "a"}, {"name": "b"}], "unknown": UNKNOWN}
    assert dig(value, *path) == expected
