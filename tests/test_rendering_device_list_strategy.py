"""gpushare/device_plugin/rendering.py: how `deviceListStrategy` is written into the ConfigMap.

The plugin reads the flag as a string or a list of strings (api/config/v1 flags.go); `render` writes one
strategy as the plain string users write (and the seed's ConfigMaps hold), several as a list, so a config
the program renders keeps the same text, and the same content checksum, from one release to the next."""

from __future__ import annotations

import pytest

from gpushare.device_plugin import parse
from gpushare.device_plugin.rendering import render


@pytest.mark.parametrize(
    ("written", "rendered"),
    [
        ("envvar", "    deviceListStrategy: envvar\n"),
        ("[volume-mounts]", "    deviceListStrategy: volume-mounts\n"),
        ("[envvar, cdi-annotations]", "    deviceListStrategy:\n    - envvar\n    - cdi-annotations\n"),
    ],
)
def test_one_strategy_is_rendered_as_a_string_and_several_as_a_list(written: str, rendered: str) -> None:
    config = parse(f"version: v1\nflags:\n  plugin:\n    deviceListStrategy: {written}\n", "0.20.0").config
    text = render(config)
    assert text == "version: v1\nflags:\n  plugin:\n" + rendered
    assert parse(text, "0.20.0").config == config
