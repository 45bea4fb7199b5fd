"""MPS pools (`sharing.mps` in a device-plugin config file), judged where a plugin serves them.

For every node pool and every device plugin that lands on it (the same pairing `config-key-exists` and
`mig-only-on-mig-capable-gpus` use), the file the plugin applies there (the chart's config-manager: the
pool's `nvidia.com/device-plugin.config` key, else `config.default`; a DaemonSet: its `--config-file`):
- `mps-plugin-supported`: a file asking for MPS is served by a plugin that runs it (0.17.1 and later;
  TKE's v0.14.5 ignores `sharing.mps` and shares nothing), on a GPU from Volta on;
- `mps-not-with-mig`: never with migStrategy mixed (the plugin refuses it and crash-loops) or single, and
  never on a MIG pool (MPS shares whole GPUs only);
- `mps-control-daemon-scheduled`: the pool's nodes carry `nvidia.com/mps.capable=true`, the label the
  chart's and the operator's MPS control-daemon DaemonSets select; without the daemon no client starts;
- `mps-replicas-tuned` (every MPS file, wherever it is): replicas at most the tuning rule's
  floor(ceiling x memory / measured), as for time-slicing, and each client's limit (memory / replicas)
  holding measured / ceiling (`gpushare.mps`).
The rules are in `gpushare.mps`; this module only finds the files and the pools.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare import device_plugin, kube_names, mps
from gpushare.device_plugin import DevicePluginConfigError
from gpushare.errors import GpushareError
from gpushare.plan import FALLBACK_KEY
from gpushare.stack.model import Mig
from gpushare_policies.config_files import (
    NEWEST_PLUGIN_VERSION,
    ConfigSource,
    SharedEntry,
    asks_for_mps,
    read_plugin_config,
)
from gpushare_policies.reporting import report_once
from gpushare_policies.settings import TUNING_CONFIG_SCHEMA, configured_ceiling, refusing_unknown_properties
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.tuning_rules import basis_for, tuned_maximum
from gpushare_policies.workloads import HelmPlugin, NodePoolView, Workload


@dataclass(frozen=True)
class Served:
    """The config file one plugin applies on one pool's nodes."""

    pool: NodePoolView
    workload: Workload
    where: str
    content: str
    version: str
    overrides: Mapping[str, object]

    def mig_strategy(self) -> str | None:
        return read_plugin_config(self.content, self.version).effective_mig_strategy(
            self.overrides, self.version
        )


def _served(view: StackView) -> Iterator[Served]:
    for pool in view.node_pools:
        if pool.labels is None:
            continue
        for workload in view.workloads_on(pool):
            if isinstance(workload, HelmPlugin):
                source = view.helm_config(workload)
                if source is None or not workload.enabled:
                    continue
                selected = pool.labels.get(kube_names.LABEL_PLUGIN_CONFIG)
                key: str = (
                    selected
                    if selected is not None and selected in source.data
                    else (workload.config_default or FALLBACK_KEY)
                )
                overrides: Mapping[str, object] = workload.overrides()
            else:
                reference = workload.config_reference()
                source = view.referenced_config(reference)
                if source is None or reference is None:
                    continue
                key = reference.key
                try:
                    overrides = workload.flag_overrides()
                except GpushareError:
                    continue
            content = source.data.get(key)
            if content is not None and asks_for_mps(content):
                yield Served(pool, workload, source.where(key), content, workload.plugin_version, overrides)


