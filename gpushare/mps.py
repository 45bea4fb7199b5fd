"""MPS pools: where NVIDIA's device plugin can share a GPU with MPS, and the memory each client gets.

Under MPS (`sharing.mps`, plugin 0.15 and later; here 0.17.1 and 0.20.0) the plugin advertises
`replicas` slots per GPU like time-slicing, and its MPS control daemon gives every client a pinned-memory
limit of the card's memory divided by the replicas (and 100/replicas % of the SMs). The replicas come
from the one tuning rule, so the limit is at least `measured / ceiling`; `client_limit_problem` says so
or why not. What the pinned plugin versions refuse (shared/reference/nvidia-device-plugin-and-mig.md,
A.3 and A.4): MPS before 0.17.1 is an unknown key (ignored: the GPU is not shared at all), MPS with
`--mig-strategy=mixed` stops the plugin, MPS on MIG devices fails at allocation, and MPS needs
`--mps-root` (the chart and the operator set MPS_ROOT; gpushare also writes it into the file).

Pure domain: the stack model, the plan, the policy pack and `verify` read these rules.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

from gpushare import kube_names
from gpushare.device_plugin.model import CHART_MPS_ROOT, MPS_ERA, version_at_least

MODE: Final = "mps"
# GFD (and gpushare on the pool's nodes) label MPS nodes with this; the chart's and the operator's MPS
# control-daemon DaemonSets select it (chart 0.17.1 templates/daemonset-mps-control-daemon.yml).
LABEL_MPS_CAPABLE: Final = kube_names.LABEL_MPS_CAPABLE
MPS_CAPABLE_VALUE: Final = "true"
# GFD's label of the strategy the plugin applies (v0.17.1 and later): time-slicing | mps | none.
LABEL_SHARING_STRATEGY: Final = "nvidia.com/gpu.sharing-strategy"
SHARING_STRATEGY_VALUE: Final = "mps"
# GFD's label of the replicas of the shared resource (`nvidia.com/gpu.replicas`).
LABEL_GPU_REPLICAS: Final = "nvidia.com/gpu.replicas"
# The control daemon's DaemonSet: `<release fullname>-mps-control-daemon` from the chart (release
# `nvidia-device-plugin`), `nvidia-device-plugin-mps-control-daemon` from the GPU Operator.
CONTROL_DAEMON_SUFFIX: Final = "-mps-control-daemon"
CONTROL_DAEMON_CONTAINER: Final = "mps-control-daemon-ctr"
MPS_ROOT: Final = CHART_MPS_ROOT
FIRST_MPS_PLUGIN_VERSION: Final = MPS_ERA
# MPS limits a client's pinned device memory from Volta on (compute capability 7.0).
MIN_COMPUTE_CAPABILITY: Final = (7, 0)


def plugin_supports_mps(plugin_version: str) -> bool:
    """0.17.1 and 0.20.0 read `sharing.mps`; 0.14.5 (TKE's) ignores the key and shares nothing."""
    return version_at_least(plugin_version, FIRST_MPS_PLUGIN_VERSION)


def version_problem(plugin_mode: str, plugin_version: str) -> str | None:
    """Why this plugin cannot run an MPS pool, or None."""
    if plugin_mode == "daemonsets":
        return (
            f"MPS needs NVIDIA's plugin {FIRST_MPS_PLUGIN_VERSION} or later with its MPS control daemon; "
            "daemonsets mode runs TKE's v0.14.5, which ignores sharing.mps: use devicePlugin.mode helm or "
            "gpu-operator, or time-slicing"
        )
    if not plugin_supports_mps(plugin_version):
        return (
            f"device plugin {plugin_version} has no MPS (from {FIRST_MPS_PLUGIN_VERSION} on; it ignores "
            "sharing.mps): pin devicePlugin.version 0.17.1 or later"
        )
    return None


def mig_strategy_problem(mig_strategy: str | None) -> str | None:
    """The chart passes a top-level migStrategy to the plugin as MIG_STRATEGY env, overriding the file."""
    if mig_strategy == "mixed":
        return (
            "mixed: the plugin refuses MPS with it ('using --mig-strategy=mixed is not supported with "
            "MPS') and crash-loops; leave migStrategy unset"
        )
    if mig_strategy == "single":
        return "single: MPS shares whole GPUs only, not MIG devices; leave migStrategy unset"
    return None


def compute_capability_problem(gpu_key: str, compute_capability: str) -> str | None:
    major, _, minor = compute_capability.partition(".")
    if (int(major), int(minor or 0)) < MIN_COMPUTE_CAPABILITY:
        return f"{gpu_key} (compute capability {compute_capability}) predates Volta: MPS limits no memory"
    return None


def client_memory_limit_mib(memory_mib: int, replicas: int) -> int:
    """The pinned-memory limit of one MPS client: the card's memory / replicas, in whole MiB (rounded
    down: INFERRED from the plugin writing the limit in MiB)."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    return memory_mib // replicas


def client_limit_problem(memory_mib: int, replicas: int, measured_mib: int, ceiling: float) -> str | None:
    """Why the per-client limit would not hold the measured process with the ceiling's headroom
    (limit x ceiling >= measured, exactly), or None."""
    limit = client_memory_limit_mib(memory_mib, replicas)
    if Fraction(str(ceiling)) * limit >= measured_mib:
        return None
    needed = math.ceil(Fraction(measured_mib) / Fraction(str(ceiling)))
    return (
        f"the MPS per-client limit {memory_mib} MiB / {replicas} = {limit} MiB is below the {measured_mib} MiB "
        f"measured with the ceiling's headroom ({needed} MiB at {ceiling:g}): a client would hit the limit"
    )
