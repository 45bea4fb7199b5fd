"""What a device-plugin pod looks like in DaemonSet mode (the seed's L20 DaemonSet, made per pool).

Pure data: the components turn it into typed Kubernetes args, the policy pack reads it back.
"""

from __future__ import annotations

from gpushare import kube_names

COMMAND = ("nvidia-device-plugin",)
# `--mig-strategy` is deliberately absent: a CLI flag beats the config file (seed: `--mig-strategy=single`
# silently overrode `migStrategy: none`), so each pool's file alone decides its strategy.
BASE_ARGS = ("--fail-on-init-error=false", "--pass-device-specs=true")
ENV = {"NVIDIA_DRIVER_CAPABILITIES": "utility,compute"}
RESOURCES = {"cpu": "100m", "memory": "100Mi"}
DEVICE_PLUGIN_VOLUME = "device-plugin"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
PRIORITY_CLASS = "system-node-critical"


def plugin_args(config_key: str) -> list[str]:
    return [*BASE_ARGS, f"--config-file={kube_names.config_file_path(config_key)}"]


def daemonset_name(pool: str) -> str:
    return kube_names.DAEMONSET_PREFIX + pool


def pod_selector_labels(pool: str) -> dict[str, str]:
    return {"name": f"nvidia-device-plugin-ds-{pool}"}


def node_selector(config_key: str, *, tke_switch: bool = True) -> dict[str, str]:
    """The nodes of the pool whose key is `config_key` (its name). Beside a parked or adopted TKE
    DaemonSet also TKE's switch label, as the seed's DaemonSets did; under managedPlugin optOut that label
    says `disable`, so the pool's own labels alone select."""
    if not tke_switch:
        return {kube_names.LABEL_PLUGIN_CONFIG: config_key, kube_names.LABEL_POOL: config_key}
    return {
        kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_ENABLE_VALUE,
        kube_names.LABEL_PLUGIN_CONFIG: config_key,
    }
