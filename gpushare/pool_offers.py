"""What each GPU pool offers the workloads that use it: the resource names its sharing mode advertises,
the slots per GPU of each, and the memory budget of one slot; with the labels and taints its nodes carry
and its node count at `nodes.max`.

A pool mode maps to its offers by one function (`RESOURCE_OFFERS`): a new mode plugs in by registering
one with `@offers_for("<mode>")`. The budget of a slot is the tuning rule read backwards: the largest
measurement for which `tune` still gives the pool its replicas, floor(ceiling x memory / replicas) of the
unit the slot lives on (a GPU, or a MIG instance); under MPS the unit's memory is the per-client limit.
The policy pack's workload rules and `verify`'s workload checks read these offers; `plan --policy-config`
writes them as the pack's policy config (`policy_config`), for programs gpushare did not write.

Pure domain: the plan, the catalog and kube_names; no Pulumi, no cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from gpushare import kube_names, mps, qgpu
from gpushare.errors import GpushareError
from gpushare.plan import GPU_RESOURCE, PoolPlan, SharingPlan
from gpushare.stack.model import Mig, Mps, Qgpu, StackConfig

# The workload policies of the pack, each of which takes the plan as its policy config (`PLAN_PROPERTY`).
# Named here, in the domain, so that `plan --policy-config` writes an entry for each without importing the
# pack.
WORKLOAD_GPU_REQUEST: Final = "workload-gpu-request"
WORKLOAD_GPU_RESOURCE_OFFERED: Final = "workload-gpu-resource-offered"
WORKLOAD_TOLERATES_POOL_TAINTS: Final = "workload-tolerates-pool-taints"
WORKLOAD_FITS_POOL: Final = "workload-fits-pool"
WORKLOAD_FITS_POOL_ADVISORY: Final = "workload-fits-pool-advisory"
WORKLOAD_POLICIES: Final = (
    WORKLOAD_GPU_REQUEST,
    WORKLOAD_GPU_RESOURCE_OFFERED,
    WORKLOAD_TOLERATES_POOL_TAINTS,
    WORKLOAD_FITS_POOL,
    WORKLOAD_FITS_POOL_ADVISORY,
)
PLAN_PROPERTY: Final = "gpusharePlan"
# Taint effects that keep a pod off a node it does not tolerate (PreferNoSchedule only discourages).
BLOCKING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class ResourceOffer:
    """One extended resource a pool's nodes advertise."""

    resource: str
    slots_per_gpu: int
    budget_mib: int
    """GPU memory one slot may use: floor(ceiling x memory of its unit / replicas of the unit)."""
    budget_rule: str
    """How `budget_mib` was computed, with the numbers, for messages."""
    replicas: int
    """Time-slicing replicas of one unit (a whole GPU, or one MIG instance): a container may ask for more
    than one only where this is 1, since the plugin's failRequestsGreaterThanOne refuses replicated devices
    alone. Not slots per GPU: 6 unreplicated 1g.12gb instances are 6 slots a GPU, none shared."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def describe(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class PoolOffer:
    pool: str
    gpu: str
    mode: str
    mig_strategy: str
    fail_requests_greater_than_one: bool
    """The pool's plugin refuses a container asking for more than one of a shared resource."""
    node_labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    gpus_per_node: int
    max_nodes: int
    resources: tuple[ResourceOffer, ...]

    def offer(self, resource: str) -> ResourceOffer | None:
        return next((r for r in self.resources if r.resource == resource), None)

    @property
    def resource_names(self) -> tuple[str, ...]:
        return tuple(r.resource for r in self.resources)

    def shared(self, resource: str) -> bool:
        offer = self.offer(resource)
        return offer is not None and (offer.replicas > 1 or self.mode == mps.MODE)

    def slots_per_node(self, resource: str) -> int:
        offer = self.offer(resource)
        return 0 if offer is None else offer.slots_per_gpu * self.gpus_per_node

    def slots_at_max(self, resource: str) -> int:
        return self.slots_per_node(resource) * self.max_nodes

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.pool,
            "gpu": self.gpu,
            "mode": self.mode,
            "migStrategy": self.mig_strategy,
            "failRequestsGreaterThanOne": self.fail_requests_greater_than_one,
            "nodeLabels": dict(sorted(self.node_labels.items())),
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in self.taints],
            "gpusPerNode": self.gpus_per_node,
            "maxNodes": self.max_nodes,
            "resources": [
                {
                    "name": r.resource,
                    "slotsPerGpu": r.slots_per_gpu,
                    "budgetMiB": r.budget_mib,
                    "budgetRule": r.budget_rule,
                    "replicas": r.replicas,
                }
                for r in self.resources
            ],
        }


def _budget(ceiling: float, memory_mib: int, replicas: int, unit: str) -> tuple[int, str]:
    budget = math.floor(Fraction(str(ceiling)) * memory_mib / replicas)
    return budget, f"floor({ceiling:g} x {memory_mib} MiB {unit} / {replicas})"


ModeOffers = Callable[[PoolPlan, float], tuple[ResourceOffer, ...]]
RESOURCE_OFFERS: dict[str, ModeOffers] = {}


