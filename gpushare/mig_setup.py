"""How a MIG pool's nodes get their partitions: a pre-start script for TKE and a mig-parted config."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare import mig_parted
from gpushare.catalog import GpuModel
from gpushare.mig_geometry import create_instances_command, enable_mig_command
from gpushare.mig_parted import MigConfigEntry, MigPartedConfig


def pre_start_script(gpu: GpuModel, layout: Mapping[str, int], config_name: str) -> str:
    """Runs on every new node before the kubelet starts, so the device plugin finds the MIG devices.

    MIG mode survives a reboot but GPU instances do not: a node that reboots comes back unpartitioned
    unless NVIDIA's MIG manager applies the mig-parted config named by `nvidia.com/mig.config`.
    """
    return "\n".join(
        [
            "#!/bin/bash",
            f"# gpushare: partition every {gpu.key} on this node as {config_name} before the kubelet starts.",
            "set -euo pipefail",
            enable_mig_command(),
            "# Start from an empty GPU: drop compute and GPU instances left by an earlier layout.",
            "nvidia-smi mig -dci >/dev/null 2>&1 || true",
            "nvidia-smi mig -dgi >/dev/null 2>&1 || true",
            create_instances_command(gpu, layout),
            "nvidia-smi -L",
            "",
        ]
    )


def mig_parted_config_text(layout: Mapping[str, int], config_name: str) -> str:
    return mig_parted.render(mig_parted.single_layout_config(config_name, layout))


def merged_mig_parted_config_text(layouts: Mapping[str, Mapping[str, int]], disabled_name: str) -> str:
    """ONE mig-parted file for the GPU Operator's MIG manager (it mounts exactly one ConfigMap): every
    layout under its `nvidia.com/mig.config` name, sorted, plus `disabled_name` (MIG off), which the
    manager applies to MIG-capable nodes that carry no label."""
    configs: dict[str, tuple[MigConfigEntry, ...]] = {disabled_name: (MigConfigEntry(mig_enabled=False),)}
    for name in sorted(layouts):
        configs.update(mig_parted.single_layout_config(name, layouts[name]).mig_configs)
    return mig_parted.render(MigPartedConfig(mig_configs=configs))
