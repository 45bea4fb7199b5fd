"""ManagedDevicePlugin: a server-side-apply patch on TKE's own device-plugin DaemonSet.

Two plugins on one node fight over `nvidia.com/gpu`, so TKE's DaemonSet is either parked (given a
nodeSelector no node carries) or adopted as one pool's plugin (the seed did that for T4). TKE may
reconcile the DaemonSet back; `pulumi preview --refresh` then shows the drift and `pulumi up` re-applies.

Handing it back: deleting a patch gives up every field its field manager owns, and the API server removes
a field nobody owns. A pod's `nodeSelector` is an atomic map and a container's `args` an atomic list, so a
forced patch takes them whole from TKE's manager: deleted, it would leave TKE's DaemonSet with no
nodeSelector (TKE's plugin on every node, gpushare's pools included) and, after adopt, no args (the
real-engine tests, tests/test_engine_tke_plugin.py, show both). So every patch is retained on delete, all
under one field manager, and `managedPlugin: {action: optOut, handBack: true}` applies TKE's own
nodeSelector and args under that manager (retained too): the API server removes what park or adopt set
and the hand-back does not (the parked selector, the config volume, mount and annotation). Park also sets
TKE's args, so that moving from adopt to park gives them back instead of leaving the container without.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpushare import kube_names, plugin_pod
from gpushare.plugin_configs import PluginConfigEntry
from gpushare.stack.plugin_settings import ManagedPlugin

# Take over the fields TKE's field manager owns (args, nodeSelector) instead of failing on the conflict,
# always as the same manager (see the module's docstring).
PATCH_ANNOTATIONS = {
    "pulumi.com/patchForce": "true",
    "pulumi.com/patchFieldManager": kube_names.MANAGED_PLUGIN_FIELD_MANAGER,
}


@dataclass(frozen=True)
class ManagedDevicePluginArgs:
    managed: ManagedPlugin
    # The adopted pool's config entry; None parks the DaemonSet (or hands it back, with hand_back).
    adopted: PluginConfigEntry | None = None
    config_map_name: pulumi.Input[str] = kube_names.CONFIG_MAP_NAME
    # The stack and cluster the patch belongs to (kube_names.ANNOTATION_STACK, ANNOTATION_CLUSTER), read by verify and
    # measure: in helm mode TKE's patched DaemonSet is the one object that says which stack owns the cluster.
    identity: Mapping[str, pulumi.Input[str]] | None = None


def _tke_container(managed: ManagedPlugin) -> k8s.core.v1.ContainerPatchArgs:
    """TKE's container with TKE's own args (`tkeArgs`): its args list is atomic, whoever applies it owns it."""
    return k8s.core.v1.ContainerPatchArgs(name=managed.container_name, args=list(managed.tke_args))


def _parked_spec(managed: ManagedPlugin) -> k8s.apps.v1.DaemonSetSpecPatchArgs:
    """A nodeSelector no node carries; TKE's args, so that a move from adopt drops only adopt's config."""
    return k8s.apps.v1.DaemonSetSpecPatchArgs(
        template=k8s.core.v1.PodTemplateSpecPatchArgs(
            spec=k8s.core.v1.PodSpecPatchArgs(
                node_selector={kube_names.LABEL_PARKED: kube_names.PARKED_VALUE},
                containers=[_tke_container(managed)],
            )
        )
    )


def _handed_back_spec(managed: ManagedPlugin) -> k8s.apps.v1.DaemonSetSpecPatchArgs:
    """TKE's DaemonSet as TKE shipped it, in the fields park and adopt touch."""
    return k8s.apps.v1.DaemonSetSpecPatchArgs(
        template=k8s.core.v1.PodTemplateSpecPatchArgs(
            spec=k8s.core.v1.PodSpecPatchArgs(
                node_selector={kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_ENABLE_VALUE},
                containers=[_tke_container(managed)],
            )
        )
    )