def offers_for(mode: str) -> Callable[[ModeOffers], ModeOffers]:
    """Register the function that gives a pool mode's resource offers (from its plan and the ceiling)."""

    def register(function: ModeOffers) -> ModeOffers:
        RESOURCE_OFFERS[mode] = function
        return function

    return register


@offers_for("exclusive")
@offers_for("time-slicing")
def _whole_gpus(plan: PoolPlan, ceiling: float) -> tuple[ResourceOffer, ...]:
    # Time-slicing tuned below 2 replicas shares nothing: one slot a GPU, as exclusive.
    slots = plan.slots_per_gpu
    budget, rule = _budget(ceiling, plan.gpu.memory_mib, slots, plan.gpu.key)
    return (ResourceOffer(GPU_RESOURCE, slots, budget, rule, replicas=slots),)


@offers_for(mps.MODE)
def _mps_clients(plan: PoolPlan, ceiling: float) -> tuple[ResourceOffer, ...]:
    slots = plan.slots_per_gpu
    limit = plan.client_memory_limit_mib
    if limit is None:  # fewer than 2 replicas: not shared
        return _whole_gpus(plan, ceiling)
    budget, rule = _budget(ceiling, limit, 1, "MPS client limit")
    return (ResourceOffer(GPU_RESOURCE, slots, budget, rule, replicas=slots),)


@offers_for("mig")
def _mig_instances(plan: PoolPlan, ceiling: float) -> tuple[ResourceOffer, ...]:
    sharing = plan.pool.sharing
    assert isinstance(sharing, Mig)
    if plan.mig_strategy == "single":
        # Every instance advertised as nvidia.com/gpu (one profile, not time-sliced).
        (profile,) = plan.mig_profiles
        memory = plan.gpu.mig_profile(profile.profile).memory_mib
        budget, rule = _budget(ceiling, memory, 1, f"MIG {profile.profile}")
        return (ResourceOffer(GPU_RESOURCE, profile.slots_per_gpu, budget, rule, replicas=1),)
    offers = []
    for profile in sorted(plan.mig_profiles, key=lambda p: p.profile):
        memory = plan.gpu.mig_profile(profile.profile).memory_mib
        budget, rule = _budget(ceiling, memory, profile.replicas, f"MIG {profile.profile}")
        resource = plan.gpu.mig_profile(profile.profile).resource_name
        offers.append(ResourceOffer(resource, profile.slots_per_gpu, budget, rule, replicas=profile.replicas))
    return tuple(offers)


@offers_for(qgpu.MODE)
def _qgpu_slices(plan: PoolPlan, ceiling: float) -> tuple[ResourceOffer, ...]:
    """A qGPU slice is requested as qgpu-memory (whole GiB) and qgpu-core, never as nvidia.com/gpu: the
    offer is the slice's memory, whose budget is the slice itself (qGPU enforces it)."""
    sizing = plan.qgpu
    assert sizing is not None
    budget = sizing.memory_gib * 1024
    rule = f"{sizing.memory_gib} GiB qGPU slice (ceil({sizing.measured_mib} MiB / {ceiling:g}) in whole GiB)"
    # qGPU slices are no NVIDIA replicas: a container may ask for several GiB of qgpu-memory.
    return (ResourceOffer(qgpu.RESOURCE_MEMORY, sizing.slots_per_gpu, budget, rule, replicas=1),)


def pool_node_labels(stack: StackConfig, plan: PoolPlan) -> dict[str, str]:
    """Every label the pool's node pool puts on its nodes (components/gpu_sharing_cluster.py composes the
    same set): the pool's own, TKE's switch, the plugin's config key, the GPU model, the pool, and the MIG
    config, `nvidia.com/gpu.present` or `nvidia.com/mps.capable` where the mode sets them."""
    pool = plan.pool
    plugin = stack.plugin
    if isinstance(pool.sharing, Qgpu):
        return qgpu.node_labels(
            pool.labels,
            pool.name,
            pool.gpu,
            pool.sharing.schedule_policy,
            gpu_operator=plugin.mode == "gpu-operator",
        )
    labels = {
        **pool.labels,
        kube_names.LABEL_DEVICE_ENABLE: plugin.managed_plugin.device_enable_value,
        kube_names.LABEL_PLUGIN_CONFIG: pool.config_key,
        kube_names.LABEL_GPU_MODEL: pool.gpu,
        kube_names.LABEL_POOL: pool.name,
    }
    if isinstance(pool.sharing, Mig):
        labels[kube_names.LABEL_MIG_CONFIG] = pool.sharing.config_name
    if plugin.mode == "helm" and not plugin.node_feature_discovery:
        labels[kube_names.LABEL_GPU_PRESENT] = "true"
    if isinstance(pool.sharing, Mps):
        labels[kube_names.LABEL_MPS_CAPABLE] = mps.MPS_CAPABLE_VALUE
    return dict(sorted(labels.items()))


