"""DevicePluginRelease: NVIDIA's device-plugin Helm chart with every pool's config in `config.map`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from gpushare import kube_names, mps, plugin_pod, plugin_tolerations
from gpushare.plan import FALLBACK_KEY
from gpushare.plugin_configs import PluginConfigEntry
from gpushare.stack.plugin_settings import DevicePlugin

CHART = "nvidia-device-plugin"


@dataclass(frozen=True)
class DevicePluginReleaseArgs:
    plugin: DevicePlugin
    entries: Sequence[PluginConfigEntry]
    # Every pool's taints: the plugin must tolerate them to run there (the chart's defaults do not).
    pool_taints: Sequence[Mapping[str, str]] = ()
    # The stack and cluster it belongs to (kube_names.ANNOTATION_STACK, ANNOTATION_CLUSTER): the chart has no annotations
    # of its own objects to give, so they go on its pods' template, where verify and measure read them.
    identity: Mapping[str, pulumi.Input[str]] | None = None


def release_values(args: DevicePluginReleaseArgs) -> dict[str, Any]:
    plugin = args.plugin
    values: dict[str, Any] = {
        "config": {
            "map": {e.key: e.text for e in args.entries},
            # Nodes whose label names no key (or carry none) get the conservative fallback.
            "default": FALLBACK_KEY,
        },
        "gfd": {"enabled": plugin.gfd_enabled},
        "priorityClassName": plugin_pod.PRIORITY_CLASS,
        "tolerations": plugin_tolerations.helm_tolerations(args.pool_taints),
        # Provenance of every replica count, visible on the plugin pods; and whose stack and cluster they are.
        "podAnnotations": {
            **(args.identity or {}),
            **{kube_names.tuning_annotation(e.key): e.provenance_json for e in args.entries},
        },
    }
    # Rendered by the chart as MIG_STRATEGY env, which overrides every per-node file: set only when the
    # stack says so (the stack model checks it agrees with every pool).
    if plugin.mig_strategy is not None:
        values["migStrategy"] = plugin.mig_strategy
    # With `config.map` the chart cannot see the strategies and adds CAP_SYS_ADMIN to the plugin (MIG needs
    # it, and Kubernetes refuses it beside allowPrivilegeEscalation: false). When every config, and the
    # chart value, says `none`, give the plugin what the chart itself gives it then: no escalation, no
    # capability.
    strategies = {e.provenance.get("migStrategy") for e in args.entries} | {plugin.mig_strategy or "none"}
    if strategies == {"none"}:
        values["securityContext"] = {
            "allowPrivilegeEscalation": plugin_pod.ALLOW_PRIVILEGE_ESCALATION,
            "capabilities": {"drop": list(plugin_pod.DROPPED_CAPABILITIES)},
        }
    # MPS pools: the chart's MPS control daemon (rendered whatever the values, scheduled only on nodes
    # labelled nvidia.com/mps.capable=true) and the plugin share this host directory; said explicitly so
    # it is the one the configs' mpsRoot names. Left out without MPS, so those releases read as before.
    if any(e.provenance.get("mode") == mps.MODE for e in args.entries):
        values["mps"] = {"root": mps.MPS_ROOT}
    if plugin.image:
        repository, _, tag = plugin.image.rpartition(":")
        values["image"] = {"repository": repository, "tag": tag}
    return values


class DevicePluginRelease(pulumi.ComponentResource):
    chart_version: str
    """The device-plugin chart's version, pinned by the stack."""
    release_name: pulumi.Output[str]
    """The Helm release's name in the cluster (`helm status <name> -n <namespace>`)."""
    status: pulumi.Output[k8s.helm.v3.outputs.ReleaseStatus]
    """What Helm reports after the install or upgrade: `status`, `revision`, `version`, `app_version`."""

    def __init__(
        self, name: str, args: DevicePluginReleaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:helm:DevicePluginRelease", name, None, opts)
        plugin = args.plugin
        self.chart_version = plugin.plugin_version
        # Pulumi does not pass a component's depends_on to its children; the release itself must wait
        # (for the patch that parks TKE's plugin).
        release = k8s.helm.v3.Release(
            f"{name}-release",
            k8s.helm.v3.ReleaseArgs(
                name=CHART,
                chart=CHART,
                version=plugin.plugin_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=plugin.chart_repository),
                namespace=plugin.namespace,
                create_namespace=True,
                values=release_values(args),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=opts.depends_on if opts else None),
        )
        # Given explicitly, so the provider keeps it (it names only releases without one).
        self.release_name = cast(pulumi.Output[str], release.name)
        self.status = release.status
        self.register_outputs(
            {"chartVersion": self.chart_version, "releaseName": self.release_name, "status": self.status}
        )
