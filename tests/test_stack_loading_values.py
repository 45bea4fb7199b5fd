"""gpushare/stack/loading.py's `from_config_values` on values that no stack file can hold but a caller
(the program's config, the hosted component, a test) can hand over: bytes, sets, complex numbers,
arbitrary objects, mappings with keys that are not strings. Each is refused as an input, named by its
key, in the loader's one-line-per-problem form; none escapes as a TypeError. And `measuredAt` read as a
calendar day, whether it is exactly a date's length or a longer date-time.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.stack.fields import measurement_date
from gpushare.stack.loading import from_config_values

CLUSTER = {"id": "cls-a1", "vpcId": "vpc-a1", "subnetIds": ["subnet-a1"], "kubernetesVersion": "1.30"}
HINT = "(a config value is a string, number, boolean, null, list or mapping)"


class Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (b"4621", "cannot pass bytes as config"),
        ({"l20", "t4"}, "cannot pass set as config"),
        (1 + 2j, "cannot pass complex as config"),
        (Opaque(), "cannot pass Opaque as config"),
        ([{"name": "l20", "gpu": b"L20"}], "cannot pass bytes as config"),
        ({("l20",): 1}, "keys must be str, int, float, bool or None, not tuple"),
    ],
)
def test_a_value_no_config_can_hold_is_refused_as_an_input(value: Any, why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        from_config_values(
            {"gpushare:cluster": CLUSTER, "gpushare:pools": value}, stack="prod", source="Pulumi.prod.yaml"
        )
    assert caught.value.message == f"Pulumi.prod.yaml: gpushare:pools: {why} {HINT}"


def test_dates_and_date_times_are_passed_on_as_the_cli_would() -> None:
    # YAML reads an unquoted 2025-06-01 as a date; it passes as "2025-06-01", not as a problem.
    with pytest.raises(ConfigError) as caught:
        from_config_values(
            {"gpushare:cluster": {**CLUSTER, "id": date(2025, 6, 1)}}, stack="prod", source="Pulumi.prod.yaml"
        )
    assert "cannot pass" not in caught.value.message
    assert caught.value.message.startswith("Pulumi.prod.yaml: gpushare:cluster.id: ")


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2025-06-01", date(2025, 6, 1)),  # exactly a date's 10 characters
        ("2025-06-01T23:30", date(2025, 6, 1)),  # a date-time: its own calendar day
        ("2025-06-01T23:30:00-05:00", date(2025, 6, 1)),  # the day as written, not moved to UTC
        ("2025-06-01 08:00:00", date(2025, 6, 1)),
        ("20250601T08", date(2025, 6, 1)),  # 11 characters: ISO 8601's basic date and hour, a date-time
        ("2025-6-1", None),  # 8 characters, not ISO 8601
        ("2025-06-1x", None),  # 10 characters, not a date
        ("2025-06-31", None),  # no such day
        ("", None),
    ],
)
def test_measured_at_is_read_as_a_calendar_day(text: str, day: date | None) -> None:
    assert measurement_date(text) == day
    assert not isinstance(measurement_date(text), datetime)
