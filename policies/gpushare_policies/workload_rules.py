"""The workloads' side: the services that use the slots, judged against the plan (gpushare/workload_fit.py).

Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs, Pods and DaemonSets that are not device plugins,
with the HorizontalPodAutoscalers that scale them, in gpushare's own program and in anyone else's. The
plan comes from the stack config in gpushare's own program, and otherwise from the policy config
(`gpusharePlan`, which `gpushare plan --stack S --policy-config` prints for `--policy-pack-config`).

What cannot work is mandatory everywhere (`workload-gpu-request`, `workload-gpu-resource-offered`,
`workload-tolerates-pool-taints`). What may wait or degrade (replicas, maxReplicas and the rollout's surge
against the slots at nodes.max, declared memory against the per-slot budget, a placement that reaches no
pool) is `workload-fits-pool` (mandatory) in gpushare's own program and `workload-fits-pool-advisory` in
others, where the pool's owner is another team; a CrossGuard policy has one level, so the two are twins
that judge alike and each speaks on its own kind of stack. Without a plan, `workload-fits-pool-advisory`
says which workloads were not judged, and for what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpushare import workload_fit
from gpushare.plan import build_plan
from gpushare.pool_offers import (
    PLAN_PROPERTY,
    PLAN_SCHEMA,
    WORKLOAD_FITS_POOL,
    WORKLOAD_FITS_POOL_ADVISORY,
    WORKLOAD_GPU_REQUEST,
    WORKLOAD_GPU_RESOURCE_OFFERED,
    WORKLOAD_TOLERATES_POOL_TAINTS,
    PoolOffer,
    offers_from_json,
    pool_offers,
)
from gpushare_policies.props import Resource, resources_of
from gpushare_policies.settings import StackFacts, current_stack, refusing_unknown_properties
from gpushare_policies.workloads import daemon_set_plugin

PLAN_CONFIG_SCHEMA: Final = PolicyConfigSchema(properties={PLAN_PROPERTY: PLAN_SCHEMA})
_AUTOSCALER_KIND: Final = "HorizontalPodAutoscaler"
_HOW_TO_PASS_THE_PLAN: Final = (
    "pass the plan: gpushare plan --stack <stack> --policy-config > plan.json, then "
    "pulumi preview --policy-pack-config plan.json"
)


def _kind(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:Deployment` -> `Deployment` (any API version); None for other providers."""
    provider, _, rest = resource_type.partition(":")
    return rest.rpartition(":")[2] if provider == "kubernetes" else None


@dataclass(frozen=True)
class _Judged:
    resource: Resource
    workload: workload_fit.Workload


@dataclass(frozen=True)
class _Program:
    workloads: tuple[_Judged, ...]
    autoscalers: tuple[workload_fit.Autoscaler, ...]
    offers: tuple[PoolOffer, ...] | None
    """None when neither the stack config nor the policy config gives the plan."""
    own: bool
    """gpushare's own program: the stack has a valid `gpushare:` config."""
    plan_problem: str | None


def _with_name(res: Resource) -> dict[str, Any]:
    props = dict(res.props)
    given = props.get("metadata")
    metadata = dict(given) if isinstance(given, dict) else {}
    metadata.setdefault("name", res.name)  # auto-named objects take the resource's name (and a suffix)
    props["metadata"] = metadata
    return props


def _program(args: StackValidationArgs, stack: StackFacts) -> _Program:
    workloads: list[_Judged] = []
    autoscalers: list[workload_fit.Autoscaler] = []
    for res in resources_of(args):
        kind = _kind(res.type)
        if kind == _AUTOSCALER_KIND:
            autoscaler = workload_fit.autoscaler_of(_with_name(res))
            if autoscaler is not None:
                autoscalers.append(autoscaler)
            continue
        if kind not in workload_fit.WORKLOAD_KINDS or (kind == "DaemonSet" and daemon_set_plugin(res)):
            continue
        workload = workload_fit.workload_of(kind, _with_name(res))
        if workload is not None and workload.gpu_resources:
            workloads.append(_Judged(res, workload))
    own = stack.config is not None
    offers: tuple[PoolOffer, ...] | None = None
    problem = None
    if stack.config is not None:
        offers = pool_offers(build_plan(stack.config))
    else:
        given = args.get_config().get(PLAN_PROPERTY)
        if given is not None:
            offers = offers_from_json(given)
            problem = None if offers is not None else f"policy config {PLAN_PROPERTY} is not a gpushare plan"
    return _Program(tuple(workloads), tuple(autoscalers), offers, own, problem)


def _judging(
    rule: str, speaks: Callable[[_Program], bool]
) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        program = _program(args, current_stack())
        if not speaks(program):
            return
        for judged in program.workloads:
            for finding in workload_fit.judge(judged.workload, program.offers or (), program.autoscalers):
                if finding.rule == rule:
                    report_violation(finding.message, judged.resource.urn)

    return validate


