"""What a MIG manager and the GPU Operator read from the stack: mig-parted configs and who installs the driver.

- `mig-config-exists`: the value of a pool's `nvidia.com/mig.config` label is the name of a config in the
  mig-parted file the MIG manager on that pool reads, and that config fits the pool's GPU. The GPU
  Operator's MIG manager reads ONE file, `config.yaml` of the ConfigMap `migManager.config.name` in the
  release's namespace (or the chart-built one with `create`); without a name it generates its own from
  the hardware, which holds only `all-*` configs. Without an operator, the per-pool mig-parted ConfigMaps
  gpushare writes (labelled `gpushare.io/pool`) are what a MIG manager would be given.
- `operator-driver-consistent`: one driver per node. The operator installs its driver container where
  `driver.enabled` (chart default true) and the node does not say `nvidia.com/gpu.deploy.driver=false`;
  TKE installs one where the pool's `nodeConfig.gpuArgs` names a driver (VERIFIED), and by its GPU node
  set-up where it names none (INFERRED from TKE's guides: docs/modes.md, GPU Operator mode). The reverse (the operator's
  driver off where TKE installs none) cannot be told from TKE's node-pool inputs, which have no "no driver".
Both see what `pulumi preview` shows: the Release's values, the ConfigMaps and the node pools.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare import kube_names
from gpushare.errors import GpushareError
from gpushare.mig import parted as mig_parted
from gpushare.mig.parted import MigPartedConfig
from gpushare.stack.plugin_settings import MIG_CONFIG_ALL_DISABLED
from gpushare_policies.config_files import ConfigSource
from gpushare_policies.props import UNKNOWN, boolean, dig, mapping, string_map, text
from gpushare_policies.reporting import report_once
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.workloads import HelmPlugin, NodePoolView

GENERATED_CONFIG_PREFIX: Final = "all-"


# --------------------------------------------------------------------------------------------------------
# mig-config-exists


def _operators(view: StackView) -> list[HelmPlugin]:
    return [h for h in view.helm_plugins if h.is_operator]


def _mig_manager_on(operator: HelmPlugin, view: StackView, pool: NodePoolView) -> bool:
    enabled = boolean(dig(operator.values, "migManager", "enabled")) is not False
    placement = operator.operand_placement("mig-manager")
    return enabled and placement.lands_on(pool.node_labels(view.node_feature_discovery))


class _Generated:
    """The MIG manager generates its config from the hardware (no `migManager.config.name`)."""


GENERATED: Final = _Generated()
MigFile = tuple[str, str | None]
"""Where the file is, and its `config.yaml` text (None when the key is missing)."""


def _operator_mig_file(operator: HelmPlugin, view: StackView) -> MigFile | str | _Generated | None:
    """The file the operator's MIG manager reads, a problem, GENERATED, or None when unknown (preview)."""
    config = dig(operator.values, "migManager", "config")
    if config is UNKNOWN or dig(config, "name") is UNKNOWN or dig(config, "create") is UNKNOWN:
        return None
    if boolean(dig(config, "create")):
        data = string_map(dig(config, "data"))
        where = f"{operator.label} values.migManager.config.data"
        return where, data.get(kube_names.MIG_PARTED_CONFIG_KEY)
    name = text(dig(config, "name"))
    if not name:
        return GENERATED
    source = view.config_map(operator.namespace, name)
    if source is None:
        return (
            f"{operator.label}: values.migManager.config.name is {name!r}, but the stack creates no ConfigMap "
            f"{operator.namespace}/{name}: the MIG manager cannot start"
        )
    if not source.keys_known:
        return None
    return source.describe(), source.data.get(kube_names.MIG_PARTED_CONFIG_KEY)


def _pool_mig_files(
    view: StackView, pool: NodePoolView
) -> Iterator[tuple[HelmPlugin | None, MigFile | str | _Generated]]:
    """What each MIG manager on `pool` reads; without an operator, gpushare's per-pool mig-parted ConfigMaps."""
    operators = _operators(view)
    for operator in operators:
        if _mig_manager_on(operator, view, pool):
            found = _operator_mig_file(operator, view)
            if found is not None:
                yield operator, found
    if operators:
        return
    for source in view.config_sources:
        if _pool_label(source) == pool.name and source.keys_known:
            yield None, (source.describe(), source.data.get(kube_names.MIG_PARTED_CONFIG_KEY))


def _pool_label(source: ConfigSource) -> str | None:
    return string_map(dig(source.resource.props, "metadata", "labels")).get(kube_names.LABEL_POOL)


