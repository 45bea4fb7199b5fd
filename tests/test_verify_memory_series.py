"""gpushare/verify/memory_series.py: a Prometheus `/api/v1/query` vector item is read only when it is
`{"metric": {...}, "value": [time, "number"]}` (Prometheus' HTTP API, "Instant vectors"); anything else is
one PageError, which verify turns into a warning (tests/test_memory_budget.py meets it through the CLI)."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.verify.memory_series import PageError, vector_samples


def _answer(item: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": [item]}}


@pytest.mark.parametrize(
    "item",
    [
        {"metric": {"gpu": "0"}, "value": [1764633600.0]},  # one cell short
        {"metric": {"gpu": "0"}, "value": [1764633600.0, "4608", "4608"]},  # one cell more
        {"metric": {"gpu": "0"}, "value": "12"},  # two characters, no list
        {"metric": {"gpu": "0"}, "value": None},
        {"metric": ["gpu"], "value": [1764633600.0, "4608"]},
        "4608",
    ],
    ids=["time-only", "three-cells", "string", "null", "metric-list", "no-mapping"],
)
def test_a_vector_item_that_is_not_metric_and_time_value_is_refused(item: Any) -> None:
    with pytest.raises(PageError) as caught:
        vector_samples(_answer(item), "DCGM_FI_DEV_FB_USED")
    assert caught.value.message == "a Prometheus vector item without metric and [time, value]"


def test_a_well_formed_item_is_read() -> None:
    (sample,) = vector_samples(_answer({"metric": {"gpu": "0"}, "value": [1764633600.0, "4608"]}), "m")
    assert (sample.name, dict(sample.labels), sample.value) == ("m", {"gpu": "0"}, 4608.0)
