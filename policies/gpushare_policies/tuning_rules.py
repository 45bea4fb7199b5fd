"""Time-slicing entries against the tuning rule: replicas = floor(ceiling x memory / measured).

Resource policies on every ConfigMap and device-plugin Helm release that holds device-plugin configs.
For an entry under key K serving resource R:
- the GPU: the stack config's pool K (its `gpu`) or, for the fallback key `any`, the stack config's
  `sharing.fallback` (absent: `any` may not share); else (no such pool, or no stack config) the `gpu` of
  the `gpushare.io/tuning-K` provenance annotation (ConfigMap annotations, or the chart's `podAnnotations`);
- the memory: always the catalog's, for the GPU or, for `nvidia.com/mig-<profile>` (and for
  `nvidia.com/gpu` under the `single` MIG strategy), for the MIG instance;
- the measurement: the pool's or the fallback's (`measuredMiB`, `measuredAt`), else the annotation's.
`any` is a key like any other: it serves GPUs nobody named, so it shares only when the stack names the GPU
it is tuned for.

Measurement age is an advisory (`time-slicing-measurement-fresh`), not part of the mandatory rule: the
replicas still satisfy the rule for the recorded measurement, and a deploy must not start failing because
the calendar moved (an urgent fix or rollback would be blocked); an old measurement is a review matter.
The age limit is the policy config's `maxMeasurementAgeDays`; a stack that sets its own
`sharing.maxMeasurementAgeDays` can only tighten it. Ages count to the stack loader's today (the calendar
day in UTC+14, `gpushare.stack.fields.latest_date_on_earth`), so a measurement the loader accepts is never
"in the future" here; a limit of N days advises from day N + 1 on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpushare import catalog
from gpushare.catalog import GpuModel, MigProfile
from gpushare.errors import GpushareError
from gpushare.plan import FALLBACK_KEY, GPU_RESOURCE
from gpushare.stack import fields as stack_fields
from gpushare.stack.model import PROJECT, Mig
from gpushare.tuning import MIN_SHARED_REPLICAS, max_replicas
from gpushare_policies.config_files import (
    ConfigSource,
    PluginConfigView,
    SharedEntry,
    asks_for_mps,
    read_plugin_config,
)
from gpushare_policies.props import integer, items, resource_of, text
from gpushare_policies.settings import (
    MEASUREMENT_AGE_CONFIG_SCHEMA,
    TUNING_CONFIG_SCHEMA,
    StackFacts,
    configured_ceiling,
    configured_max_age_days,
    current_stack,
    refusing_unknown_properties,
)
from gpushare_policies.workloads import resource_config_source

MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"


@dataclass(frozen=True)
class Basis:
    """What a key's replicas rest on: its GPU and measurement, and where they were found."""

    gpu: GpuModel
    measured_mib: int | None
    measured_at: str | None
    origin: str
    mig_profiles: tuple[str, ...] = ()
    """The MIG profiles its GPUs are cut into, when known (stack layout or annotation)."""


@dataclass(frozen=True)
class TunedMaximum:
    replicas: int
    explanation: str


def _positive(value: object) -> int | None:
    number = integer(value)
    return number if number is not None and number > 0 else None


def basis_for(source: ConfigSource, key: str, stack: StackFacts) -> Basis | str:
    """The basis of key `key`, or why there is none."""
    if key == FALLBACK_KEY and stack.config is not None:
        fallback = stack.config.sharing.fallback
        if fallback is None:
            return (
                f"the stack config names no GPU and measurement for the fallback key ({PROJECT}:sharing."
                "fallback), so the nodes it serves are unknown"
            )
        return Basis(
            gpu=catalog.gpu(fallback.gpu),
            measured_mib=fallback.measured_mib,
            measured_at=fallback.measured_at,
            origin=f"stack config {PROJECT}:sharing.fallback",
        )
    pool = stack.pool(key)
    if pool is not None:
        sharing = pool.sharing
        measurement = pool.measurement
        return Basis(
            gpu=catalog.gpu(pool.gpu),
            measured_mib=measurement.measured_mib if measurement else None,
            measured_at=measurement.measured_at if measurement else None,
            origin=f"stack pool {pool.name}",
            mig_profiles=tuple(sharing.mig_layout) if isinstance(sharing, Mig) else (),
        )
    annotation = f"annotation gpushare.io/tuning-{key} of {source.describe()}"
    provenance = source.provenance(key)
    if provenance is None:
        return f"{stack.describe_missing_pool(key)} and no readable gpushare.io/tuning-{key} annotation"
    gpu = catalog.GPUS.get(text(provenance.get("gpu")) or "")
    if gpu is None:
        return f"{stack.describe_missing_pool(key)} and the {annotation} names no GPU of the catalog"
    profiles = tuple(
        profile
        for entry in items(provenance.get("resources"))
        if isinstance(entry, dict) and (profile := text(entry.get("migProfile")))
    )
    return Basis(
        gpu=gpu,
        measured_mib=_positive(provenance.get("measuredMiB")),
        measured_at=text(provenance.get("measuredAt")),
        origin=f"annotation gpushare.io/tuning-{key}",
        mig_profiles=profiles,
    )


