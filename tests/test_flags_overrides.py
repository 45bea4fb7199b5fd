"""gpushare/device_plugin/flags.py: the overrides that callers (the CLI's args/env reading, the program)
hand to `effective_flags` are checked by flag kind before they are merged with the file."""

from __future__ import annotations

import pytest

from gpushare.device_plugin import effective_flags, parse
from gpushare.errors import GpushareError


def test_a_string_list_override_with_one_non_string_is_refused() -> None:
    # deviceListStrategy is a string-slice flag: every entry must be a string, not just one of them.
    config = parse("version: v1\n", "0.20.0").config
    with pytest.raises(GpushareError) as refused:
        effective_flags(config, {"deviceListStrategy": ["envvar", 1]}, plugin_version="0.20.0")
    assert str(refused.value) == (
        "flag override 'deviceListStrategy' must be a string or a list of strings, got ['envvar', 1]"
    )


@pytest.mark.parametrize(
    ("override", "strategies"), [("envvar", ("envvar",)), (["envvar", "cdi-cri"], ("envvar", "cdi-cri"))]
)
def test_a_string_or_a_list_of_strings_is_taken_as_the_strategy_list(
    override: object, strategies: tuple[str, ...]
) -> None:
    config = parse("version: v1\n", "0.20.0").config
    flags = effective_flags(config, {"deviceListStrategy": override}, plugin_version="0.20.0")
    assert flags.device_list_strategy == strategies
