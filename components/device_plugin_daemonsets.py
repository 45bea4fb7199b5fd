"""DevicePluginDaemonSets: one device-plugin DaemonSet per pool, each reading its own key's file (TKE's
mirrored 0.14.5 image is not known to carry the config-manager that picks a config per node)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpushare import kube_names, plugin_pod
from gpushare.plugin_configs import PluginConfigEntry


@dataclass(frozen=True)
class DevicePluginDaemonSetsArgs:
    entries: Sequence[PluginConfigEntry]
    image: str
    # The ConfigMap's name; TimeSlicingConfig's output, so that the plugins wait for the ConfigMap.
    config_map_name: pulumi.Input[str] = kube_names.CONFIG_MAP_NAME
    namespace: str = kube_names.CONFIG_MAP_NAMESPACE
    # False under managedPlugin optOut: the pools say `nvidia-device-enable=disable`, so select without it.
    select_tke_switch: bool = True
    # The stack and cluster they belong to (kube_names.ANNOTATION_STACK, ANNOTATION_CLUSTER), read by verify and measure.
    identity: Mapping[str, pulumi.Input[str]] | None = None


def plugin_container(entry: PluginConfigEntry, image: str) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name=kube_names.PLUGIN_CONTAINER,
        image=image,
        command=list(plugin_pod.COMMAND),
        args=plugin_pod.plugin_args(entry.key),
        env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in plugin_pod.ENV.items()],
        resources=k8s.core.v1.ResourceRequirementsArgs(
            limits=dict(plugin_pod.RESOURCES), requests=dict(plugin_pod.RESOURCES)
        ),
        security_context=k8s.core.v1.SecurityContextArgs(
            allow_privilege_escalation=plugin_pod.ALLOW_PRIVILEGE_ESCALATION,
            read_only_root_filesystem=plugin_pod.READ_ONLY_ROOT_FILESYSTEM,
            capabilities=k8s.core.v1.CapabilitiesArgs(drop=list(plugin_pod.DROPPED_CAPABILITIES)),
        ),
        volume_mounts=[
            k8s.core.v1.VolumeMountArgs(
                name=plugin_pod.DEVICE_PLUGIN_VOLUME, mount_path=plugin_pod.DEVICE_PLUGIN_DIR
            ),
            k8s.core.v1.VolumeMountArgs(
                name=kube_names.CONFIG_VOLUME, mount_path=kube_names.CONFIG_MOUNT_DIR
            ),
        ],
    )


class DevicePluginDaemonSets(pulumi.ComponentResource):
    daemonset_names: dict[str, pulumi.Output[str]]
    """Each plugin DaemonSet's name as the cluster has it, by config key."""

    def __init__(
        self, name: str, args: DevicePluginDaemonSetsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:k8s:DevicePluginDaemonSets", name, None, opts)
        self.daemonset_names = {}
        # Pulumi does not pass a component's depends_on to its children; the DaemonSets themselves must wait
        # (for the patch that parks or adopts TKE's plugin).
        for entry in args.entries:
            ds_name = plugin_pod.daemonset_name(entry.key)
            selector = plugin_pod.pod_selector_labels(entry.key)
            daemonset = k8s.apps.v1.DaemonSet(
                f"{name}-{entry.key}",
                k8s.apps.v1.DaemonSetInitArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=ds_name,
                        namespace=args.namespace,
                        labels={kube_names.LABEL_MANAGED_BY: "pulumi", kube_names.LABEL_POOL: entry.key},
                        annotations={**(args.identity or {}), **plugin_pod.scanner_exceptions(args.image)},
                    ),
                    spec=k8s.apps.v1.DaemonSetSpecArgs(
                        selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                        update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
                        template=k8s.core.v1.PodTemplateSpecArgs(
                            metadata=k8s.meta.v1.ObjectMetaArgs(
                                labels=selector,
                                # The plugin re-reads its file only on SIGHUP or a kubelet restart, and
                                # nothing sends either when the ConfigMap changes (seed pitfall 1): a new
                                # checksum rolls exactly this pool's pods when its key changes.
                                annotations={kube_names.ANNOTATION_CONFIG_SHA256: entry.sha256},
                            ),
                            spec=k8s.core.v1.PodSpecArgs(
                                node_selector=plugin_pod.node_selector(
                                    entry.key, tke_switch=args.select_tke_switch
                                ),
                                tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
                                priority_class_name=plugin_pod.PRIORITY_CLASS,
                                automount_service_account_token=plugin_pod.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN,
                                security_context=k8s.core.v1.PodSecurityContextArgs(
                                    seccomp_profile=k8s.core.v1.SeccompProfileArgs(
                                        type=plugin_pod.SECCOMP_PROFILE
                                    )
                                ),
                                containers=[plugin_container(entry, args.image)],
                                volumes=[
                                    k8s.core.v1.VolumeArgs(
                                        name=plugin_pod.DEVICE_PLUGIN_VOLUME,
                                        host_path=k8s.core.v1.HostPathVolumeSourceArgs(
                                            path=plugin_pod.DEVICE_PLUGIN_DIR
                                        ),
                                    ),
                                    k8s.core.v1.VolumeArgs(
                                        name=kube_names.CONFIG_VOLUME,
                                        config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(
                                            name=args.config_map_name
                                        ),
                                    ),
                                ],
                            ),
                        ),
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=opts.depends_on if opts else None),
            )
            self.daemonset_names[entry.key] = daemonset.metadata.name
        self.register_outputs({"daemonsets": self.daemonset_names})
