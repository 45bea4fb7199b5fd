"""The GPU Operator mode: the chart's values and the two ConfigMaps its ClusterPolicy names, from the plan.

Every value set here exists in the pinned chart's `values.yaml` (v26.7.0) and reaches the ClusterPolicy
through its template. Why each default (confidence in docs/modes.md, "GPU Operator mode"):
- `driver.enabled`/`toolkit.enabled` false: TKE installs the driver and points containerd's `runc` at
  NVIDIA's runtime (VERIFIED by a third-party TKE guide); `cdi.enabled` false: TKE's containerd 1.6 has
  no CDI (INFERRED); `operator.runtimeClass` `runc`: the operator puts every operand on the RuntimeClass
  it names, and `nvidia` (the default) is no handler on TKE nodes (INFERRED; configurable).
- `devicePlugin.config` names ONE ConfigMap in the operator's namespace: one key per pool plus `any`,
  `default: any`; the plugin's config-manager picks a key per node from `nvidia.com/device-plugin.config`.
- `migManager.config` names ONE mig-parted ConfigMap (key `config.yaml`) holding every MIG pool's layout
  under its `nvidia.com/mig.config` name, plus `all-disabled` (the manager's default for unlabelled nodes);
  `WITH_REBOOT=true` because Tencent's GPU instances are pass-through VMs (a MIG mode change needs a reboot).
- `mig.strategy`: the operator passes it to the plugin as `MIG_STRATEGY`, which overrides every per-node
  file (as the device-plugin chart's `migStrategy` does): set only when every pool's file says the same,
  else empty, which the chart's template leaves out of the ClusterPolicy.

Seed pitfall 1 in this mode: the operator does not restart its plugin when a ConfigMap's data changes.
Both ConfigMaps are therefore named by the digest of their data (`<prefix>-<10 hex>`) and immutable: a
changed replica count is a new ConfigMap name in the Release values, so the ClusterPolicy changes, the
operator rewrites its plugin DaemonSet's config volume and the pods roll. A ConfigMap annotation or a pod
annotation would not do: the operator copies neither from a ConfigMap, and `daemonsets.annotations`
would roll every operand, not just the readers of the changed data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpushare import kube_names, mps
from gpushare.mig import setup as mig_setup
from gpushare.plan import FALLBACK_KEY, SharingPlan
from gpushare.plugin_configs import PluginConfigEntry
from gpushare.stack.model import Mig, pool_mig_strategy
from gpushare.stack.plugin_settings import MIG_CONFIG_ALL_DISABLED, GpuOperator

CHART: Final = "gpu-operator"
RELEASE_NAME: Final = "gpu-operator"
# The device-plugin DaemonSet the operator creates in its namespace (its `state-device-plugin` assets);
# its pods mount the ConfigMap `devicePlugin.config.name` names. The same name as TKE's DaemonSet
# (`kube_names.MANAGED_PLUGIN_NAME`, in kube-system): both follow NVIDIA's static manifest.
PLUGIN_DAEMONSET: Final = "nvidia-device-plugin-daemonset"
DEVICE_PLUGIN_CONFIG_PREFIX: Final = "gpushare-device-plugin-config"
MIG_PARTED_CONFIG_PREFIX: Final = kube_names.MIG_PARTED_CONFIG_MAP_NAME
WITH_REBOOT_ENV: Final = "WITH_REBOOT"
_DIGEST_LENGTH: Final = 10


def content_addressed_name(prefix: str, data: Mapping[str, str]) -> str:
    """`<prefix>-<first 10 hex of sha256(data as sorted JSON)>`: new data, new name."""
    digest = hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()
    return f"{prefix}-{digest[:_DIGEST_LENGTH]}"


@dataclass(frozen=True)
class OperatorConfigMap:
    name: str
    data: dict[str, str]


def device_plugin_config_map(entries: Sequence[PluginConfigEntry]) -> OperatorConfigMap:
    data = {entry.key: entry.text for entry in entries}
    return OperatorConfigMap(content_addressed_name(DEVICE_PLUGIN_CONFIG_PREFIX, data), data)


def mig_layouts(plan: SharingPlan) -> dict[str, dict[str, int]]:
    """`nvidia.com/mig.config` name -> layout, for every MIG pool (the stack model made names unique)."""
    return {
        p.pool.sharing.config_name: dict(p.pool.sharing.mig_layout)
        for p in plan.pools
        if isinstance(p.pool.sharing, Mig)
    }


def mig_parted_config_map(plan: SharingPlan) -> OperatorConfigMap | None:
    """The one mig-parted file of the MIG manager; None without MIG pools (the manager is then off)."""
    layouts = mig_layouts(plan)
    if not layouts:
        return None
    text = mig_setup.merged_mig_parted_config_text(layouts, MIG_CONFIG_ALL_DISABLED)
    data = {kube_names.MIG_PARTED_CONFIG_KEY: text}
    return OperatorConfigMap(content_addressed_name(MIG_PARTED_CONFIG_PREFIX, data), data)


def operator_mig_strategy(plan: SharingPlan) -> str:
    """The strategy every pool's file agrees on, else "" (left out of the ClusterPolicy: no env override)."""
    strategies = {pool_mig_strategy(p.pool) for p in plan.pools if p.nvidia_plugin}
    return strategies.pop() if len(strategies) == 1 else ""


