"""gpushare/plugin_pod.py: the device-plugin pod of DaemonSet mode (the seed's L20 DaemonSet, per pool)."""

from __future__ import annotations

import pytest

from gpushare import plugin_pod

TKE_TAG = "sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5"
DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("image", "digest"),
    [
        (TKE_TAG, None),
        (f"nvcr.io/nvidia/k8s-device-plugin@{DIGEST}", DIGEST),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.17.1@{DIGEST}", DIGEST),
        ("registry:5000/plugin:v1", None),  # a port is no digest
    ],
)
def test_image_digest(image: str, digest: str | None) -> None:
    assert plugin_pod.image_digest(image) == digest


def test_a_tag_only_image_gets_one_more_scanner_exception_numbered_last() -> None:
    pinned = plugin_pod.scanner_exceptions(f"nvcr.io/nvidia/k8s-device-plugin:v0.17.1@{DIGEST}")
    tagged = plugin_pod.scanner_exceptions(TKE_TAG)
    assert list(pinned) == [f"checkov.io/skip{i}" for i in range(1, 7)]
    assert list(tagged) == [f"checkov.io/skip{i}" for i in range(1, 8)]
    assert tagged["checkov.io/skip7"].startswith("CKV_K8S_43=the stack names the image by tag only")
    assert pinned["checkov.io/skip1"].startswith("CKV_K8S_8=")


def test_the_command_line_names_one_keys_file_and_no_mig_strategy() -> None:
    # The seed's pitfalls: a directory --config-file crashes v0.14.5; --mig-strategy beats the file.
    assert plugin_pod.plugin_args("l20") == [
        "--fail-on-init-error=false",
        "--pass-device-specs=true",
        "--config-file=/etc/nvidia/time-slicing-config/l20",
    ]


def test_names_and_selectors() -> None:
    # As the seed named its per-model DaemonSets, after TKE's nvidia-device-plugin-daemonset.
    assert plugin_pod.daemonset_name("l20") == "nvidia-device-plugin-daemonset-l20"
    assert plugin_pod.pod_selector_labels("l20") == {"name": "nvidia-device-plugin-ds-l20"}
    assert plugin_pod.node_selector("l20") == {
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "l20",
    }
    assert plugin_pod.node_selector("l20", tke_switch=False) == {
        "nvidia.com/device-plugin.config": "l20",
        "gpushare.io/pool": "l20",
    }
