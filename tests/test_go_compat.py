"""gpushare/device_plugin/go_compat.py's durations against Go's time.ParseDuration and Duration.String
(the plugin reads its config's durations with them). Expected values from Go's documentation and
arithmetic: 1 us = 1 000 ns, 1 ms = 10^6 ns, 2h45m = 9 900 s."""

from __future__ import annotations

import pytest

from gpushare.device_plugin.go_compat import format_go_duration, parse_go_duration


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("1500us", 1_500_000),
        ("1\u00b5s", 1_000),  # MICRO SIGN, as Go accepts
        ("1\u03bcs", 1_000),  # GREEK SMALL LETTER MU, likewise
        ("1.5ms", 1_500_000),
        ("300ms", 300_000_000),
        ("2h45m", 9_900_000_000_000),
        ("-1.5h", -5_400_000_000_000),
        ("0", 0),
        ("7ns", 7),
    ],
)
def test_parse_go_duration(text: str, nanoseconds: int) -> None:
    assert parse_go_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [(0, "0s"), (1, "1ns"), (1500, "1.5\u00b5s"), (1_500_000, "1.5ms"), (9_900_000_000_000, "2h45m0s")],
)
def test_format_go_duration(nanoseconds: int, text: str) -> None:
    assert format_go_duration(nanoseconds) == text
