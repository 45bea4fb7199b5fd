"""GpuOperatorRelease: NVIDIA's GPU Operator chart and the two content-addressed ConfigMaps it reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from gpushare import gpu_operator, kube_names
from gpushare.gpu_operator import OperatorConfigMap
from gpushare.plan import SharingPlan
from gpushare.plugin_configs import PluginConfigEntry


@dataclass(frozen=True)
class GpuOperatorReleaseArgs:
    plan: SharingPlan
    entries: Sequence[PluginConfigEntry]
    # The stack and cluster it belongs to (kube_names.ANNOTATION_STACK, ANNOTATION_CLUSTER), on the ConfigMaps it publishes.
    identity: Mapping[str, pulumi.Input[str]] | None = None


class GpuOperatorRelease(pulumi.ComponentResource):
    chart_version: str
    """The GPU Operator chart's version, pinned by the stack."""
    device_plugin_config_name: str
    """The content-addressed ConfigMap of the device plugin's configs the ClusterPolicy names."""
    mig_parted_config_name: str | None
    """The content-addressed mig-parted ConfigMap the MIG manager reads; None without MIG pools."""
    release_name: pulumi.Output[str]
    """The Helm release's name in the cluster (`helm status <name> -n <namespace>`)."""
    status: pulumi.Output[k8s.helm.v3.outputs.ReleaseStatus]
    """What Helm reports after the install or upgrade: `status`, `revision`, `version`, `app_version`."""

    def __init__(
        self, name: str, args: GpuOperatorReleaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:helm:GpuOperatorRelease", name, None, opts)
        operator = args.plan.stack.plugin.gpu_operator
        namespace = operator.namespace
        self.chart_version = operator.chart_version
        plugin_config = gpu_operator.device_plugin_config_map(args.entries)
        mig_config = gpu_operator.mig_parted_config_map(args.plan)
        self.device_plugin_config_name = plugin_config.name
        self.mig_parted_config_name = mig_config.name if mig_config else None

        # Pulumi does not pass a component's depends_on to its children: the release itself must wait (for
        # the patch that parks or adopts TKE's plugin, which serves the same kubelet socket).
        handover = list(cast(Sequence[pulumi.Resource], opts.depends_on or [])) if opts else []
        # The namespace is ours (the release would create it too late for the ConfigMaps it reads).
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            k8s.core.v1.NamespaceInitArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=namespace,
                    # The operands are privileged host agents (NVIDIA's install guide labels it so too).
                    labels={
                        kube_names.LABEL_MANAGED_BY: "pulumi",
                        "pod-security.kubernetes.io/enforce": "privileged",
                    },
                )
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[ns])
        config_maps = [
            self._config_map(
                f"{name}-device-plugin-config",
                plugin_config,
                namespace,
                # Where every replica count came from, for reviewers and the policy pack.
                {
                    **(args.identity or {}),
                    **{kube_names.tuning_annotation(e.key): e.provenance_json for e in args.entries},
                },
                in_namespace,
            )
        ]
        if mig_config is not None:
            config_maps.append(
                self._config_map(
                    f"{name}-mig-parted-config",
                    mig_config,
                    namespace,
                    dict(args.identity or {}),
                    in_namespace,
                )
            )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            k8s.helm.v3.ReleaseArgs(
                name=gpu_operator.RELEASE_NAME,
                chart=gpu_operator.CHART,
                version=operator.chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=operator.chart_repository),
                namespace=namespace,
                values=gpu_operator.release_values(args.plan, operator, plugin_config, mig_config),
            ),
            # The ClusterPolicy names the ConfigMaps: they exist before the release points at them, and a
            # replaced one is deleted only after the release has moved to its successor.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*handover, ns, *config_maps]),
        )
        # Given explicitly, so the provider keeps it (it names only releases without one).
        self.release_name = cast(pulumi.Output[str], release.name)
        self.status = release.status
        self.register_outputs(
            {
                "chartVersion": self.chart_version,
                "devicePluginConfig": self.device_plugin_config_name,
                "migPartedConfig": self.mig_parted_config_name,
                "releaseName": self.release_name,
                "status": self.status,
            }
        )

    def _config_map(
        self,
        resource_name: str,
        config_map: OperatorConfigMap,
        namespace: str,
        annotations: Mapping[str, pulumi.Input[str]],
        opts: pulumi.ResourceOptions,
    ) -> k8s.core.v1.ConfigMap:
        return k8s.core.v1.ConfigMap(
            resource_name,
            k8s.core.v1.ConfigMapInitArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=config_map.name,
                    namespace=namespace,
                    labels={kube_names.LABEL_MANAGED_BY: "pulumi"},
                    annotations=annotations or None,
                ),
                data=config_map.data,
                # Named by its content: an edit in place would be a lie about the name.
                immutable=True,
            ),
            opts=opts,
        )