def _memory(basis: Basis, resource_name: str, mig_strategy: str) -> tuple[int, str] | str:
    """The memory one replica set shares: the GPU's, or the MIG instance's."""
    gpu = basis.gpu
    if resource_name.startswith(MIG_RESOURCE_PREFIX):
        profile = gpu.mig_profile_by_resource(resource_name.removeprefix("nvidia.com/"))
        if profile is None:
            return f"{resource_name} is not a MIG profile of {gpu.key}"
        return profile.memory_mib, f"{gpu.key} MIG {profile.name}"
    if resource_name == GPU_RESOURCE and mig_strategy == "single" and gpu.mig_capable:
        # `single` advertises the MIG instances themselves as nvidia.com/gpu.
        known: list[MigProfile] = []
        for name in basis.mig_profiles:
            try:
                known.append(gpu.mig_profile(name))
            except GpushareError:
                continue
        if not known:
            return f"migStrategy single shares {gpu.key} MIG instances, but no MIG layout is known for them"
        smallest = min(known, key=lambda p: p.memory_mib)
        return smallest.memory_mib, f"{gpu.key} MIG {smallest.name}"
    return gpu.memory_mib, gpu.key


def tuned_maximum(
    source: ConfigSource,
    key: str,
    entry: SharedEntry,
    view: PluginConfigView,
    stack: StackFacts,
    ceiling: float,
) -> TunedMaximum | str:
    """The most replicas the rule allows for `entry`, or why it cannot be known."""
    basis = basis_for(source, key, stack)
    if isinstance(basis, str):
        return basis
    if basis.measured_mib is None:
        return f"no measurement ({basis.origin} has no measuredMiB)"
    strategy = view.effective_mig_strategy(source.overrides, source.plugin_version) or view.file_mig_strategy
    memory = _memory(basis, entry.resource_name, strategy or "none")
    if isinstance(memory, str):
        return memory
    memory_mib, what = memory
    return TunedMaximum(
        max_replicas(memory_mib, basis.measured_mib, ceiling),
        f"floor({ceiling:g} x {memory_mib} MiB {what} / {basis.measured_mib} MiB measured, {basis.origin})",
    )


def _holds_plugin_configs(args: ResourceValidationArgs) -> bool:
    return resource_config_source(resource_of(args)) is not None


def _shared_entries(args: ResourceValidationArgs) -> Iterator[tuple[ConfigSource, str, PluginConfigView]]:
    source = resource_config_source(resource_of(args))
    if source is None:
        return
    for key, content in sorted(source.plugin_configs().items()):
        yield source, key, read_plugin_config(content, source.plugin_version)


# --------------------------------------------------------------------------------------------------------
# Validators