# dcgm-exporter's switch for per-pod series under time-slicing (its --kubernetes-virtual-gpus flag).
DCGM_VIRTUAL_GPUS_ENV = "KUBERNETES_VIRTUAL_GPUS"


def release_values(
    plan: SharingPlan,
    operator: GpuOperator,
    device_plugin_config: OperatorConfigMap,
    mig_parted_config: OperatorConfigMap | None,
) -> dict[str, Any]:
    plugin = plan.stack.plugin
    values: dict[str, Any] = {
        "operator": {"runtimeClass": operator.runtime_class},
        "driver": {"enabled": operator.driver_enabled},
        "toolkit": {"enabled": operator.toolkit_enabled},
        "cdi": {"enabled": operator.cdi_enabled},
        # The operator schedules its operands by NFD's labels; a cluster with its own NFD says nfdPresent.
        "nfd": {"enabled": not plugin.nfd_present},
        # GFD labels nvidia.com/mig.capable, which the operator needs to place the MIG manager.
        "gfd": {"enabled": True},
        "mig": {"strategy": operator_mig_strategy(plan)},
        "devicePlugin": {
            "enabled": True,
            "config": {"create": False, "name": device_plugin_config.name, "default": FALLBACK_KEY},
        },
        "dcgmExporter": {
            "enabled": True,
            # The chart enables a ServiceMonitor by default; without the Prometheus Operator it has no CRD.
            "serviceMonitor": {"enabled": operator.prometheus_operator},
        },
    }
    if any(p.shared for p in plan.pools):
        # Per-pod GPU memory where pods share a GPU (docs/measurement-loop.md): dcgm-exporter adds one series
        # per sharing pod only with KUBERNETES_VIRTUAL_GPUS=true, and matches processes to pods through
        # /proc/<pid>/cgroup, which needs the host's PID namespace. The chart (v26.7.0) defaults hostPID to
        # false and sets no such env; its ClusterPolicy template passes both through.
        values["dcgmExporter"]["hostPID"] = True
        values["dcgmExporter"]["env"] = [{"name": DCGM_VIRTUAL_GPUS_ENV, "value": "true"}]
    if any(p.mps for p in plan.pools):
        # The operator runs its MPS control daemon on nodes labelled nvidia.com/mps.capable=true (GFD sets
        # it from the config; gpushare labels the pool too); the root is the one the configs' mpsRoot names.
        values["devicePlugin"]["mps"] = {"root": mps.MPS_ROOT}
    mig_manager: dict[str, Any] = {"enabled": mig_parted_config is not None}
    if mig_parted_config is not None:
        mig_manager["config"] = {
            "create": False,
            "name": mig_parted_config.name,
            "default": MIG_CONFIG_ALL_DISABLED,
        }
        if operator.mig_manager_with_reboot:
            mig_manager["env"] = [{"name": WITH_REBOOT_ENV, "value": "true"}]
    values["migManager"] = mig_manager
    return values
