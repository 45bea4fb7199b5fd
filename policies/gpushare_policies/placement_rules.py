"""Where device plugins land, and which GPUs may use MIG: stack policies over the node pools.

Node sets are modelled by node-pool labels: a workload lands on a pool when its nodeSelector is a subset
of the pool's labels and its required node affinity (if any) matches them. The chart >= 0.15 adds a
default affinity (NFD's NVIDIA PCI label, Tegra, or `nvidia.com/gpu.present=true`); NFD, when the chart
deploys it (`gfd.enabled`, `nfd.enabled`) or the stack declares one (`nfdPresent`), labels every GPU
node. Taints and tolerations are not modelled (every plugin here tolerates the GPU taints).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare import catalog, gpu_driver, kube_names
from gpushare.catalog import GpuModel
from gpushare.errors import GpushareError
from gpushare.mig import parted as mig_parted
from gpushare.mig.geometry import fit_layout
from gpushare.plan import FALLBACK_KEY
from gpushare.stack.model import PROJECT
from gpushare.yaml_bounds import safe_load_bounded
from gpushare_policies.config_files import YAML_FAILURES, ConfigSource, read_plugin_config
from gpushare_policies.props import dig, mapping, string_map, text
from gpushare_policies.reporting import report_once
from gpushare_policies.settings import StackFacts
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.tuning_rules import basis_for
from gpushare_policies.workloads import DaemonSetPlugin, HelmPlugin, NodePoolView, Placement, Workload

NO_MIG_STRATEGY: Final = "none"


# --------------------------------------------------------------------------------------------------------
# one-device-plugin-per-node


def _why_here(view: StackView, workload: Workload) -> str:
    if isinstance(workload, DaemonSetPlugin) and workload.managed and workload.resource is None:
        return (
            f"{workload.label} (TKE's: the pool is not labelled {kube_names.LABEL_DEVICE_ENABLE}="
            f"{kube_names.DEVICE_DISABLE_VALUE} and no DaemonSetPatch parks it)"
        )
    placement = view.placement(workload)
    return f"{workload.label} ({placement.describe()})" if placement else workload.label


def _check_one_plugin(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    for pool in view.node_pools:
        landed = view.workloads_on(pool)
        if len(landed) > 1:
            plugins = "; ".join(_why_here(view, w) for w in landed)
            report_violation(
                f"node pool {pool.name}: {len(landed)} device plugins would run on each of its nodes: "
                f"{plugins}. They register the same resources with the kubelet and fight over them; opt the "
                f"pools out of TKE's plugin (managedPlugin.action optOut labels them "
                f"{kube_names.LABEL_DEVICE_ENABLE}={kube_names.DEVICE_DISABLE_VALUE}), park it, or narrow the "
                "nodeSelectors so that one plugin serves each pool.",
                pool.resource.urn,
            )


# --------------------------------------------------------------------------------------------------------
# mig-only-on-mig-capable-gpus


def _pool_gpu_problem(pool: NodePoolView, what: str) -> str | None:
    gpu = pool.gpu
    if gpu is None:
        return (
            f"node pool {pool.name}: {what}, but its GPU is unknown (no {kube_names.LABEL_GPU_MODEL} label "
            f"and instance type {pool.instance_type or 'unset'} is not in the catalog)"
        )
    if not gpu.mig_capable:
        return f"node pool {pool.name}: {what}, but {gpu.key} ({gpu.architecture}) does not support MIG"
    return None


def _strategy_for(view: StackView, workload: Workload, pool: NodePoolView) -> tuple[str, str] | None:
    """The MIG strategy `workload` runs with on `pool`'s nodes, and which config decided it."""
    key: str | None
    if isinstance(workload, HelmPlugin):
        source = view.helm_config(workload)
        if source is None:
            return None
        # The config-manager's choice: the node label's key, else `config.default` (gpushare sets `any`).
        selected = (pool.labels or {}).get(kube_names.LABEL_PLUGIN_CONFIG)
        default = workload.config_default or FALLBACK_KEY
        key = selected if selected is not None and selected in source.data else default
        content = source.data.get(key)
        version, overrides = workload.plugin_version, workload.overrides()
    else:
        reference = workload.config_reference()
        source = view.referenced_config(reference)
        key = reference.key if reference else None
        content = source.data.get(key) if source is not None and key is not None else None
        version = workload.plugin_version
        try:
            overrides = workload.flag_overrides()
        except GpushareError:
            return None
        if reference is not None and content is None:
            return None  # the file is missing: config-key-exists reports it
    config_view = read_plugin_config(content or "", version)
    strategy = config_view.effective_mig_strategy(overrides, version)
    if strategy is None:
        return None
    if "migStrategy" in overrides:
        decided_by = "values.migStrategy" if isinstance(workload, HelmPlugin) else "its command line or env"
    elif source is not None and key is not None:
        decided_by = source.where(key)
    else:
        decided_by = "the plugin's default"
    return strategy, decided_by


