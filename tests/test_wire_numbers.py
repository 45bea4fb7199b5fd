"""gpushare/wire_numbers.py: whole numbers as the engine (doubles) and manifests (quoted) send them."""

from __future__ import annotations

import pytest

from gpushare.wire_numbers import whole_number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (1, 1),
        (8, 8),
        (8.0, 8),  # a Struct number: 8 crosses the wire as 8.0
        ("50", 50),  # a quoted manifest quantity
        ("0", 0),
    ],
)
def test_whole_numbers_in_every_shape_they_arrive(value: object, expected: int) -> None:
    assert whole_number(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        True,  # bool is an int subclass in Python, never a count here
        False,
        8.5,
        float("nan"),
        float("inf"),
        "8.0",
        "-1",
        " 8",
        "1e3",
        "1k",  # a Kubernetes suffix is not a whole number of GPUs or GiB
        "\u0668",  # ARABIC-INDIC DIGIT EIGHT: str.isdigit() says yes, int() would take it
        None,
        [8],
        {"value": 8},
    ],
)
def test_everything_else_is_none(value: object) -> None:
    assert whole_number(value) is None