def _check_supported(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    report = report_once(report_violation)
    for served in _served(view_of(args)):
        name = served.pool.name
        if not device_plugin.version_at_least(served.version, mps.FIRST_MPS_PLUGIN_VERSION):
            report(
                f"node pool {name}: {served.where} shares its GPUs with MPS (sharing.mps), but "
                f"{served.workload.label} runs device plugin {served.version}, which ignores sharing.mps: "
                "the GPUs are not shared at all. MPS needs NVIDIA's plugin "
                f"{mps.FIRST_MPS_PLUGIN_VERSION} or later (devicePlugin.mode helm or gpu-operator); or "
                "time-slice them.",
                served.pool.resource.urn,
            )
        gpu = served.pool.gpu
        problem = gpu and mps.compute_capability_problem(gpu.key, gpu.compute_capability)
        if problem:
            report(
                f"node pool {name}: {served.where} shares with MPS, but {problem}.", served.pool.resource.urn
            )


def _mig_pool(pool: NodePoolView) -> str | None:
    """Why the pool's GPUs are cut into MIG instances, or None."""
    if pool.mig_enable:
        return "TKE turns MIG on (nodeConfig.gpuArgs.migEnable)"
    label = (pool.labels or {}).get(kube_names.LABEL_MIG_CONFIG)
    if label and label != "all-disabled":
        return f"its nodes are labelled {kube_names.LABEL_MIG_CONFIG}={label}"
    if pool.stack_pool is not None and isinstance(pool.stack_pool.sharing, Mig):
        return f"the stack's pool {pool.stack_pool.name} is a MIG pool"
    return None


def _check_not_with_mig(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    report = report_once(report_violation)
    for served in _served(view_of(args)):
        name = served.pool.name
        strategy = served.mig_strategy()
        if strategy in ("mixed", "single"):
            problem = mps.mig_strategy_problem(strategy)
            report(
                f"node pool {name}: {served.where} shares with MPS under {served.workload.label}'s migStrategy "
                f"{problem}.",
                served.pool.resource.urn,
            )
        why = _mig_pool(served.pool)
        if why:
            report(
                f"node pool {name}: {served.where} shares with MPS, but {why}: MPS shares whole GPUs only "
                "(the plugin fails allocations on MIG devices). Time-slice the MIG instances, or use MPS on "
                "a pool without MIG.",
                served.pool.resource.urn,
            )


def _check_daemon_scheduled(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    report = report_once(report_violation)
    for served in _served(view_of(args)):
        if not device_plugin.version_at_least(served.version, mps.FIRST_MPS_PLUGIN_VERSION):
            continue  # mps-plugin-supported: no daemon to schedule
        labels = served.pool.labels or {}
        value = labels.get(mps.LABEL_MPS_CAPABLE)
        if value != mps.MPS_CAPABLE_VALUE:
            found = "it has none" if value is None else f"it has {value!r}"
            report(
                f"node pool {served.pool.name}: {served.where} shares with MPS, but the MPS control daemon "
                f"({served.workload.label}) runs only on nodes labelled "
                f"{mps.LABEL_MPS_CAPABLE}={mps.MPS_CAPABLE_VALUE} and {found}: no MPS client can start. "
                "Label the pool (gpushare does for mode mps).",
                served.pool.resource.urn,
            )


def _mps_entries(content: str) -> tuple[SharedEntry, ...] | None:
    """The file's `sharing.mps` resources as the plugins with MPS read them; None when they refuse it."""
    try:
        parsed = device_plugin.parse(content, NEWEST_PLUGIN_VERSION)
    except (DevicePluginConfigError, GpushareError):
        return None
    shared = parsed.config.sharing.mps
    return tuple(SharedEntry(r.name, r.replicas) for r in shared.resources) if shared else ()


def _mps_files(view: StackView) -> Iterator[tuple[ConfigSource, str, tuple[SharedEntry, ...]]]:
    for source in view.config_sources:
        for key, content in sorted(source.plugin_configs().items()):
            entries = _mps_entries(content) if asks_for_mps(content) else None
            if entries:
                yield source, key, entries


def _check_tuned(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    ceiling = configured_ceiling(args.get_config())
    report = report_once(report_violation)
    for source, key, entries in _mps_files(view):
        plugin_view = read_plugin_config(source.data[key], NEWEST_PLUGIN_VERSION)
        for entry in entries:
            if entry.replicas is None:
                continue
            maximum = tuned_maximum(source, key, entry, plugin_view, view.stack, ceiling)
            if isinstance(maximum, str):
                report(
                    f"{source.where(key)}: MPS {entry.resource_name} replicas {entry.replicas} is not tuned: "
                    f"{maximum}. Measure the largest process and give it to the pool (sharing.measuredMiB); "
                    "replica counts are derived, never typed.",
                    source.resource.urn,
                )
                continue
            if entry.replicas > maximum.replicas:
                report(
                    f"{source.where(key)}: MPS {entry.resource_name} replicas {entry.replicas} exceeds the tuned "
                    f"maximum {maximum.replicas} = {maximum.explanation}.",
                    source.resource.urn,
                )
                continue
            basis = basis_for(source, key, view.stack)
            if isinstance(basis, str) or basis.measured_mib is None or entry.replicas < 1:
                continue
            problem = mps.client_limit_problem(
                basis.gpu.memory_mib, entry.replicas, basis.measured_mib, ceiling
            )
            if problem:
                report(f"{source.where(key)}: {problem}.", source.resource.urn)


MPS_PLUGIN_SUPPORTED: Final = StackValidationPolicy(
    name="mps-plugin-supported",
    description="A pool's config shares with MPS only where its device plugin runs MPS (0.17.1 and later) "
    "and its GPU is Volta or newer.",
    validate=_check_supported,
    remediation_steps="Run NVIDIA's device plugin 0.17.1 or later on the pool (devicePlugin.mode helm or "
    "gpu-operator), or share the pool with time-slicing.",
)
MPS_NOT_WITH_MIG: Final = StackValidationPolicy(
    name="mps-not-with-mig",
    description="MPS never with migStrategy mixed or single, and never on a MIG pool.",
    validate=_check_not_with_mig,
    remediation_steps="Leave migStrategy unset (none) for MPS pools, and time-slice MIG instances instead of "
    "using MPS on them.",
)
MPS_CONTROL_DAEMON_SCHEDULED: Final = StackValidationPolicy(
    name="mps-control-daemon-scheduled",
    description="Every node pool shared with MPS is labelled nvidia.com/mps.capable=true, so the MPS control "
    "daemon runs on its nodes.",
    validate=_check_daemon_scheduled,
    remediation_steps="Label the pool nvidia.com/mps.capable=true (gpushare does for pools in mode mps).",
)
MPS_REPLICAS_TUNED: Final = StackValidationPolicy(
    name="mps-replicas-tuned",
    description="MPS replicas are at most floor(ceiling x memory / measured), and each client's limit "
    "(memory / replicas) holds the measured process with the ceiling's headroom.",
    validate=refusing_unknown_properties(TUNING_CONFIG_SCHEMA, _check_tuned),
    config_schema=TUNING_CONFIG_SCHEMA,
    remediation_steps="Give the pool its measured process (sharing.measuredMiB) and let gpushare derive the "
    "replicas (gpushare advise --gpu <model> --measured-mib <MiB> --mode mps).",
)

MPS_POLICIES: Final = (
    MPS_PLUGIN_SUPPORTED,
    MPS_NOT_WITH_MIG,
    MPS_CONTROL_DAEMON_SCHEDULED,
    MPS_REPLICAS_TUNED,
)