def _source_key_gpus(view: StackView) -> Iterator[tuple[ConfigSource, str, GpuModel]]:
    for source in view.config_sources:
        for key in source.plugin_configs():
            basis = basis_for(source, key, view.stack)
            if not isinstance(basis, str):
                yield source, key, basis.gpu


def _stack_layout_problems(stack: StackFacts) -> Iterator[str]:
    """MIG layouts of the stack config (read raw: an invalid layout makes the whole model fail)."""
    for index, pool in enumerate(stack.values.get(f"{PROJECT}:pools") or []):
        sharing = mapping(mapping(pool).get("sharing"))
        if sharing.get("mode") != "mig":
            continue
        gpu = catalog.GPUS.get(text(mapping(pool).get("gpu")) or "")
        where = f"stack config {PROJECT}:pools[{index}] ({text(mapping(pool).get('name')) or '?'})"
        if gpu is None:
            continue  # an unknown GPU is the stack model's error, reported with the config
        layout = mapping(sharing.get("migLayout"))
        try:
            fit_layout(gpu, layout)
        except GpushareError as err:
            yield f"{where}: MIG layout {layout} does not fit {gpu.key}: {err.message}"


def _mig_parted_problems(view: StackView) -> Iterator[tuple[str, str]]:
    """mig-parted ConfigMaps labelled with their pool: every layout must fit the pool's GPU."""
    pools_by_name = {pool.name: pool for pool in view.node_pools}
    for source in view.config_sources:
        pool_name = string_map(dig(source.resource.props, "metadata", "labels")).get(kube_names.LABEL_POOL)
        stack_pool = view.stack.pool(pool_name) if pool_name else None
        gpu = catalog.GPUS.get(stack_pool.gpu) if stack_pool else None
        if gpu is None and pool_name in pools_by_name:
            gpu = pools_by_name[pool_name].gpu
        if gpu is None:
            continue
        for key, content in source.data.items():
            if not _looks_like_mig_parted(content):
                continue
            try:
                mig_parted.check_fits(mig_parted.parse(content), gpu)
            except GpushareError as err:
                yield f"{source.where(key)} (pool {pool_name}, {gpu.key}): {err}", source.resource.urn


def _looks_like_mig_parted(content: str) -> bool:
    try:
        document: Any = safe_load_bounded(content)
    except YAML_FAILURES:
        return False
    return isinstance(document, dict) and "mig-configs" in document