def _label_problem(pool: NodePoolView, wanted: str, where: str, content: str | None) -> str | None:
    label = f"{kube_names.LABEL_MIG_CONFIG}={wanted}"
    prefix = f"node pool {pool.name}: label {label}"
    if content is None:
        return (
            f"{prefix}: {where} has no key {kube_names.MIG_PARTED_CONFIG_KEY}, the file the MIG manager reads"
        )
    try:
        config = mig_parted.parse(content)
    except GpushareError as err:
        return f"{prefix}: {where} key {kube_names.MIG_PARTED_CONFIG_KEY} is not a mig-parted file: {err}"
    if wanted not in config.mig_configs:
        known = ", ".join(sorted(config.mig_configs)) or "none"
        return (
            f"{prefix} names no config in {where} (configs: {known}); the MIG manager fails on these "
            "nodes and leaves their GPUs as they are"
        )
    gpu = pool.gpu
    if gpu is None:
        return None  # mig-only-on-mig-capable-gpus reports an unknown GPU
    try:
        mig_parted.check_fits(MigPartedConfig(mig_configs={wanted: config.mig_configs[wanted]}), gpu)
    except GpushareError as err:
        return f"{prefix}: config {wanted!r} in {where} does not fit this pool's {gpu.key}: {err}"
    return None


def _generated_problem(pool: NodePoolView, wanted: str, operator: HelmPlugin | None) -> str | None:
    if wanted.startswith(GENERATED_CONFIG_PREFIX) or operator is None:
        return None
    return (
        f"node pool {pool.name}: label {kube_names.LABEL_MIG_CONFIG}={wanted}, but {operator.label} sets no "
        "values.migManager.config.name: the MIG manager generates its config from the hardware, which holds "
        f"only {GENERATED_CONFIG_PREFIX}* configs (e.g. {MIG_CONFIG_ALL_DISABLED}). Name a mig-parted "
        f"ConfigMap holding {wanted!r}."
    )


def _check_mig_config_exists(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    report = report_once(report_violation)
    for pool in view.node_pools:
        wanted = (pool.labels or {}).get(kube_names.LABEL_MIG_CONFIG)
        if not wanted:
            continue
        for operator, found in _pool_mig_files(view, pool):
            if isinstance(found, str):
                report(found, pool.resource.urn)
            elif isinstance(found, _Generated):
                report(_generated_problem(pool, wanted, operator), pool.resource.urn)
            else:
                report(_label_problem(pool, wanted, *found), pool.resource.urn)


# --------------------------------------------------------------------------------------------------------
# operator-driver-consistent


def _tke_driver(pool: NodePoolView) -> str:
    gpu_args = mapping(dig(pool.resource.props, "nodeConfig", "gpuArgs"))
    driver, custom = mapping(gpu_args.get("driver")), mapping(gpu_args.get("customDriver"))
    if driver:
        return f"TKE installs driver {text(driver.get('version')) or text(driver.get('name')) or '?'} (nodeConfig.gpuArgs.driver)"
    if custom:
        return "TKE installs a custom driver (nodeConfig.gpuArgs.customDriver)"
    return "TKE's GPU node set-up installs its driver (no nodeConfig.gpuArgs.driver: TKE's default)"


def _check_driver_consistent(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    for operator in _operators(view):
        setting = dig(operator.values, "driver", "enabled")
        if setting is UNKNOWN or boolean(setting) is False:
            continue
        stated = "true" if boolean(setting) else "unset (the chart's default is true)"
        placement = operator.operand_placement("driver")
        for pool in view.node_pools:
            if not pool.is_gpu_pool or pool.labels is None:
                continue
            if not placement.lands_on(pool.node_labels(view.node_feature_discovery)):
                continue
            report_violation(
                f"node pool {pool.name}: {operator.label} values.driver.enabled is {stated}, and "
                f"{_tke_driver(pool)}: two installers compete for one node's NVIDIA kernel module (the "
                "operator's driver container against the host's driver), and every operand waits on it. "
                "Set driver.enabled false (gpuOperator.driverEnabled) or label the pool "
                f"{kube_names.LABEL_OPERATOR_DEPLOY_PREFIX}driver=false.",
                pool.resource.urn,
            )


MIG_CONFIG_EXISTS: Final = StackValidationPolicy(
    name="mig-config-exists",
    description="Every nvidia.com/mig.config label value on a pool names a config in the mig-parted file the "
    "MIG manager reads, and that layout fits the pool's GPU.",
    validate=_check_mig_config_exists,
    remediation_steps="Add the named config to the mig-parted file the MIG manager reads, or change the pool's "
    "nvidia.com/mig.config label to a config that exists and fits the pool's GPU.",
)
OPERATOR_DRIVER_CONSISTENT: Final = StackValidationPolicy(
    name="operator-driver-consistent",
    description="The GPU Operator does not install a driver (driver.enabled) on pools where TKE's node set-up "
    "already installs one.",
    validate=_check_driver_consistent,
    remediation_steps="Set driver.enabled: false in the GPU Operator values for pools whose TKE node set-up installs the "
    "driver, or stop TKE installing it.",
)

OPERATOR_POLICIES: Final = (MIG_CONFIG_EXISTS, OPERATOR_DRIVER_CONSISTENT)
