"""DevicePluginDaemonSets: one device-plugin DaemonSet per pool, each reading its own key's file (TKE's
mirrored 0.14.5 image is not known to carry the config-manager that picks a config per node)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.provider_resources import KubeObject
from gpushare import kube_names, plugin_pod
from gpushare.plugin_configs import PluginConfigEntry


@dataclass(frozen=True)
class DevicePluginDaemonSetsArgs:
    entries: Sequence[PluginConfigEntry]
    image: str
    config_map_name: str = kube_names.CONFIG_MAP_NAME
    namespace: str = kube_names.CONFIG_MAP_NAMESPACE
    # False under managedPlugin optOut: the pools say `nvidia-device-enable=disable`, so select without it.
    select_tke_switch: bool = True


def plugin_container(entry: PluginConfigEntry, image: str) -> dict[str, Any]:
    return {
        "name": kube_names.PLUGIN_CONTAINER,
        "image": image,
        "command": list(plugin_pod.COMMAND),
        "args": plugin_pod.plugin_args(entry.key),
        "env": [{"name": k, "value": v} for k, v in plugin_pod.ENV.items()],
        "resources": {"limits": dict(plugin_pod.RESOURCES), "requests": dict(plugin_pod.RESOURCES)},
        "securityContext": {
            "allowPrivilegeEscalation": plugin_pod.ALLOW_PRIVILEGE_ESCALATION,
            "readOnlyRootFilesystem": plugin_pod.READ_ONLY_ROOT_FILESYSTEM,
            "capabilities": {"drop": list(plugin_pod.DROPPED_CAPABILITIES)},
        },
        "volumeMounts": [
            {"name": plugin_pod.DEVICE_PLUGIN_VOLUME, "mountPath": plugin_pod.DEVICE_PLUGIN_DIR},
            {"name": kube_names.CONFIG_VOLUME, "mountPath": kube_names.CONFIG_MOUNT_DIR},
        ],
    }


def plugin_daemonset(entry: PluginConfigEntry, args: DevicePluginDaemonSetsArgs) -> dict[str, Any]:
    selector = plugin_pod.pod_selector_labels(entry.key)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": plugin_pod.daemonset_name(entry.key),
            "namespace": args.namespace,
            "labels": {kube_names.LABEL_MANAGED_BY: "pulumi", kube_names.LABEL_POOL: entry.key},
            "annotations": plugin_pod.scanner_exceptions(args.image),
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "labels": selector,
                    # The plugin re-reads its file only on SIGHUP or a kubelet restart, and nothing sends
                    # either when the ConfigMap changes (seed pitfall 1): a new checksum rolls exactly this
                    # pool's pods when its key changes.
                    "annotations": {kube_names.ANNOTATION_CONFIG_SHA256: entry.sha256},
                },
                "spec": {
                    "nodeSelector": plugin_pod.node_selector(entry.key, tke_switch=args.select_tke_switch),
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": plugin_pod.PRIORITY_CLASS,
                    "automountServiceAccountToken": plugin_pod.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN,
                    "securityContext": {"seccompProfile": {"type": plugin_pod.SECCOMP_PROFILE}},
                    "containers": [plugin_container(entry, args.image)],
                    "volumes": [
                        {
                            "name": plugin_pod.DEVICE_PLUGIN_VOLUME,
                            "hostPath": {"path": plugin_pod.DEVICE_PLUGIN_DIR},
                        },
                        {"name": kube_names.CONFIG_VOLUME, "configMap": {"name": args.config_map_name}},
                    ],
                },
            },
        },
    }


class DevicePluginDaemonSets(pulumi.ComponentResource):
    daemonset_names: dict[str, str]

    def __init__(
        self, name: str, args: DevicePluginDaemonSetsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:k8s:DevicePluginDaemonSets", name, None, opts)
        self.daemonset_names = {}
        # Pulumi does not pass a component's depends_on to its children; the DaemonSets themselves must wait
        # (for the patch that parks or adopts TKE's plugin).
        for entry in args.entries:
            KubeObject(
                f"{name}-{entry.key}",
                plugin_daemonset(entry, args),
                opts=pulumi.ResourceOptions(parent=self, depends_on=opts.depends_on if opts else None),
            )
            self.daemonset_names[entry.key] = plugin_pod.daemonset_name(entry.key)
        self.register_outputs({"daemonsets": self.daemonset_names})
