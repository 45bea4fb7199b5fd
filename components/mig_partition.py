"""MigPartition: a MIG pool's layout, checked against the GPU's geometry, as a mig-parted config."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpushare import catalog, kube_names
from gpushare.mig import setup as mig_setup
from gpushare.mig.geometry import fit_layout
from gpushare.stack.model import Mig, Pool


@dataclass(frozen=True)
class MigPartitionArgs:
    pool: Pool
    namespace: str = kube_names.CONFIG_MAP_NAMESPACE


class MigPartition(pulumi.ComponentResource):
    config_name: str
    strategy: str
    pre_start_script: str

    def __init__(self, name: str, args: MigPartitionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:mig:MigPartition", name, None, opts)
        sharing = args.pool.sharing
        if not isinstance(sharing, Mig):
            raise ValueError(f"pool {args.pool.name} is not a MIG pool")
        gpu = catalog.gpu(args.pool.gpu)
        # The stack config already checked the layout; fitting again here keeps the component safe to use alone.
        layout = fit_layout(gpu, sharing.mig_layout)
        self.config_name = sharing.config_name
        self.strategy = sharing.strategy
        self.pre_start_script = mig_setup.pre_start_script(gpu, sharing.mig_layout, self.config_name)
        k8s.core.v1.ConfigMap(
            f"{name}-mig-parted",
            k8s.core.v1.ConfigMapInitArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=f"{kube_names.MIG_PARTED_CONFIG_MAP_NAME}-{args.pool.name}",
                    namespace=args.namespace,
                    labels={
                        kube_names.LABEL_MANAGED_BY: "pulumi",
                        kube_names.LABEL_POOL: args.pool.name,
                    },
                ),
                data={
                    kube_names.MIG_PARTED_CONFIG_KEY: mig_setup.mig_parted_config_text(
                        sharing.mig_layout, self.config_name
                    )
                },
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs(
            {
                "configName": self.config_name,
                "strategy": self.strategy,
                "instancesPerGpu": len(layout.placements),
            }
        )