def _check_mig_capable(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    report = report_once(report_violation)
    for pool in view.node_pools:
        labels: Mapping[str, str] = pool.labels or {}
        if pool.mig_enable:
            report(_pool_gpu_problem(pool, "nodeConfig.gpuArgs.migEnable is true"), pool.resource.urn)
        if kube_names.LABEL_MIG_CONFIG in labels:
            label = f"{kube_names.LABEL_MIG_CONFIG}={labels[kube_names.LABEL_MIG_CONFIG]}"
            report(_pool_gpu_problem(pool, f"label {label} asks for a MIG layout"), pool.resource.urn)
        gpu = pool.gpu
        if gpu is None or gpu.mig_capable:
            continue
        for workload in view.workloads_on(pool):
            decided = _strategy_for(view, workload, pool)
            if decided is not None and decided[0] != NO_MIG_STRATEGY:
                strategy, decided_by = decided
                report(
                    f"node pool {pool.name}: {workload.label} runs with migStrategy {strategy} (from "
                    f"{decided_by}) on {gpu.key}, which does not support MIG; use migStrategy none.",
                    workload.urn or pool.resource.urn,
                )
    for source, key, gpu in _source_key_gpus(view):
        if gpu.mig_capable:
            continue
        config_view = read_plugin_config(source.data[key], source.plugin_version)
        file_strategy = config_view.effective_mig_strategy(source.overrides, source.plugin_version)
        if file_strategy not in (None, NO_MIG_STRATEGY):
            report(
                f"{source.where(key)}: migStrategy {file_strategy} for {gpu.key}, which does not support "
                "MIG.",
                source.resource.urn,
            )
    for message in _stack_layout_problems(view.stack):
        report(message, "")
    for message, urn in _mig_parted_problems(view):
        report(message, urn)


# --------------------------------------------------------------------------------------------------------
# mig-driver-supported


def _check_mig_driver(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    for pool in view.node_pools:
        gpu = pool.gpu
        version = text(dig(pool.resource.props, "nodeConfig", "gpuArgs", "driver", "version"))
        if not pool.mig_enable or gpu is None or version is None:
            continue
        problem = gpu_driver.mig_driver_problem(gpu, version)
        if problem:
            report_violation(
                f"node pool {pool.name}: nodeConfig.gpuArgs.migEnable with {problem}; pick a newer driver "
                "(gpushare:pools[].driver, strings from TKE's DescribeGPUInfo).",
                pool.resource.urn,
            )


# --------------------------------------------------------------------------------------------------------
# helm-plugin-schedulable, gpu-pool-labels


def _needs_gpu_present_label(view: StackView) -> list[HelmPlugin]:
    """Charts >= 0.15 on their default affinity and without NFD: only `nvidia.com/gpu.present=true`
    admits them to a node."""
    if view.node_feature_discovery:
        return []
    return [
        h
        for h in view.helm_plugins
        if h.enabled and h.has_default_affinity and not mapping(h.values.get("affinity"))
    ]


def _check_helm_schedulable(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    gpu_pools = [p for p in view.node_pools if p.is_gpu_pool and p.labels is not None]
    for plugin in view.helm_plugins:
        placement = plugin.placement
        if not plugin.enabled or placement is None or not gpu_pools:
            continue
        selector_only = Placement(placement.node_selector)
        blocked = [
            pool.name
            for pool in gpu_pools
            if selector_only.lands_on(pool.node_labels(view.node_feature_discovery))
            and not view.lands_on(plugin, pool)
        ]
        if not blocked:
            continue
        nowhere = " (on no GPU pool at all)" if not any(view.lands_on(plugin, p) for p in gpu_pools) else ""
        if mapping(plugin.values.get("affinity")):
            why = "its values.affinity matches none of their nodes' labels."
        else:
            why = (
                f"chart >= 0.15 requires NFD's NVIDIA PCI label or {kube_names.LABEL_GPU_PRESENT}=true on "
                "the node, and there is no node-feature-discovery (gfd.enabled / nfd.enabled, or "
                f"sharing.devicePlugin.nfdPresent). Label the pools {kube_names.LABEL_GPU_PRESENT}=true or "
                "enable GFD."
            )
        report_violation(
            f"{plugin.label} schedules on no node of pool(s) {', '.join(blocked)}{nowhere}: {why}",
            plugin.urn,
        )


def _device_enable_wanted(view: StackView) -> str | None:
    """TKE's switch value every GPU pool must carry: the stack's managedPlugin action decides (`disable`
    under optOut); without a stack config, `enable` when the stack patches TKE's DaemonSet (park/adopt),
    else any value (one-device-plugin-per-node then judges where TKE's plugin lands)."""
    if view.stack.config is not None:
        return view.stack.config.plugin.managed_plugin.device_enable_value
    patched = any(d.managed and d.resource is not None for d in view.daemon_sets)
    return kube_names.DEVICE_ENABLE_VALUE if patched else None


def _opted_out(view: StackView) -> bool:
    return view.stack.config is not None and view.stack.config.plugin.managed_plugin.action == "optOut"


def _managed_by_gpushare(view: StackView, pool: NodePoolView) -> bool:
    """gpushare's label rules judge only its own pools: every pool of a program with `gpushare:` config,
    and elsewhere (another team's program, the hosted component in it) a pool carrying a gpushare.io/
    label (components/gpu_node_pool.py sets them). A plain TKE GPU pool of another team's is not one."""
    if view.stack.config is not None:
        return True
    labels = pool.labels or {}
    return kube_names.LABEL_POOL in labels or kube_names.LABEL_GPU_MODEL in labels


def _check_pool_labels(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    needs_present = _needs_gpu_present_label(view)
    opted_out = _opted_out(view)
    required: dict[str, str | None] = {
        kube_names.LABEL_DEVICE_ENABLE: _device_enable_wanted(view),
        kube_names.LABEL_PLUGIN_CONFIG: None,  # any value: config-key-exists checks it names a key
    }
    if needs_present:
        required[kube_names.LABEL_GPU_PRESENT] = "true"
    for pool in view.node_pools:
        if not pool.is_gpu_pool or pool.labels is None or not _managed_by_gpushare(view, pool):
            continue
        switch = pool.labels.get(kube_names.LABEL_DEVICE_ENABLE)
        turned_on = opted_out and switch is not None and switch != kube_names.DEVICE_DISABLE_VALUE
        if turned_on:
            report_violation(
                f"node pool {pool.name} ({pool.gpu_key}) is labelled {kube_names.LABEL_DEVICE_ENABLE}={switch}, "
                "but the stack opts out of TKE's device plugin (managedPlugin.action optOut): TKE's DaemonSet "
                f"runs on its nodes beside gpushare's plugin. Label it {kube_names.LABEL_DEVICE_ENABLE}="
                f"{kube_names.DEVICE_DISABLE_VALUE}.",
                pool.resource.urn,
            )
        missing = [
            f"{label}={value}" if value else label
            for label, value in required.items()
            if (label not in pool.labels or (value is not None and pool.labels[label] != value))
            and not (turned_on and label == kube_names.LABEL_DEVICE_ENABLE)
        ]
        if not missing:
            continue
        why = (
            f" ({needs_present[0].label} without NFD needs {kube_names.LABEL_GPU_PRESENT})"
            if needs_present
            else ""
        )
        if opted_out and switch is None:
            why += (
                f" (managedPlugin.action optOut: without {kube_names.LABEL_DEVICE_ENABLE}="
                f"{kube_names.DEVICE_DISABLE_VALUE} TKE labels the nodes `enable` and its plugin runs there)"
            )
        report_violation(
            f"node pool {pool.name} ({pool.gpu_key}) lacks the label(s) its device plugin selects on: "
            f"{', '.join(missing)}{why}.",
            pool.resource.urn,
        )


ONE_DEVICE_PLUGIN_PER_NODE: Final = StackValidationPolicy(
    name="one-device-plugin-per-node",
    description="No two device plugins (our DaemonSets, the Helm chart, the GPU Operator's, TKE's DaemonSet "
    "unless parked or the pool opts out with nvidia-device-enable=disable) can land on the same node pool.",
    validate=_check_one_plugin,
    remediation_steps="Keep one device plugin per node pool: select disjoint pools with the DaemonSets' node selectors, "
    "park TKE's own plugin or label the pool nvidia-device-enable=disable.",
)
MIG_ONLY_ON_MIG_CAPABLE_GPUS: Final = StackValidationPolicy(
    name="mig-only-on-mig-capable-gpus",
    description="MIG (migEnable, nvidia.com/mig.config, a single/mixed strategy) only on GPUs that support "
    "it, with layouts that fit the GPU's geometry.",
    validate=_check_mig_capable,
    remediation_steps="Remove the MIG settings (migEnable, nvidia.com/mig.config, the single/mixed strategy) from pools "
    "whose GPU cannot do MIG, or choose a layout that fits the GPU (gpushare advise lists them).",
)
MIG_DRIVER_SUPPORTED: Final = StackValidationPolicy(
    name="mig-driver-supported",
    description="MIG node pools do not ask TKE for a GPU driver known to be too old for MIG on their GPU "
    "(H20: 535.161.07 or newer).",
    validate=_check_mig_driver,
    remediation_steps="Ask TKE for a GPU driver new enough for MIG on the pool's GPU (the message names the minimum), or "
    "turn MIG off for the pool.",
)
HELM_PLUGIN_SCHEDULABLE: Final = StackValidationPolicy(
    name="helm-plugin-schedulable",
    description="The device-plugin chart >= 0.15 can schedule on the GPU pools it selects (NFD or "
    "nvidia.com/gpu.present=true).",
    validate=_check_helm_schedulable,
    remediation_steps="Label the GPU pools nvidia.com/gpu.present=true, or enable Node Feature Discovery, so the chart's "
    "DaemonSet affinity matches them.",
)
GPU_POOL_LABELS: Final = StackValidationPolicy(
    name="gpu-pool-labels",
    description="Every GPU node pool gpushare manages (all of a gpushare stack's; elsewhere those with a "
    "gpushare.io/ label) carries the labels its device plugin selects on, and under managedPlugin optOut "
    "nvidia-device-enable=disable.",
    validate=_check_pool_labels,
    remediation_steps="Add the labels the message names to the node pool's labels (the device plugin's node selector), "
    "and nvidia-device-enable=disable under managedPlugin optOut.",
)

PLACEMENT_POLICIES: Final = (
    ONE_DEVICE_PLUGIN_PER_NODE,
    MIG_ONLY_ON_MIG_CAPABLE_GPUS,
    MIG_DRIVER_SUPPORTED,
    HELM_PLUGIN_SCHEDULABLE,
    GPU_POOL_LABELS,
)
