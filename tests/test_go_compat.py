"""gpushare/device_plugin/go_compat.py's durations against Go's time.ParseDuration and Duration.String
(the plugin reads its config's durations with them). Expected values from Go's documentation and
arithmetic: 1 us = 1 000 ns, 1 ms = 10^6 ns, 2h45m = 9 900 s."""

from __future__ import annotations

import pytest

from gpushare.device_plugin.go_compat import (
    format_go_duration,
    go_json_text,
    load_go_yaml_document,
    parse_go_duration,
)


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


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        # Go's time.Duration.String() moves to the next unit at exactly 1000 of the smaller one:
        # Duration(999).String() == "999ns", Duration(1000) == "1µs", Duration(1e6) == "1ms", Duration(1e9) == "1s".
        (999, "999ns"),
        (1_000, "1\u00b5s"),
        (999_999, "999.999\u00b5s"),
        (1_000_000, "1ms"),
        (1_000_000_000, "1s"),
    ],
)
def test_format_go_duration_changes_unit_at_exactly_a_thousand(nanoseconds: int, text: str) -> None:
    assert format_go_duration(nanoseconds) == text


def test_a_message_quotes_text_as_go_json_writes_it_utf8_kept_html_escaped() -> None:
    # encoding/json writes non-ASCII as UTF-8 bytes (no \u escape) and escapes <, > and & as \u003c etc.:
    # json.Marshal("显卡<é>&") is "\"显卡\u003cé\u003e\u0026\"".
    assert go_json_text("显卡<é>&") == '"显卡\\u003cé\\u003e\\u0026"'
    assert go_json_text({"模型": ["T4"]}) == '{"模型":["T4"]}'


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # go-yaml v2 resolve() tries strconv.ParseInt(plain, 0, 64) first (which reads a 0b prefix after
        # the sign), then for a `-0b` scalar strconv.ParseInt("-" + rest, 2, 64): a digit other than 0/1
        # fails both, so the scalar stays a string. In base 3, "-2" would be the int -2.
        ("x: -0b101", -5),  # -(4 + 1)
        ("x: 0b101", 5),
        ("x: -0b2", "-0b2"),
        ("x: -0b12", "-0b12"),
    ],
)
def test_binary_integers_in_a_go_yaml_document(text: str, value: object) -> None:
    assert load_go_yaml_document(text) == {"x": value}
