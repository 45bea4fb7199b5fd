"""TimeSlicingConfig: the device-plugin ConfigMap, one key per pool plus `any`, with tuning provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpushare import kube_names
from gpushare.plugin_configs import PluginConfigEntry


@dataclass(frozen=True)
class TimeSlicingConfigArgs:
    entries: Sequence[PluginConfigEntry]
    name: str = kube_names.CONFIG_MAP_NAME
    namespace: str = kube_names.CONFIG_MAP_NAMESPACE
    # The stack and cluster it belongs to (kube_names.ANNOTATION_STACK, ANNOTATION_CLUSTER), read by verify and measure.
    identity: Mapping[str, pulumi.Input[str]] | None = None


class TimeSlicingConfig(pulumi.ComponentResource):
    config_map_name: pulumi.Output[str]
    """The ConfigMap's name as the cluster has it: what the plugin pods mount, and what wiring it into them
    makes them wait for."""
    checksums: dict[str, str]
    """sha256 of each key's config file, by key: what rolls a plugin's pods when its key changes."""

    def __init__(
        self, name: str, args: TimeSlicingConfigArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:k8s:TimeSlicingConfig", name, None, opts)
        self.checksums = {e.key: e.sha256 for e in args.entries}
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.name,
                namespace=args.namespace,
                labels={kube_names.LABEL_MANAGED_BY: "pulumi"},
                # Where every replica count came from, for reviewers and the policy pack.
                annotations={
                    **(args.identity or {}),
                    **{kube_names.tuning_annotation(e.key): e.provenance_json for e in args.entries},
                },
            ),
            data={e.key: e.text for e in args.entries},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.config_map_name = config_map.metadata.name
        self.register_outputs({"name": self.config_map_name, "checksums": self.checksums})
