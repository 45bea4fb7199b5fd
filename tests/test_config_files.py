"""policies/gpushare_policies/config_files.py: the version readers the pack's plugin rules rest on (the
nearest modelled release per version: tests/test_policies.py)."""

from __future__ import annotations

import pytest

from gpushare import device_plugin
from gpushare_policies.config_files import image_version, parse_version


def test_every_modelled_plugin_version_parses() -> None:
    """modelled_plugin_version's `or (0, 0, 0)` fallback is never taken (mutation/equivalents.yaml)."""
    assert [parse_version(v) for v in device_plugin.PLUGIN_VERSIONS] == [(0, 14, 5), (0, 17, 1), (0, 20, 0)]


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.1", (0, 17, 1)),
        ("sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5", (0, 14, 5)),
        ("registry:5000/nvidia/k8s-device-plugin:v0.20.0@sha256:" + "0" * 64, (0, 20, 0)),  # a port, a digest
        ("nvcr.io/nvidia/k8s-device-plugin", None),  # no tag: the newest, unknown here
        ("nvcr.io/nvidia/k8s-device-plugin:latest", None),
        ("", None),
        (None, None),
    ],
)
def test_the_image_tag_gives_the_plugin_version(
    image: str | None, expected: tuple[int, int, int] | None
) -> None:
    assert image_version(image) == expected
