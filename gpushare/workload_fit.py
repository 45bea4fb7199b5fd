"""The workloads' side of the plan: whether a GPU workload can run, and fit, on the pools it reaches.

One judge for the policy pack (a program's Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs, Pods,
DaemonSets and HorizontalPodAutoscalers, as camelCase inputs) and for `verify` (the same objects as the API
server returns them). A workload reaches the pools whose node labels its nodeSelector and required node
affinity match; of those, it uses the ones that offer the resource it asks for and whose taints it
tolerates. Findings, by harm:
- cannot work (`WORKLOAD_GPU_REQUEST`, `WORKLOAD_GPU_RESOURCE_OFFERED`, `WORKLOAD_TOLERATES_POOL_TAINTS`):
  requests that differ from limits, more than one of a shared resource in a container where the plugin
  refuses it (`failRequestsGreaterThanOne`), a pod larger than any node of its pools, a resource none of
  its pools offers, taints it does not tolerate on every pool that offers its resource;
- may wait or degrade (`WORKLOAD_FITS_POOL`): replicas x slots per pod above the pools' slots at
  `nodes.max`, an HPA's `maxReplicas` above them, a rolling update whose surge pod finds no slot while no
  old pod may go first, a declared memory (`gpushare.io/measured-mib`) above the per-slot budget, and a
  placement that reaches no pool (or GPU nodes of no pool as well).
Each message names the number that would fit. Values that are absent, unknown (preview) or of the wrong
type are not judged.

Pure domain: no Pulumi, no cluster.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpushare import kube_names
from gpushare.pool_offers import (
    BLOCKING_EFFECTS,
    WORKLOAD_FITS_POOL,
    WORKLOAD_GPU_REQUEST,
    WORKLOAD_GPU_RESOURCE_OFFERED,
    WORKLOAD_TOLERATES_POOL_TAINTS,
    PoolOffer,
    Taint,
)
from gpushare.wire_numbers import whole_number

GPU_RESOURCE_PREFIX: Final = "nvidia.com/"
# The labels a GPU node of no gpushare pool carries that a workload could select on: TKE's switch, which
# TKE puts on every GPU node (kube_names). A placement that lands on it reaches GPU nodes outside the plan.
STRAY_GPU_NODE_LABELS: Final = {kube_names.LABEL_DEVICE_ENABLE: kube_names.DEVICE_ENABLE_VALUE}
# Kubernetes' rolling-update defaults (apps/v1 DeploymentSpec): 25 % surge rounded up, 25 % unavailable
# rounded down.
DEFAULT_MAX_SURGE: Final = "25%"
DEFAULT_MAX_UNAVAILABLE: Final = "25%"
_PERCENT = re.compile(r"^(\d+)%$")

# Where each kind keeps its pod template, and how many pods it runs at once.
_TEMPLATE_PATHS: Final = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
WORKLOAD_KINDS: Final = (*_TEMPLATE_PATHS, "Pod")


def _dig(value: object, *path: str) -> Any:
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _strings(value: object) -> dict[str, str] | None:
    """A string map (labels, nodeSelector); None when any entry is not a string (unknown)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        return None
    return {str(k): v for k, v in value.items()}


# --------------------------------------------------------------------------------------------------------
# Placement


@dataclass(frozen=True)
class Placement:
    node_selector: Mapping[str, str]
    terms: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] | None
    """Required node affinity: OR of AND-ed (key, operator, values); None when there is none."""
    tolerations: tuple[Mapping[str, Any], ...]

    def lands_on(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.node_selector.items()):
            return False
        if self.terms is None:
            return True
        return any(all(_matches(labels, *req) for req in term) for term in self.terms)

    def tolerates(self, taint: Taint) -> bool:
        return any(_tolerates(t, taint) for t in self.tolerations)


def _matches(labels: Mapping[str, str], key: str, operator: str, values: tuple[str, ...]) -> bool:
    value = labels.get(key)
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        left, right = whole_number(value), whole_number(values[0])
        if left is None or right is None:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if toleration.get("operator") == "Exists":
        return not key or key == taint.key
    return key == taint.key and (toleration.get("value") or "") == taint.value


