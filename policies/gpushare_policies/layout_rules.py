"""MIG layouts against the measurement they serve: `mig-layout-underused` (advisory).

A time-sliced MIG pool whose layout yields fewer slots than another layout with at least as many
instances, for the same measurement and ceiling, leaves memory unused without buying isolation. The
layouts and their slots come from `gpushare.advise.layout_options` (what `python -m gpushare advise` prints):
every layout the GPU's geometry allows, slots by the one tuning rule.

Layouts are read from the stack config's MIG pools and from the mig-parted ConfigMaps labelled with a
pool (what the MIG manager applies, in case it was edited by hand); the measurement is the pool's
`timeSlicing.measuredMiB`. A MIG pool without a measurement is not time-sliced: each instance is one slot,
and choosing fewer, larger instances is a choice of isolation, not under-use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare import catalog, kube_names
from gpushare.advise.layout_options import advise, better_layout, layout_option
from gpushare.errors import GpushareError
from gpushare.mig import parted as mig_parted
from gpushare.stack.model import Mig, Pool
from gpushare_policies.config_files import YAML_FAILURES
from gpushare_policies.props import dig, string_map
from gpushare_policies.reporting import report_once
from gpushare_policies.settings import (
    TUNING_CONFIG_SCHEMA,
    StackFacts,
    configured_ceiling,
    refusing_unknown_properties,
)
from gpushare_policies.stack_view import StackView, view_of


def _ceiling(policy_config: Mapping[str, Any], stack: StackFacts) -> float:
    # As time-slicing-replicas-underused: a stack that tunes below the pack's ceiling is not under-using.
    ceiling = configured_ceiling(policy_config)
    if stack.config is not None:
        ceiling = min(ceiling, stack.config.sharing.utilization_ceiling)
    return ceiling


def _flow(layout: Mapping[str, int]) -> str:
    return "{" + ", ".join(f'"{name}": {count}' for name, count in layout.items()) + "}"


def underuse_message(pool: Pool, layout: Mapping[str, int], ceiling: float, where: str) -> str | None:
    """Why `layout` under-uses `pool`'s GPUs, naming the better layout; None when it does not."""
    measurement = pool.measurement
    if not isinstance(pool.sharing, Mig) or measurement is None:
        return None
    gpu = catalog.GPUS.get(pool.gpu)
    if gpu is None or not gpu.mig_capable:
        return None  # mig-only-on-mig-capable-gpus reports it
    try:
        report = advise(gpu, measurement.measured_mib, ceiling)
    except GpushareError:
        return None  # the process fits nowhere: the stack model and the tuning policies report it
    current = layout_option(report, layout)
    if current is None:
        return None  # does not fit, or an instance cannot hold the process: other policies report it
    better = better_layout(report, layout)
    if better is None:
        return None
    assert better.mig_layout is not None  # better_layout only returns MIG options
    return (
        f"{where}: MIG layout {current.describe()} yields {current.slots} slot(s) in "
        f"{current.isolation_domains} instance(s) for {measurement.measured_mib} MiB (ceiling {ceiling:g}); "
        f"{better.describe()} yields {better.slots} in {better.isolation_domains}: migLayout "
        f"{_flow(better.mig_layout)}, layoutName {better.layout_name()} (python -m gpushare advise --gpu "
        f"{gpu.key} --measured-mib {measurement.measured_mib})."
    )


def _pool_urn(view: StackView, pool_name: str) -> str:
    return next((p.resource.urn for p in view.node_pools if p.name == pool_name), "")


def _applied_layouts(view: StackView) -> Iterator[tuple[str, str, dict[str, int], str]]:
    """(pool name, where, layout, urn) for every MIG-enabled entry of a pool-labelled mig-parted ConfigMap."""
    for source in view.config_sources:
        if source.kind != "ConfigMap":
            continue
        pool_name = string_map(dig(source.resource.props, "metadata", "labels")).get(kube_names.LABEL_POOL)
        if not pool_name:
            continue
        for key, content in source.data.items():
            try:
                config = mig_parted.parse(content)
            except (GpushareError, *YAML_FAILURES):
                continue  # not a mig-parted file (or a broken one: mig-only-on-mig-capable-gpus says so)
            for name, entries in config.mig_configs.items():
                for index, entry in enumerate(entries):
                    if entry.mig_enabled and entry.mig_devices:
                        layout = {p: n for p, n in entry.mig_devices.items() if n}
                        where = f"{source.where(key)} mig-configs.{name}[{index}] (pool {pool_name})"
                        yield pool_name, where, layout, source.resource.urn


def _check_layout_underused(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    stack = view.stack
    if stack.config is None:
        return
    ceiling = _ceiling(args.get_config(), stack)
    report = report_once(report_violation)
    seen: set[tuple[str, tuple[tuple[str, int], ...]]] = set()
    for index, pool in enumerate(stack.config.pools):
        if isinstance(pool.sharing, Mig):
            layout = pool.sharing.mig_layout
            seen.add((pool.name, tuple(sorted(layout.items()))))
            where = f"stack config gpushare:pools[{index}] ({pool.name})"
            report(underuse_message(pool, layout, ceiling, where), _pool_urn(view, pool.name))
    for pool_name, where, layout, urn in _applied_layouts(view):
        stack_pool = stack.pool(pool_name)
        if stack_pool is None or (pool_name, tuple(sorted(layout.items()))) in seen:
            continue  # the same layout as the stack's: reported once, above
        report(underuse_message(stack_pool, layout, ceiling, where), urn)


MIG_LAYOUT_UNDERUSED: Final = StackValidationPolicy(
    name="mig-layout-underused",
    description="A time-sliced MIG layout yields fewer slots for its measurement than another layout with "
    "at least as many instances (python -m gpushare advise names it).",
    validate=refusing_unknown_properties(TUNING_CONFIG_SCHEMA, _check_layout_underused),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=TUNING_CONFIG_SCHEMA,
)

LAYOUT_POLICIES: Final = (MIG_LAYOUT_UNDERUSED,)