def _check_tuned(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    ceiling = configured_ceiling(args.get_config())
    for source, key, view in _shared_entries(args):
        for entry in view.shared:
            if entry.replicas is None:
                continue
            maximum = tuned_maximum(source, key, entry, view, stack, ceiling)
            if isinstance(maximum, str):
                where = (
                    f"name the GPU in {PROJECT}:sharing.fallback ({{gpu, measuredMiB}}) or let `any` share "
                    "nothing"
                    if key == FALLBACK_KEY
                    else "give it to the pool (sharing.measuredMiB)"
                )
                report_violation(
                    f"{source.where(key)}: {entry.resource_name} replicas {entry.replicas} is not tuned: "
                    f"{maximum}. Measure the largest process (nvidia-smi --query-compute-apps) and {where}; "
                    "replica counts are derived, never typed.",
                    None,
                )
            elif entry.replicas > maximum.replicas:
                report_violation(
                    f"{source.where(key)}: {entry.resource_name} replicas {entry.replicas} exceeds the tuned "
                    f"maximum {maximum.replicas} = {maximum.explanation}. Time-slicing does not isolate "
                    "memory: more replicas than fit run the GPU out of memory.",
                    None,
                )


def _underuse_ceiling(policy_config: Mapping[str, Any], stack: StackFacts) -> float:
    # A stack that deliberately tunes below the pack's ceiling is not under-using its GPUs.
    ceiling = configured_ceiling(policy_config)
    if stack.config is not None:
        ceiling = min(ceiling, stack.config.sharing.utilization_ceiling)
    return ceiling


def _check_underused(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    ceiling = _underuse_ceiling(args.get_config(), stack)
    for source, key, view in _shared_entries(args):
        for entry in view.shared:
            if entry.replicas is None:
                continue
            maximum = tuned_maximum(source, key, entry, view, stack, ceiling)
            if isinstance(maximum, TunedMaximum) and entry.replicas < maximum.replicas:
                report_violation(
                    f"{source.where(key)}: {entry.resource_name} replicas {entry.replicas} is below the "
                    f"tuned {maximum.replicas} = {maximum.explanation}: {maximum.replicas - entry.replicas} "
                    "slot(s) per device left unused.",
                    None,
                )


def _check_minimum(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for source, key, view in _shared_entries(args):
        for entry in view.shared:
            if entry.replicas is not None and entry.replicas < MIN_SHARED_REPLICAS:
                report_violation(
                    f"{source.where(key)}: {entry.resource_name} replicas {entry.replicas} is below "
                    f"{MIN_SHARED_REPLICAS}: the plugin refuses the file ('number of replicas must be >= 2') "
                    "and crash-loops. To not share a GPU, leave the entry out.",
                    None,
                )


def _check_fail_requests(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for source, key, view in _shared_entries(args):
        if view.time_slicing and not view.fail_requests_greater_than_one:
            names = ", ".join(e.resource_name for e in view.shared) or "its resources"
            report_violation(
                f"{source.where(key)}: sharing.timeSlicing shares {names} without "
                "failRequestsGreaterThanOne: true, so a pod asking for 2 replicas gets 2 slices of the same "
                "GPU and believes it has 2 GPUs. Set failRequestsGreaterThanOne: true.",
                None,
            )


def _check_mig_needs_mixed(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for source, key, view in _shared_entries(args):
        mig_entries = [
            e.resource_name for e in view.shared if e.resource_name.startswith(MIG_RESOURCE_PREFIX)
        ]
        strategy = view.effective_mig_strategy(source.overrides, source.plugin_version)
        if mig_entries and strategy is not None and strategy != "mixed":
            report_violation(
                f"{source.where(key)}: time-slices {', '.join(mig_entries)} with migStrategy {strategy}; "
                "only migStrategy mixed advertises nvidia.com/mig-<profile> resources, so the entry shares "
                "nothing.",
                None,
            )


def measurement_age_days(measured_at: str, today: date) -> int | None:
    try:
        return (today - date.fromisoformat(measured_at[:10])).days
    except ValueError:
        return None


def measurement_age_limit(policy_config: Mapping[str, Any], stack: StackFacts) -> int:
    """The oldest measurement (days) the pack accepts: its config, tightened by the stack's own limit."""
    limit = configured_max_age_days(policy_config)
    # A stack that sets its own limit can only tighten the pack's.
    if stack.config is not None and "max_measurement_age_days" in stack.config.sharing.model_fields_set:
        limit = min(limit, stack.config.sharing.max_measurement_age_days)
    return limit


def stale_measurement(measured_at: str, limit: int, today: date) -> str | None:
    """Why a measurement taken `measured_at` is too old (or no past date) on `today`; None if it is fresh."""
    age = measurement_age_days(measured_at, today)
    if age is None or age < 0:
        return "which is not a date in the past"
    if age > limit:
        return f"{age} days ago, older than {limit} days"
    return None


def _check_measurement_age(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    limit = measurement_age_limit(args.get_config(), stack)
    # The loader's today (UTC+14, the latest calendar day on Earth): a measuredAt it accepts as not in the
    # future is never in the future here either. Tests fix it by replacing that one function.
    today = stack_fields.latest_date_on_earth()
    for source, key, view in _shared_entries(args):
        if not view.shared and not asks_for_mps(view.text):  # MPS clients rest on the measurement too
            continue
        basis = basis_for(source, key, stack)
        if isinstance(basis, str) or basis.measured_mib is None:
            continue  # no measurement at all: time-slicing-replicas-tuned (mps-replicas-tuned) reports it
        if basis.measured_at is None:
            report_violation(
                f"{source.where(key)}: the measurement ({basis.origin}) has no measuredAt, so its age is "
                "unknown.",
                None,
            )
            continue
        problem = stale_measurement(basis.measured_at, limit, today)
        if problem is None:
            continue
        report_violation(
            f"{source.where(key)}: measured {basis.measured_at} ({basis.origin}), {problem}. Re-measure the "
            "largest process; the workload may have grown.",
            None,
        )


TIME_SLICING_REPLICAS_TUNED: Final = ResourceValidationPolicy(
    name="time-slicing-replicas-tuned",
    description="Every time-slicing entry rests on a measurement and stays within "
    "floor(ceiling x memory / measured), memory from the catalog.",
    validate=refusing_unknown_properties(TUNING_CONFIG_SCHEMA, _check_tuned, _holds_plugin_configs),
    config_schema=TUNING_CONFIG_SCHEMA,
    remediation_steps="Measure the largest process's GPU memory (nvidia-smi --query-compute-apps=pid,used_memory "
    "--format=csv), put it on the pool (sharing.measuredMiB, measuredAt) and let gpushare derive the "
    "replicas (gpushare tune --gpu <model> --measured-mib <MiB> prints them); in a program gpushare did "
    "not write, set replicas to at most that value and record the basis in a gpushare.io/tuning-<key> "
    "annotation.",
)
TIME_SLICING_REPLICAS_UNDERUSED: Final = ResourceValidationPolicy(
    name="time-slicing-replicas-underused",
    description="Time-slicing replicas below the tuned value leave GPU slots unused.",
    validate=refusing_unknown_properties(TUNING_CONFIG_SCHEMA, _check_underused, _holds_plugin_configs),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=TUNING_CONFIG_SCHEMA,
)
TIME_SLICING_REPLICAS_MINIMUM: Final = ResourceValidationPolicy(
    name="time-slicing-replicas-minimum",
    description="Time-slicing replicas must be at least 2 (the device plugin refuses fewer).",
    validate=_check_minimum,
    remediation_steps="Set replicas to 2 or more, or drop the time-slicing entry so the GPU is not shared (the device "
    "plugin refuses 0 and 1).",
)
FAIL_REQUESTS_GREATER_THAN_ONE: Final = ResourceValidationPolicy(
    name="fail-requests-greater-than-one",
    description="Shared GPUs set failRequestsGreaterThanOne: true.",
    validate=_check_fail_requests,
    remediation_steps="Set sharing.timeSlicing.failRequestsGreaterThanOne: true in the device-plugin config, "
    "so a pod asking for more than one shared GPU is refused instead of getting two slices of one GPU",
)
MIG_TIME_SLICING_NEEDS_MIXED: Final = ResourceValidationPolicy(
    name="mig-time-slicing-needs-mixed",
    description="Time-slicing nvidia.com/mig-* resources needs migStrategy mixed.",
    validate=_check_mig_needs_mixed,
    remediation_steps="Set migStrategy: mixed in the device-plugin config (flags.migStrategy), or time-slice "
    "nvidia.com/gpu instead of nvidia.com/mig-* resources.",
)
TIME_SLICING_MEASUREMENT_FRESH: Final = ResourceValidationPolicy(
    name="time-slicing-measurement-fresh",
    description="The measurement a time-slicing (or MPS) entry rests on is recent (measuredAt within "
    "maxMeasurementAgeDays).",
    validate=refusing_unknown_properties(
        MEASUREMENT_AGE_CONFIG_SCHEMA, _check_measurement_age, _holds_plugin_configs
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=MEASUREMENT_AGE_CONFIG_SCHEMA,
)

TUNING_POLICIES: Final = (
    TIME_SLICING_REPLICAS_TUNED,
    TIME_SLICING_REPLICAS_UNDERUSED,
    TIME_SLICING_REPLICAS_MINIMUM,
    FAIL_REQUESTS_GREATER_THAN_ONE,
    MIG_TIME_SLICING_NEEDS_MIXED,
    TIME_SLICING_MEASUREMENT_FRESH,
)
