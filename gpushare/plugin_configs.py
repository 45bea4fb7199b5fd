"""The device-plugin config file of every pool (and the `any` fallback), with checksum and provenance.

The same entries fill the ConfigMap (DaemonSet mode) and the chart's `config.map` (Helm mode); the
checksum goes on the pods that read an entry, so a changed entry rolls exactly those pods.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from gpushare import device_plugin, mps
from gpushare.plan import FALLBACK_KEY, GPU_RESOURCE, PoolPlan, SharingPlan


def config_checksum(text: str) -> str:
    """What goes in `gpushare.io/config-sha256` on the pods that read a config entry."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class PluginConfigEntry:
    key: str
    text: str
    provenance: dict[str, object]

    @property
    def sha256(self) -> str:
        return config_checksum(self.text)

    @property
    def provenance_json(self) -> str:
        return json.dumps(self.provenance, sort_keys=True, separators=(",", ":"))


def _pool_entry(plan: PoolPlan) -> PluginConfigEntry:
    if plan.shared and plan.mps:
        config = device_plugin.mps_config(
            [(s.resource, s.tuning.replicas) for s in plan.shared], mps.MPS_ROOT
        )
    elif plan.shared:
        config = device_plugin.time_slicing_config(
            [(s.resource, s.tuning.replicas) for s in plan.shared], plan.mig_strategy
        )
    else:
        config = device_plugin.exclusive_config(plan.mig_strategy)
    sharing = plan.pool.sharing
    measurement = plan.pool.measurement
    provenance: dict[str, object] = {
        "pool": plan.name,
        "gpu": plan.gpu.key,
        "mode": sharing.mode,
        "migStrategy": plan.mig_strategy,
        "resources": [
            {
                "resource": s.resource,
                "migProfile": s.tuning.mig_profile,
                "memoryMiB": s.tuning.memory_mib,
                "measuredMiB": s.tuning.measured_mib,
                "ceiling": s.tuning.ceiling,
                "replicas": s.tuning.replicas,
            }
            for s in plan.shared
        ],
    }
    if plan.client_memory_limit_mib is not None:
        provenance["mpsClientMemoryLimitMiB"] = plan.client_memory_limit_mib
    if measurement is not None:
        provenance["measuredMiB"] = measurement.measured_mib
        provenance["measuredAt"] = measurement.measured_at
        provenance["source"] = measurement.source
    return PluginConfigEntry(plan.name, device_plugin.render(config), provenance)


def _fallback_entry(plan: SharingPlan) -> PluginConfigEntry:
    """`any` shares nothing unless the stack opts in (`sharing.fallback`); its provenance has the same
    shape as a pool's, so the policy pack reads both alike."""
    fallback = plan.fallback
    shared = [(GPU_RESOURCE, fallback.tuning)] if fallback.tuning is not None and fallback.shared else []
    if shared:
        config = device_plugin.time_slicing_config([(r, t.replicas) for r, t in shared], "none")
    else:
        config = device_plugin.exclusive_config("none")
    setting = fallback.setting
    provenance: dict[str, object] = {
        "pool": None,
        "gpu": setting.gpu if setting else None,
        "mode": "time-slicing" if setting else "exclusive",
        "migStrategy": "none",
        "resources": [
            {
                "resource": resource,
                "migProfile": None,
                "memoryMiB": tuning.memory_mib,
                "measuredMiB": tuning.measured_mib,
                "ceiling": tuning.ceiling,
                "replicas": tuning.replicas,
            }
            for resource, tuning in shared
        ],
    }
    if setting is not None:
        provenance["measuredMiB"] = setting.measured_mib
        provenance["measuredAt"] = setting.measured_at
        provenance["source"] = setting.source
    return PluginConfigEntry(FALLBACK_KEY, device_plugin.render(config), provenance)


def plugin_config_entries(plan: SharingPlan) -> tuple[PluginConfigEntry, ...]:
    """One entry per pool an NVIDIA plugin serves (not qGPU pools), in stack order, then `any`."""
    return (*(_pool_entry(p) for p in plan.pools if p.nvidia_plugin), _fallback_entry(plan))
