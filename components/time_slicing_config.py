"""TimeSlicingConfig: the device-plugin ConfigMap, one key per pool plus `any`, with tuning provenance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.provider_resources import KubeObject
from gpushare import kube_names
from gpushare.plugin_configs import PluginConfigEntry


@dataclass(frozen=True)
class TimeSlicingConfigArgs:
    entries: Sequence[PluginConfigEntry]
    name: str = kube_names.CONFIG_MAP_NAME
    namespace: str = kube_names.CONFIG_MAP_NAMESPACE


class TimeSlicingConfig(pulumi.ComponentResource):
    config_map_name: str
    checksums: dict[str, str]

    def __init__(
        self, name: str, args: TimeSlicingConfigArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:k8s:TimeSlicingConfig", name, None, opts)
        self.config_map_name = args.name
        self.checksums = {e.key: e.sha256 for e in args.entries}
        KubeObject(
            f"{name}-configmap",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": args.name,
                    "namespace": args.namespace,
                    "labels": {kube_names.LABEL_MANAGED_BY: "pulumi"},
                    # Where every replica count came from, for reviewers and the policy pack.
                    "annotations": {
                        kube_names.tuning_annotation(e.key): e.provenance_json for e in args.entries
                    },
                },
                "data": {e.key: e.text for e in args.entries},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"name": args.name, "checksums": self.checksums})
