"""policies/gpushare_policies/config_files.py: the version readers the pack's plugin rules rest on (the
nearest modelled release per version: tests/test_policies.py)."""

from __future__ import annotations

import pytest
from test_policies import Program, Res, _isolated_environment, messages_of, prod, with_data

from gpushare import device_plugin
from gpushare_policies.config_files import asks_for_mps, image_version, parse_version

__all__ = ["_isolated_environment", "prod"]  # fixtures used by name below


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


# --------------------------------------------------------------------------------------------------------
# A file the plugin refuses is still read for what it says (fail-requests-greater-than-one on it)


def _l20_time_slicing(prod: Program, fail_requests: str) -> Res:
    text = (
        "version: v1\nsharing:\n  timeSlicing:\n" + fail_requests + "    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: eight\n"  # not an integer: the plugin refuses the file
    )
    return with_data(prod.get("gpushare-config-configmap"), "l20", text)


def test_a_refused_file_without_fail_requests_greater_than_one_is_still_flagged(prod: Program) -> None:
    assert messages_of("fail-requests-greater-than-one", [_l20_time_slicing(prod, "")]) == [
        'ConfigMap kube-system/time-slicing-config key "l20": sharing.timeSlicing shares nvidia.com/gpu without '
        "failRequestsGreaterThanOne: true, so a pod asking for 2 replicas gets 2 slices of the same GPU and "
        "believes it has 2 GPUs. Set failRequestsGreaterThanOne: true."
    ]
    # The near miss: the same refused file saying it.
    with_flag = _l20_time_slicing(prod, "    failRequestsGreaterThanOne: true\n")
    assert messages_of("fail-requests-greater-than-one", [with_flag]) == []


@pytest.mark.parametrize(
    ("content", "asks"),
    [
        (
            "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
            True,
        ),
        ("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", False),
        ("version: v1\nsharing:\n  mps: 4\n", False),  # not a section
        ("version: v1\nsharing: [\n", False),  # not YAML: it asks for nothing (the parse rules report it)
        ("", False),
    ],
    ids=["mps", "time-slicing", "mps-not-a-mapping", "not-yaml", "empty"],
)
def test_a_file_asks_for_mps_only_with_an_mps_section(content: str, asks: bool) -> None:
    assert asks_for_mps(content) is asks