def pool_offer(stack: StackConfig, plan: PoolPlan) -> PoolOffer:
    pool = plan.pool
    offers = RESOURCE_OFFERS.get(pool.sharing.mode)
    if offers is None:
        raise GpushareError(
            f"pool {pool.name}: mode {pool.sharing.mode} offers no resources to workloads yet: register "
            "its function with @offers_for in gpushare/pool_offers.py"
        )
    resources = offers(plan, stack.sharing.utilization_ceiling)
    shared = any(r.replicas > 1 for r in resources) or (plan.mps and bool(plan.shared))
    return PoolOffer(
        pool=pool.name,
        gpu=pool.gpu,
        mode=pool.sharing.mode,
        mig_strategy=plan.mig_strategy,
        # gpushare writes failRequestsGreaterThanOne: true for every shared resource (the mandatory
        # fail-requests-greater-than-one policy holds its own configs to it).
        fail_requests_greater_than_one=shared and plan.nvidia_plugin,
        node_labels=pool_node_labels(stack, plan),
        taints=tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in pool.taints),
        gpus_per_node=pool.gpus_per_node_effective,
        max_nodes=pool.nodes.max,
        resources=resources,
    )


def pool_offers(plan: SharingPlan) -> tuple[PoolOffer, ...]:
    return tuple(pool_offer(plan.stack, p) for p in plan.pools)


# --------------------------------------------------------------------------------------------------------
# The offers as the pack's policy config (`plan --policy-config`, `--policy-pack-config FILE`)

_RESOURCE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["name", "slotsPerGpu", "budgetMiB"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "slotsPerGpu": {"type": "integer", "minimum": 1},
        "budgetMiB": {"type": "integer", "minimum": 0},
        "budgetRule": {"type": "string"},
        "replicas": {"type": "integer", "minimum": 1},
    },
}
_POOL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["name", "mode", "nodeLabels", "gpusPerNode", "maxNodes", "resources"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "gpu": {"type": "string"},
        "mode": {"type": "string", "minLength": 1},
        "migStrategy": {"type": "string", "enum": ["none", "single", "mixed"]},
        "failRequestsGreaterThanOne": {"type": "boolean"},
        "nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "taints": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "effect"],
                "properties": {
                    "key": {"type": "string"},
                    "value": {"type": "string"},
                    "effect": {"type": "string"},
                },
            },
        },
        "gpusPerNode": {"type": "integer", "minimum": 1},
        "maxNodes": {"type": "integer", "minimum": 0},
        "resources": {"type": "array", "items": _RESOURCE_SCHEMA},
    },
}
PLAN_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "description": "The capacity plan of a gpushare stack (`gpushare plan --stack S --policy-config`): "
    "per pool the resources its nodes offer, slots per GPU, per-slot memory budget, labels, taints and "
    "nodes at nodes.max. Without it, programs gpushare did not write are judged only by what their "
    "resources carry.",
    "required": ["stack", "pools"],
    "properties": {
        "stack": {"type": "string"},
        "pools": {"type": "array", "items": _POOL_SCHEMA},
    },
}


def plan_json(plan: SharingPlan) -> dict[str, Any]:
    return {"stack": plan.stack.stack, "pools": [o.as_json() for o in pool_offers(plan)]}


def policy_config(plan: SharingPlan) -> dict[str, Any]:
    """The pack's policy config carrying the plan: one entry per workload policy (each policy gets its
    own properties from `--policy-pack-config`)."""
    document = plan_json(plan)
    return {name: {PLAN_PROPERTY: document} for name in WORKLOAD_POLICIES}


def offers_from_json(document: object) -> tuple[PoolOffer, ...] | None:
    """The offers of a `plan_json` document (as the pack gets it: numbers may be doubles); None when it is
    not one."""
    if not isinstance(document, Mapping) or not isinstance(document.get("pools"), list):
        return None
    offers = []
    for raw in document["pools"]:
        if not isinstance(raw, Mapping):
            return None
        try:
            resources = tuple(
                ResourceOffer(
                    str(r["name"]),
                    int(r["slotsPerGpu"]),
                    int(r["budgetMiB"]),
                    str(r.get("budgetRule", "")),
                    # A plan written before `replicas` existed: every slot counted as shared, as it was then.
                    replicas=int(r.get("replicas", r["slotsPerGpu"])),
                )
                for r in raw["resources"]
            )
            offers.append(
                PoolOffer(
                    pool=str(raw["name"]),
                    gpu=str(raw.get("gpu", "")),
                    mode=str(raw["mode"]),
                    mig_strategy=str(raw.get("migStrategy", "none")),
                    fail_requests_greater_than_one=raw.get("failRequestsGreaterThanOne") is True,
                    node_labels={str(k): str(v) for k, v in dict(raw["nodeLabels"]).items()},
                    taints=tuple(
                        Taint(str(t["key"]), str(t.get("value", "")), str(t["effect"]))
                        for t in raw.get("taints") or []
                    ),
                    gpus_per_node=int(raw["gpusPerNode"]),
                    max_nodes=int(raw["maxNodes"]),
                    resources=resources,
                )
            )
        except (KeyError, TypeError, ValueError):
            return None
    return tuple(offers)
