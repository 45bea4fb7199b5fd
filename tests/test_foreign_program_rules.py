"""The pack on another team's program (no `gpushare:` config): what counts as a device plugin, and which
pools gpushare's own label rules judge.

NVIDIA's chart 0.17.1 runs three programs from one image (nvcr.io/nvidia/k8s-device-plugin): the plugin
(`command: ["nvidia-device-plugin"]`, templates/daemonset-device-plugin.yml), GPU feature discovery
(`command: ["gpu-feature-discovery"]`, templates/daemonset-gfd.yml) and the MPS control daemon
(`command: [mps-control-daemon]`, templates/daemonset-mps-control-daemon.yml), each beside a
`config-manager` init container and sidecar. Only the first registers `nvidia.com/gpu` with the kubelet.
The DaemonSets below are those templates as `helm template` renders them into a program of its own
(a ConfigGroup or a hand-copied manifest), reduced to what the pack reads.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_policies import Res, _isolated_environment, messages_of

from gpushare.resource_types import NODE_POOL

__all__ = ["_isolated_environment"]  # fixture used by name

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
STACK = "gpu-team-prod"


def _daemon_set(name: str, containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> Res:
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    return Res(
        DAEMON_SET,
        name,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "nvidia-device-plugin"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"spec": spec}},
        },
        STACK,
    )


def _config_manager(name: str) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "command": ["config-manager"]}


def plugin() -> Res:
    return _daemon_set(
        "nvidia-device-plugin",
        [
            _config_manager("nvidia-device-plugin-sidecar"),
            {"name": "nvidia-device-plugin-ctr", "image": IMAGE, "command": ["nvidia-device-plugin"]},
        ],
        [_config_manager("nvidia-device-plugin-init")],
    )


def feature_discovery() -> Res:
    return _daemon_set(
        "nvidia-device-plugin-gpu-feature-discovery",
        [
            _config_manager("gpu-feature-discovery-sidecar"),
            {"name": "gpu-feature-discovery-ctr", "image": IMAGE, "command": ["gpu-feature-discovery"]},
        ],
        [_config_manager("gpu-feature-discovery-init")],
    )


def mps_control_daemon() -> Res:
    return _daemon_set(
        "nvidia-device-plugin-mps-control-daemon",
        [
            _config_manager("mps-control-daemon-sidecar"),
            {"name": "mps-control-daemon-ctr", "image": IMAGE, "command": ["mps-control-daemon"]},
        ],
        [
            {
                "name": "mps-control-daemon-mounts",
                "image": IMAGE,
                "command": ["mps-control-daemon", "mount-shm"],
            },
            _config_manager("mps-control-daemon-init"),
        ],
    )


def tke_pool(labels: dict[str, str]) -> Res:
    """A TKE GPU node pool of the other team's: T4 by its instance type (GN7.2XLARGE32 in the catalog)."""
    return Res(
        NODE_POOL,
        "team-t4-pool",
        {"name": "team-t4-pool", "labels": labels, "autoScalingConfig": {"instanceType": "GN7.2XLARGE32"}},
        STACK,
    )


# TKE's own plugin is off on the pool, so NVIDIA's DaemonSet is the one plugin there.
OPTED_OUT = {"nvidia-device-enable": "disable"}


def test_the_charts_plugin_alone_is_one_plugin() -> None:
    assert messages_of("one-device-plugin-per-node", [tke_pool(OPTED_OUT), plugin()]) == []


@pytest.mark.parametrize("helper", [feature_discovery, mps_control_daemon], ids=["gfd", "mps-control-daemon"])
def test_the_plugins_helpers_from_the_same_image_are_not_plugins(helper: Any) -> None:
    assert messages_of("one-device-plugin-per-node", [tke_pool(OPTED_OUT), plugin(), helper()]) == []


def test_a_helper_named_like_the_plugin_container_is_still_not_a_plugin() -> None:
    # Decided by the binary it runs, not by the container's name or image.
    gfd = feature_discovery()
    gfd.props["spec"]["template"]["spec"]["containers"][1]["name"] = "nvidia-device-plugin-ctr"
    assert messages_of("one-device-plugin-per-node", [tke_pool(OPTED_OUT), plugin(), gfd]) == []


def test_a_plugin_started_through_a_shell_or_the_images_entrypoint_still_counts() -> None:
    shell = plugin()
    shell.name = "wrapped-plugin"
    shell.props["metadata"]["name"] = "wrapped-plugin"
    shell.props["spec"]["template"]["spec"]["containers"][1]["command"] = [
        "/bin/sh",
        "-c",
        "exec /usr/bin/nvidia-device-plugin --fail-on-init-error=false",
    ]
    entrypoint = plugin()
    entrypoint.name = "entrypoint-plugin"
    entrypoint.props["metadata"]["name"] = "entrypoint-plugin"
    del entrypoint.props["spec"]["template"]["spec"]["containers"][1]["command"]
    found = messages_of("one-device-plugin-per-node", [tke_pool(OPTED_OUT), plugin(), shell, entrypoint])
    assert found == [
        "node pool team-t4-pool: 3 device plugins would run on each of its nodes: DaemonSet "
        "nvidia-device-plugin/nvidia-device-plugin (nodeSelector any node); DaemonSet nvidia-device-plugin/wrapped-plugin "
        "(nodeSelector any node); DaemonSet nvidia-device-plugin/entrypoint-plugin (nodeSelector any node). They register the same "
        "resources with the kubelet and fight over them; opt the pools out of TKE's plugin (managedPlugin.action "
        "optOut labels them nvidia-device-enable=disable), park it, or narrow the nodeSelectors so that one "
        "plugin serves each pool."
    ]


def test_a_plain_tke_gpu_pool_is_not_held_to_gpushares_labels() -> None:
    # No gpushare.io/ label, no gpushare: config: the pool is the other team's, served by TKE's plugin.
    assert messages_of("gpu-pool-labels", [tke_pool({})]) == []
    assert messages_of("gpu-pool-labels", [tke_pool({"team": "a"}), plugin()]) == []


def test_a_pool_gpushare_manages_in_a_foreign_program_is_still_held_to_them() -> None:
    # A pool the hosted component declares carries gpushare.io/pool (components/gpu_node_pool.py).
    managed = tke_pool({"gpushare.io/pool": "t4", "gpushare.io/gpu-model": "T4"})
    assert messages_of("gpu-pool-labels", [managed]) == [
        "node pool t4 (T4) lacks the label(s) its device plugin selects on: nvidia-device-enable, nvidia.com/device-plugin.config."
    ]
    assert messages_of("gpu-pool-labels", [copy.deepcopy(tke_pool({"gpushare.io/gpu-model": "T4"}))]) == [
        "node pool team-t4-pool (T4) lacks the label(s) its device plugin selects on: "
        "nvidia-device-enable, nvidia.com/device-plugin.config."
    ]