# The adopt patch lists TKE's own kubelet-socket mount and volume before gpushare's config ones, by their
# keys alone (the mount's name and mountPath, the volume's name: nothing of its hostPath). Why: the
# Kubernetes provider diffs a patch against the live object with each list cut to the patch's length by
# position (pkg/provider/util.go pruneSlice), and the live lists hold TKE's entry first, so a patch of
# gpushare's entries alone showed an update on every preview and failed `--expect-no-changes`
# (tests/test_engine_up.py). Naming TKE's entries makes position 0 agree; server-side apply merges them by
# key into TKE's, so the patch co-owns their keys only, and Helm's entry keeps them after a hand-back.
# The name and path are TKE's as the seed records them (NVIDIA's static manifest's too).
def _adopted_spec(
    entry: PluginConfigEntry, container: str, config_map: pulumi.Input[str]
) -> k8s.apps.v1.DaemonSetSpecPatchArgs:
    return k8s.apps.v1.DaemonSetSpecPatchArgs(
        template=k8s.core.v1.PodTemplateSpecPatchArgs(
            metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                annotations={kube_names.ANNOTATION_CONFIG_SHA256: entry.sha256}
            ),
            spec=k8s.core.v1.PodSpecPatchArgs(
                node_selector=plugin_pod.node_selector(entry.key),
                containers=[
                    k8s.core.v1.ContainerPatchArgs(
                        name=container,
                        args=plugin_pod.plugin_args(entry.key),
                        volume_mounts=[
                            # TKE's own first, by its keys alone (the comment above _adopted_spec).
                            k8s.core.v1.VolumeMountPatchArgs(
                                name=plugin_pod.DEVICE_PLUGIN_VOLUME, mount_path=plugin_pod.DEVICE_PLUGIN_DIR
                            ),
                            k8s.core.v1.VolumeMountPatchArgs(
                                name=kube_names.CONFIG_VOLUME, mount_path=kube_names.CONFIG_MOUNT_DIR
                            ),
                        ],
                    )
                ],
                volumes=[
                    k8s.core.v1.VolumePatchArgs(name=plugin_pod.DEVICE_PLUGIN_VOLUME),
                    k8s.core.v1.VolumePatchArgs(
                        name=kube_names.CONFIG_VOLUME,
                        config_map=k8s.core.v1.ConfigMapVolumeSourcePatchArgs(name=config_map),
                    ),
                ],
            ),
        )
    )


class ManagedDevicePlugin(pulumi.ComponentResource):
    action: str
    # What the new device plugins must wait for: they serve the same kubelet socket, which the departing
    # plugin deletes when it stops.
    patch: k8s.apps.v1.DaemonSetPatch

    def __init__(
        self, name: str, args: ManagedDevicePluginArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:k8s:ManagedDevicePlugin", name, None, opts)
        managed = args.managed
        if managed.hand_back:
            self.action = "handBack"
            spec = _handed_back_spec(managed)
        elif args.adopted:
            self.action = "adopt"
            spec = _adopted_spec(args.adopted, managed.container_name, args.config_map_name)
        else:
            self.action = "park"
            spec = _parked_spec(managed)
        self.patch = k8s.apps.v1.DaemonSetPatch(
            # The hand-back is a resource of its own: the park or adopt patch is deleted in the same update,
            # and retained, so its deletion changes nothing on the server.
            f"{name}-hand-back" if managed.hand_back else f"{name}-patch",
            k8s.apps.v1.DaemonSetPatchArgs(
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=managed.name,
                    namespace=managed.namespace,
                    annotations={**(args.identity or {}), **PATCH_ANNOTATIONS},
                ),
                spec=spec,
            ),
            # Deleted, any of them would leave TKE's DaemonSet without a nodeSelector (module docstring).
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )
        self.register_outputs({"action": self.action, "pool": args.adopted.key if args.adopted else None})
