"""gpushare/yaml_bounds.py `shape_problem`: the size and depth bound of a parsed document (stack and fleet
files). The walk meets scalars and containers it has already sized on its way; neither may end it early."""

from __future__ import annotations

from typing import Any

from gpushare.yaml_bounds import shape_problem


def _nested(levels: int) -> list[Any]:
    inner: list[Any] = []
    for _ in range(levels - 1):
        inner = [inner]
    return inner


def test_a_too_deep_value_after_a_scalar_is_still_found() -> None:
    # The walk takes the last value first: `z: 1` is met before the five-level list under `deep`, which is
    # one level past max_depth 5 counting the mapping itself (mapping 1, then lists 2..6).
    document = {"deep": _nested(5), "z": 1}
    assert shape_problem(document, max_values=100, max_depth=5) == "nested more than 5 levels deep"
    assert shape_problem(document, max_values=100, max_depth=6) is None


def test_a_container_met_twice_is_sized_once_and_the_walk_goes_on() -> None:
    # `shared` (3 values: the list and its two items) appears twice, after a list of two lists of 50:
    # 1 (mapping) + 103 (`wide`: 1 + 2 x (1 + 50)) + 3 + 3 (`shared`, at each place it appears) = 110.
    shared = [1, 2]
    document = {"wide": [[0] * 50, [0] * 50], "a": shared, "b": shared}
    assert shape_problem(document, max_values=110, max_depth=10) is None
    assert shape_problem(document, max_values=109, max_depth=10) == (
        "expands to more than 109 values (YAML aliases referring to aliases)"
    )