def placement_of(pod_spec: Mapping[str, Any]) -> Placement | None:
    selector = _strings(pod_spec.get("nodeSelector"))
    if selector is None:
        return None
    raw_terms = _dig(pod_spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = None
    if raw_terms is not None:
        listed = _dig(raw_terms, "nodeSelectorTerms")
        if not isinstance(listed, list):
            return None
        parsed = []
        for term in listed:
            requirements = []
            for expression in _dig(term, "matchExpressions") or []:
                key, operator = _dig(expression, "key"), _dig(expression, "operator")
                values = _dig(expression, "values") or []
                if not isinstance(key, str) or not isinstance(operator, str) or not isinstance(values, list):
                    return None
                requirements.append((key, operator, tuple(v for v in values if isinstance(v, str))))
            parsed.append(tuple(requirements))
        terms = tuple(parsed)
    tolerations = pod_spec.get("tolerations") or []
    if not isinstance(tolerations, list):
        return None
    return Placement(selector, terms, tuple(t for t in tolerations if isinstance(t, Mapping)))


# --------------------------------------------------------------------------------------------------------
# Workloads


@dataclass(frozen=True)
class Container:
    name: str
    requests: Mapping[str, int]
    limits: Mapping[str, int]
    init: bool = False

    def slots(self, resource: str) -> int:
        """What the container takes: its limit, which is its request too (requests default to limits)."""
        return self.limits.get(resource, self.requests.get(resource, 0))


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str
    replicas: int | None
    """Pods at once: spec.replicas (1 when unset), a Job's parallelism; None for a DaemonSet (a pod per
    node) or when unknown."""
    containers: tuple[Container, ...]
    placement: Placement | None
    annotations: Mapping[str, str]
    """The workload's and its pod template's annotations."""
    strategy: Mapping[str, Any] | None
    """A Deployment's `spec.strategy`."""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def gpu_resources(self) -> tuple[str, ...]:
        found = {r for c in self.containers for r in (*c.requests, *c.limits)}
        return tuple(sorted(found))

    def slots_per_pod(self, resource: str) -> int:
        """Kubernetes' effective request of a pod: the larger of the containers' sum and any init
        container's own."""
        running = sum(c.slots(resource) for c in self.containers if not c.init)
        init = max((c.slots(resource) for c in self.containers if c.init), default=0)
        return max(running, init)


def _gpu_quantities(resources: object) -> dict[str, int]:
    found = {}
    for key, value in (resources if isinstance(resources, Mapping) else {}).items():
        count = whole_number(value)
        if isinstance(key, str) and key.startswith(GPU_RESOURCE_PREFIX) and count is not None:
            found[key] = count
    return found


def pod_spec_of(kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec an object of a workload kind runs (a Pod's own), or None for another kind."""
    if kind == "Pod":
        spec = obj.get("spec")
    elif kind in _TEMPLATE_PATHS:
        spec = _dig(obj, *_TEMPLATE_PATHS[kind], "spec")
    else:
        return None
    return spec if isinstance(spec, Mapping) else None


def workload_of(kind: str, obj: Mapping[str, Any]) -> Workload | None:
    """The workload an object of `kind` describes; None for another kind or a pod spec that is not known."""
    if kind == "Pod":
        template: Any = {"metadata": {}, "spec": obj.get("spec")}
    elif kind in _TEMPLATE_PATHS:
        template = _dig(obj, *_TEMPLATE_PATHS[kind])
    else:
        return None
    pod_spec = _dig(template, "spec")
    if not isinstance(pod_spec, Mapping):
        return None
    containers = []
    for field, init in (("containers", False), ("initContainers", True)):
        for raw in pod_spec.get(field) or []:
            if isinstance(raw, Mapping):
                containers.append(
                    Container(
                        str(raw.get("name") or "?"),
                        _gpu_quantities(_dig(raw, "resources", "requests")),
                        _gpu_quantities(_dig(raw, "resources", "limits")),
                        init,
                    )
                )
    if kind in ("Pod",):
        replicas: int | None = 1
    elif kind == "DaemonSet":
        replicas = None
    elif kind in ("Job", "CronJob"):
        job = _dig(obj, "spec") if kind == "Job" else _dig(obj, "spec", "jobTemplate", "spec")
        parallelism = _dig(job, "parallelism")
        replicas = 1 if parallelism is None else whole_number(parallelism)
    else:
        raw_replicas = _dig(obj, "spec", "replicas")
        replicas = 1 if raw_replicas is None else whole_number(raw_replicas)
    annotations = {
        **(_strings(_dig(obj, "metadata", "annotations")) or {}),
        **(_strings(_dig(template, "metadata", "annotations")) or {}),
    }
    strategy = _dig(obj, "spec", "strategy") if kind == "Deployment" else None
    return Workload(
        kind=kind,
        namespace=str(_dig(obj, "metadata", "namespace") or "default"),
        name=str(_dig(obj, "metadata", "name") or "?"),
        replicas=replicas,
        containers=tuple(containers),
        placement=placement_of(pod_spec),
        annotations=annotations,
        strategy=strategy if isinstance(strategy, Mapping) else None,
    )


@dataclass(frozen=True)
class Autoscaler:
    """A HorizontalPodAutoscaler: the workload it scales and its `maxReplicas`."""

    namespace: str
    name: str
    target_kind: str
    target_name: str
    max_replicas: int

    def scales(self, workload: Workload) -> bool:
        return (self.namespace, self.target_kind, self.target_name) == (
            workload.namespace,
            workload.kind,
            workload.name,
        )


def autoscaler_of(obj: Mapping[str, Any]) -> Autoscaler | None:
    kind, name = _dig(obj, "spec", "scaleTargetRef", "kind"), _dig(obj, "spec", "scaleTargetRef", "name")
    maximum = whole_number(_dig(obj, "spec", "maxReplicas"))
    if not isinstance(kind, str) or not isinstance(name, str) or maximum is None:
        return None
    return Autoscaler(
        str(_dig(obj, "metadata", "namespace") or "default"),
        str(_dig(obj, "metadata", "name") or "?"),
        kind,
        name,
        maximum,
    )


# --------------------------------------------------------------------------------------------------------
# The judge


@dataclass(frozen=True)
class WorkloadFinding:
    rule: str
    """The pack policy (a `pool_offers.WORKLOAD_*` name) the finding belongs to."""
    message: str
    kind: str = ""
    """What `verify` calls it: `replicas`, `autoscaler`, `surge`, `memory`, `placement`, or empty."""


def _scaled(value: object, replicas: int, round_up: bool) -> int | None:
    if value is None:
        return None
    count = whole_number(value)
    if count is not None:
        return count
    match = _PERCENT.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    exact = int(match.group(1)) * replicas / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def rolling_update(workload: Workload) -> tuple[int, int, str, str] | None:
    """(maxSurge, maxUnavailable, as written) in pods of a Deployment's rolling update; None for Recreate,
    other kinds, or what cannot be read."""
    if workload.kind != "Deployment" or workload.replicas is None:
        return None
    strategy = workload.strategy or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    surge_text = rolling.get("maxSurge", DEFAULT_MAX_SURGE)
    unavailable_text = rolling.get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
    surge = _scaled(surge_text, workload.replicas, round_up=True)
    unavailable = _scaled(unavailable_text, workload.replicas, round_up=False)
    if surge is None or unavailable is None:
        return None
    return surge, unavailable, _written(surge_text), _written(unavailable_text)


def _written(value: object) -> str:
    count = whole_number(value)
    return str(count) if count is not None else str(value)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _pools(offers: Sequence[PoolOffer]) -> str:
    names = [o.pool for o in offers]
    return ("pool " if len(names) == 1 else "pools ") + ", ".join(names)


def _verb(offers: Sequence[PoolOffer], one: str, many: str) -> str:
    return one if len(offers) == 1 else many


def _capacity(offers: Sequence[PoolOffer], resource: str) -> str:
    parts = [
        f"{o.pool}: {_count(o.max_nodes, 'node')} x {_count(o.gpus_per_node, 'GPU')} x "
        f"{_count(o.slots_per_node(resource) // o.gpus_per_node, 'slot')}"
        for o in offers
    ]
    return "; ".join(parts)


def judge(
    workload: Workload, offers: Sequence[PoolOffer], autoscalers: Sequence[Autoscaler] = ()
) -> list[WorkloadFinding]:
    """Every finding of one workload against the plan's pools (empty for a workload asking for no GPU)."""
    resources = workload.gpu_resources
    if not resources:
        return []
    found: list[WorkloadFinding] = []
    who = workload.label
    for container in workload.containers:
        for resource in sorted({*container.requests, *container.limits}):
            request, limit = container.requests.get(resource), container.limits.get(resource)
            if request is not None and request != limit:
                fit = limit if limit is not None else request
                found.append(
                    WorkloadFinding(
                        WORKLOAD_GPU_REQUEST,
                        f"{who}: container {container.name} asks {resource} requests {request}, limits "
                        f"{'unset' if limit is None else limit}: Kubernetes admits an extended resource only "
                        f"with requests equal to limits. Set both to {fit} (or set limits alone).",
                    )
                )
    placement = workload.placement
    if placement is None:
        return found
    reached = [o for o in offers if placement.lands_on(o.node_labels)]
    if not reached:
        found.append(
            WorkloadFinding(
                WORKLOAD_FITS_POOL,
                f"{who}: asks {', '.join(resources)} but its nodeSelector/affinity reaches none of the plan's "
                f"pools ({', '.join(o.pool for o in offers) or 'none'}): it lands on GPU nodes the plan does "
                f"not size, or on none. Select a pool: nodeSelector {kube_names.LABEL_POOL}: <pool>.",
                "placement",
            )
        )
        return found
    if placement.lands_on(STRAY_GPU_NODE_LABELS):
        found.append(
            WorkloadFinding(
                WORKLOAD_FITS_POOL,
                f"{who}: asks {', '.join(resources)} with no nodeSelector or affinity that keeps it on a "
                f"gpushare pool: it lands on whichever node advertises the resource, pools sized for other "
                f"services or GPU nodes of no pool. Select its pool: nodeSelector {kube_names.LABEL_POOL}: "
                f"<{'|'.join(o.pool for o in reached)}>.",
                "placement",
            )
        )
    for resource in resources:
        found += _judge_resource(workload, resource, reached, autoscalers)
    return found


def _judge_resource(
    workload: Workload, resource: str, reached: Sequence[PoolOffer], autoscalers: Sequence[Autoscaler]
) -> list[WorkloadFinding]:
    who = workload.label
    placement = workload.placement
    assert placement is not None
    offering = [o for o in reached if resource in o.resource_names]
    if not offering:
        offered = "; ".join(
            f"{o.pool} ({o.mode}, migStrategy {o.mig_strategy}) offers {', '.join(o.resource_names)}"
            for o in reached
        )
        return [
            WorkloadFinding(
                WORKLOAD_GPU_RESOURCE_OFFERED,
                f"{who}: asks {resource}, which {_pools(reached)} it reaches {_verb(reached, 'does', 'do')} not offer: {offered}. Its pods "
                f"stay Pending; ask for one of those names, or select a pool that offers {resource}.",
            )
        ]
    usable = [
        o for o in offering if all(placement.tolerates(t) for t in o.taints if t.effect in BLOCKING_EFFECTS)
    ]
    if not usable:
        missing = sorted(
            {
                t.describe()
                for o in offering
                for t in o.taints
                if t.effect in BLOCKING_EFFECTS and not placement.tolerates(t)
            }
        )
        return [
            WorkloadFinding(
                WORKLOAD_TOLERATES_POOL_TAINTS,
                f"{who}: {_pools(offering)} offering {resource} {_verb(offering, 'taints its', 'taint their')} nodes {', '.join(missing)}, which "
                f"its pods do not tolerate: they stay Pending. Add tolerations for "
                f"{', '.join(missing)}.",
            )
        ]
    found: list[WorkloadFinding] = []
    per_pod = workload.slots_per_pod(resource)
    refusing = [o for o in usable if o.fail_requests_greater_than_one and o.shared(resource)]
    too_many = [c for c in workload.containers if c.slots(resource) > 1]
    if too_many and len(refusing) == len(usable):
        first = too_many[0]
        found.append(
            WorkloadFinding(
                WORKLOAD_GPU_REQUEST,
                f"{who}: container {first.name} asks {resource}: {first.slots(resource)} on {_pools(usable)}, "
                f"which {_verb(usable, 'shares', 'share')} it with failRequestsGreaterThanOne: the plugin refuses the pod at admission "
                f"(UnexpectedAdmissionError). Ask for {resource}: 1 per container and run "
                f"{first.slots(resource)} times as many replicas.",
            )
        )
        return found
    largest_node = max(o.slots_per_node(resource) for o in usable)
    if per_pod > largest_node:
        found.append(
            WorkloadFinding(
                WORKLOAD_GPU_REQUEST,
                f"{who}: one pod takes {per_pod} {resource} slots, and no node of {_pools(usable)} has more "
                f"than {largest_node}: it can never be scheduled. At most {largest_node} per pod fit.",
            )
        )
        return found
    slots = sum(o.slots_at_max(resource) for o in usable)
    capacity = f"{_pools(usable)} {_verb(usable, 'has', 'have')} {slots} at nodes.max ({_capacity(usable, resource)})"
    pods = "parallel pods" if workload.kind in ("Job", "CronJob") else "replicas"
    fit_replicas = slots // per_pod if per_pod else 0
    each = f" x {per_pod} slots per pod" if per_pod != 1 else ""
    replicas = workload.replicas
    if replicas is not None and replicas * per_pod > slots:
        waiting = replicas - fit_replicas
        found.append(
            WorkloadFinding(
                WORKLOAD_FITS_POOL,
                f"{who}: {replicas} {pods}{each} need {replicas * per_pod} {resource} slots; {capacity}: "
                f"{_count(waiting, 'pod')} {'stays' if waiting == 1 else 'stay'} Pending. At most {fit_replicas} {pods} fit (or raise "
                f"nodes.max).",
                "replicas",
            )
        )
    for autoscaler in autoscalers:
        if autoscaler.scales(workload) and autoscaler.max_replicas * per_pod > slots:
            found.append(
                WorkloadFinding(
                    WORKLOAD_FITS_POOL,
                    f"{who}: HorizontalPodAutoscaler {autoscaler.namespace}/{autoscaler.name} may scale it to "
                    f"maxReplicas {autoscaler.max_replicas}{each} = {autoscaler.max_replicas * per_pod} "
                    f"{resource} slots; {capacity}. Set maxReplicas: {fit_replicas}.",
                    "autoscaler",
                )
            )
    rolling = rolling_update(workload)
    if rolling is not None and replicas is not None and replicas * per_pod <= slots:
        surge, unavailable, surge_text, unavailable_text = rolling
        free = slots - replicas * per_pod
        if surge > 0 and unavailable == 0 and free < per_pod:
            found.append(
                WorkloadFinding(
                    WORKLOAD_FITS_POOL,
                    f"{who}: a rolling update adds {_count(surge, 'surge pod')} (maxSurge {surge_text}) and removes no old "
                    f"pod first (maxUnavailable {unavailable_text} of {replicas} = 0), but {replicas} replicas"
                    f"{each} leave {free} of {slots} {resource} slots free: the surge pod waits for a slot and "
                    f"the rollout never finishes. Set maxSurge: 0 and maxUnavailable: 1 (one pod replaced at a "
                    f"time), or keep {_count(per_pod, 'slot')} free with at most "
                    f"{(slots - per_pod) // per_pod} replicas.",
                    "surge",
                )
            )
    found += _memory(workload, resource, usable)
    return found


def _memory(workload: Workload, resource: str, usable: Sequence[PoolOffer]) -> list[WorkloadFinding]:
    key = kube_names.ANNOTATION_MEASURED_MIB
    raw = workload.annotations.get(key)
    if raw is None:
        return []
    who = workload.label
    measured = whole_number(raw.strip())
    if measured is None or measured <= 0:
        return [
            WorkloadFinding(
                WORKLOAD_FITS_POOL,
                f"{who}: annotation {key}: {raw!r} is not a whole number of MiB (the largest GPU memory one "
                "of its processes used, as nvidia-smi --query-compute-apps=used_memory shows it).",
                "memory",
            )
        ]
    tightest = min(usable, key=lambda o: (o.offer(resource).budget_mib, o.pool))  # type: ignore[union-attr]
    offer = tightest.offer(resource)
    assert offer is not None
    if measured <= offer.budget_mib:
        return []
    return [
        WorkloadFinding(
            WORKLOAD_FITS_POOL,
            f"{who}: declares {measured} MiB of GPU memory ({key}), above the {offer.budget_mib} MiB a "
            f"{resource} slot of pool {tightest.pool} is budgeted ({offer.budget_rule}): on a shared GPU it "
            f"crowds out its neighbours. Bring it to {offer.budget_mib} MiB or less, or re-tune the pool for "
            f"it (gpushare tune --gpu {tightest.gpu} --measured-mib {measured}).",
            "memory",
        )
    ]