def _not_judged(program: _Program) -> str | None:
    """What `workload-fits-pool-advisory` says when no plan reached the pack."""
    if program.offers is not None or not program.workloads:
        return None
    names = ", ".join(j.workload.label for j in program.workloads)
    why = program.plan_problem or "the stack has no gpushare: config and the policy config no gpushare plan"
    return (
        f"{why}: GPU workloads judged only by what they carry ({names}). Not judged: the resource names "
        "their pools offer, the pools' taints, requests above one on shared pools, replicas, maxReplicas "
        f"and the rollout's surge against the pools' slots, declared memory against the per-slot budget; "
        f"{_HOW_TO_PASS_THE_PLAN}."
    )


def _advise(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    program = _program(args, current_stack())
    if program.own:
        return
    message = _not_judged(program)
    if message is not None:
        report_violation(message, None)
        return
    _judging(WORKLOAD_FITS_POOL, lambda p: True)(args, report_violation)


def _policy(
    name: str,
    description: str,
    validate: Callable[[StackValidationArgs, ReportViolation], None],
    remediation: str,
    level: EnforcementLevel | None = None,
) -> StackValidationPolicy:
    return StackValidationPolicy(
        name=name,
        description=description,
        validate=refusing_unknown_properties(PLAN_CONFIG_SCHEMA, validate),
        enforcement_level=level,
        config_schema=PLAN_CONFIG_SCHEMA,
        remediation_steps=remediation,
    )


WORKLOAD_GPU_REQUEST_POLICY: Final = _policy(
    WORKLOAD_GPU_REQUEST,
    "A GPU workload's requests can be admitted: requests equal limits, at most one of a shared resource per "
    "container where the plugin refuses more (failRequestsGreaterThanOne), no pod larger than a node.",
    _judging(WORKLOAD_GPU_REQUEST, lambda p: True),
    "Set the GPU resource's requests equal to its limits (or limits alone); ask for one slot per container "
    "on a shared pool and run more replicas; keep a pod within one node's slots.",
    # Mandatory whatever the pack's own level: what cannot work blocks in every program, while the pack
    # turns advisory on programs without gpushare: config (settings.pack_enforcement_level).
    EnforcementLevel.MANDATORY,
)
WORKLOAD_GPU_RESOURCE_OFFERED_POLICY: Final = _policy(
    WORKLOAD_GPU_RESOURCE_OFFERED,
    "A GPU workload asks for a resource the pools it reaches offer (their mode and MIG strategy decide).",
    _judging(WORKLOAD_GPU_RESOURCE_OFFERED, lambda p: True),
    "Ask for a resource name the pool offers (the message lists them), or select a pool that offers it.",
    EnforcementLevel.MANDATORY,
)
WORKLOAD_TOLERATES_POOL_TAINTS_POLICY: Final = _policy(
    WORKLOAD_TOLERATES_POOL_TAINTS,
    "A GPU workload tolerates the taints of the pools that offer its resource.",
    _judging(WORKLOAD_TOLERATES_POOL_TAINTS, lambda p: True),
    "Add the tolerations the message names to the pod template.",
    EnforcementLevel.MANDATORY,
)
WORKLOAD_FITS_POOL_POLICY: Final = _policy(
    WORKLOAD_FITS_POOL,
    "In gpushare's own program: a GPU workload's replicas, HPA maxReplicas and rollout surge fit its pools' "
    "slots at nodes.max, its declared memory fits a slot's budget, and it selects a pool.",
    _judging(WORKLOAD_FITS_POOL, lambda p: p.own),
    "Use the replica count, maxReplicas, maxSurge/maxUnavailable or memory the message names, or give the "
    "pool more nodes (nodes.max) or a measurement that fits the service.",
    EnforcementLevel.MANDATORY,
)
WORKLOAD_FITS_POOL_ADVISORY_POLICY: Final = _policy(
    WORKLOAD_FITS_POOL_ADVISORY,
    "In programs gpushare did not write: workload-fits-pool as advice (the pools belong to another team), "
    "and what could not be judged without the plan.",
    _advise,
    "As workload-fits-pool; without the plan, pass it with --policy-pack-config.",
    EnforcementLevel.ADVISORY,
)

WORKLOAD_POLICIES: Final = (
    WORKLOAD_GPU_REQUEST_POLICY,
    WORKLOAD_GPU_RESOURCE_OFFERED_POLICY,
    WORKLOAD_TOLERATES_POOL_TAINTS_POLICY,
    WORKLOAD_FITS_POOL_POLICY,
    WORKLOAD_FITS_POOL_ADVISORY_POLICY,
)
