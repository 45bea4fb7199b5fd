"""The sharing plan: everything derived from a validated stack config and the catalog.

Replica counts, MIG strategies, slots and the capacity table are computed here once; the Pulumi
components, the capacity report and the policy pack all read them from this plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpushare import catalog, mps, qgpu
from gpushare.catalog import GpuModel
from gpushare.qgpu import QgpuSizing
from gpushare.stack.model import Fallback, Mig, Mps, Pool, Qgpu, StackConfig, TimeSlicing, pool_mig_strategy
from gpushare.tuning import Tuning, tune

FALLBACK_KEY = "any"
# The confidences of a qGPU figure the plan marks (`catalog.QgpuCard`): not Tencent's, nor the stack's own.
QGPU_UNCONFIRMED = ("third-party", "inferred")
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class SharedResource:
    """One time-slicing entry: a resource name and its tuned replicas, with where the numbers came from."""

    resource: str
    tuning: Tuning


@dataclass(frozen=True)
class MigProfilePlan:
    """One MIG profile of a pool's layout: its instances on each GPU and the replicas of each instance
    (1 when the instance is not time-sliced), so a multi-profile pool's slots add up row by row."""

    profile: str
    instances_per_gpu: int
    replicas: int

    @property
    def slots_per_gpu(self) -> int:
        return self.instances_per_gpu * self.replicas


@dataclass(frozen=True)
class PoolPlan:
    pool: Pool
    gpu: GpuModel
    mig_strategy: str
    shared: tuple[SharedResource, ...]
    qgpu: QgpuSizing | None = None
    """qGPU pools only: the slices of each card (`gpushare.qgpu.size`); no NVIDIA plugin serves them."""

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def nvidia_plugin(self) -> bool:
        """An NVIDIA device plugin serves the pool (every mode but qGPU, whose cards TKE's module slices)."""
        return self.qgpu is None

    @property
    def gpus(self) -> int:
        return self.pool.nodes.desired * self.pool.gpus_per_node_effective

    @property
    def mig_instances_per_gpu(self) -> int:
        sharing = self.pool.sharing
        return sum(sharing.mig_layout.values()) if isinstance(sharing, Mig) else 0

    @property
    def mig_profiles(self) -> tuple[MigProfilePlan, ...]:
        """The MIG layout profile by profile (largest instance count first); empty outside MIG pools."""
        sharing = self.pool.sharing
        if not isinstance(sharing, Mig):
            return ()
        replicas = {s.resource: s.tuning.slots for s in self.shared}
        return tuple(
            MigProfilePlan(profile, count, replicas.get(self.gpu.mig_profile(profile).resource_name, 1))
            for profile, count in sorted(sharing.mig_layout.items(), key=lambda item: (-item[1], item[0]))
        )

    @property
    def mps(self) -> bool:
        """The pool's GPUs are shared with MPS (the plugin's `sharing.mps`), not time-sliced."""
        return isinstance(self.pool.sharing, Mps)

    @property
    def client_memory_limit_mib(self) -> int | None:
        """MPS only: the pinned-memory limit of one client, the card's memory / replicas."""
        if not self.mps or not self.shared:
            return None
        return mps.client_memory_limit_mib(self.gpu.memory_mib, self.shared[0].tuning.replicas)

    @property
    def slots_per_gpu(self) -> int:
        if self.qgpu is not None:
            return self.qgpu.slots_per_gpu
        if isinstance(self.pool.sharing, Mig):
            return sum(profile.slots_per_gpu for profile in self.mig_profiles)
        return self.shared[0].tuning.slots if self.shared else 1

    @property
    def replicas(self) -> int | None:
        """Replicas of one GPU (time-slicing), or of every MIG instance when all profiles agree; None for a
        MIG layout whose profiles differ (`mig_profiles` has each); 1 when nothing is time-sliced."""
        if isinstance(self.pool.sharing, Mig):
            per_instance = {profile.replicas for profile in self.mig_profiles}
            return per_instance.pop() if len(per_instance) == 1 else None
        if self.qgpu is not None:
            return self.qgpu.slots_per_gpu
        return self.shared[0].tuning.slots if self.shared else 1

    @property
    def slots(self) -> int:
        return self.gpus * self.slots_per_gpu

    @property
    def measured_mib(self) -> int | None:
        if self.shared:
            return self.shared[0].tuning.measured_mib
        measurement = self.pool.measurement
        return measurement.measured_mib if measurement is not None else None

    @property
    def memory_total_mib(self) -> int:
        return self.gpus * self.gpu.memory_mib

    @property
    def memory_used_mib(self) -> int | None:
        measured = self.measured_mib
        return None if measured is None else self.slots * measured

    @property
    def utilization(self) -> float | None:
        used = self.memory_used_mib
        return None if used is None or not self.memory_total_mib else used / self.memory_total_mib

    @property
    def headroom_mib_per_slot(self) -> float | None:
        if self.qgpu is not None:
            # A slice's own memory less the process: qGPU enforces the slice, not a share of the card.
            return self.qgpu.memory_gib * catalog.QGPU_MEMORY_UNIT_MIB - self.qgpu.measured_mib
        if not self.shared:
            measured = self.measured_mib
            return None if measured is None else self.gpu.memory_mib - measured
        return min(s.tuning.headroom_mib_per_slot for s in self.shared)


@dataclass(frozen=True)
class FallbackPlan:
    """The fallback key `any`, which serves every GPU node whose label names no key (a pool made outside
    the stack, a lost label, a GPU model added by hand): its GPU is unknown, so it shares nothing unless
    the stack opts in with `sharing.fallback`, and then it is tuned for the GPU the stack names."""

    setting: Fallback | None
    tuning: Tuning | None

    @property
    def shared(self) -> bool:
        return self.tuning is not None and self.tuning.shared

    @property
    def replicas(self) -> int:
        """Replicas of one GPU; 1 when the fallback shares nothing."""
        return self.tuning.slots if self.tuning is not None else 1

    def describe(self) -> str:
        if self.tuning is None:
            return "exclusive, one pod per GPU"
        tuned = f"tuned for {self.tuning.gpu} at {self.tuning.measured_mib} MiB"
        return (
            f"{self.replicas} replicas, {tuned}" if self.shared else f"exclusive, {tuned} (fewer than 2 fit)"
        )


@dataclass(frozen=True)
class SharingPlan:
    stack: StackConfig
    pools: tuple[PoolPlan, ...]
    fallback: FallbackPlan

    @property
    def total_slots(self) -> int:
        return sum(p.slots for p in self.pools)

    @property
    def slots_before(self) -> int:
        """Without sharing every GPU is one slot (MIG pools count their GPUs too)."""
        return sum(p.gpus for p in self.pools)

    def pool(self, name: str) -> PoolPlan:
        for plan in self.pools:
            if plan.name == name:
                return plan
        raise KeyError(name)


def plan_pool(pool: Pool, ceiling: float) -> PoolPlan:
    gpu = catalog.gpu(pool.gpu)
    sharing = pool.sharing
    shared: list[SharedResource] = []
    if isinstance(sharing, TimeSlicing | Mps):
        tuning = tune(gpu, sharing.measured_mib, ceiling)
        if tuning.shared:
            shared.append(SharedResource(GPU_RESOURCE, tuning))
    elif isinstance(sharing, Mig) and sharing.time_slicing is not None:
        for profile in sorted(sharing.mig_layout):
            tuning = tune(gpu, sharing.time_slicing.measured_mib, ceiling, mig_profile=profile)
            if tuning.shared:
                shared.append(SharedResource(gpu.mig_profile(profile).resource_name, tuning))
    sizing = None
    if isinstance(sharing, Qgpu):
        sizing = qgpu.size(gpu, sharing.measured_mib, ceiling, sharing.allocatable_gib)
    return PoolPlan(
        pool=pool, gpu=gpu, mig_strategy=pool_mig_strategy(pool), shared=tuple(shared), qgpu=sizing
    )


def plan_fallback(setting: Fallback | None, ceiling: float) -> FallbackPlan:
    if setting is None:
        return FallbackPlan(setting=None, tuning=None)
    return FallbackPlan(setting=setting, tuning=tune(catalog.gpu(setting.gpu), setting.measured_mib, ceiling))


def build_plan(stack: StackConfig) -> SharingPlan:
    ceiling = stack.sharing.utilization_ceiling
    return SharingPlan(
        stack=stack,
        pools=tuple(plan_pool(pool, ceiling) for pool in stack.pools),
        fallback=plan_fallback(stack.sharing.fallback, ceiling),
    )


def capacity_json(plan: SharingPlan) -> dict[str, object]:
    return {
        "stack": plan.stack.stack,
        "pools": [
            {
                "name": p.name,
                "gpu": p.gpu.key,
                "mode": p.pool.sharing.mode,
                "nodes": p.pool.nodes.desired,
                "gpus": p.gpus,
                "replicas": p.replicas,
                "migInstancesPerGpu": p.mig_instances_per_gpu,
                "migProfiles": [
                    {
                        "profile": m.profile,
                        "instancesPerGpu": m.instances_per_gpu,
                        "replicas": m.replicas,
                        "slotsPerGpu": m.slots_per_gpu,
                    }
                    for m in p.mig_profiles
                ],
                "slots": p.slots,
                "memoryUsedMiB": p.memory_used_mib,
                "memoryTotalMiB": p.memory_total_mib,
                "utilization": None if p.utilization is None else round(p.utilization, 4),
                "headroomMiBPerSlot": None
                if p.headroom_mib_per_slot is None
                else round(p.headroom_mib_per_slot, 1),
                "slotsBefore": p.gpus,
                # Only on MPS pools, so the capacity of every other stack reads as before.
                **(
                    {"mpsClientMemoryLimitMiB": p.client_memory_limit_mib}
                    if p.client_memory_limit_mib is not None
                    else {}
                ),
                # Only on qGPU pools: the slice each pod requests, and how sure the card's figure is.
                **({"qgpu": p.qgpu.as_json()} if p.qgpu is not None else {}),
            }
            for p in plan.pools
        ],
        "fallback": {
            "key": FALLBACK_KEY,
            "mode": "time-slicing" if plan.fallback.shared else "exclusive",
            "replicas": plan.fallback.replicas,
            "gpu": plan.fallback.tuning.gpu if plan.fallback.tuning else None,
            "measuredMiB": plan.fallback.tuning.measured_mib if plan.fallback.tuning else None,
            "summary": plan.fallback.describe(),
        },
        "totalSlots": plan.total_slots,
        "slotsBefore": plan.slots_before,
    }


def capacity_table(capacity: dict[str, object]) -> str:
    """The capacity plan as a text table; takes `capacity_json` output so the render command can print
    the same table from the program's stack outputs."""
    header = (
        "pool",
        "gpu",
        "nodes",
        "gpus",
        "replicas",
        "slots",
        "memory used/total MiB",
        "util",
        "headroom/slot",
        "before",
    )
    rows = [header]
    pools = capacity["pools"]
    assert isinstance(pools, list)
    for p in pools:
        used = "-" if p["memoryUsedMiB"] is None else str(p["memoryUsedMiB"])
        util = "-" if p["utilization"] is None else f"{p['utilization'] * 100:.1f} %"
        headroom = "-" if p["headroomMiBPerSlot"] is None else f"~{int(p['headroomMiBPerSlot'])} MiB"
        replicas = str(p["replicas"])
        if p.get("mpsClientMemoryLimitMiB") is not None:
            # MPS: the per-client pinned-memory limit the control daemon enforces.
            replicas += f" (MPS, {p['mpsClientMemoryLimitMiB']} MiB/client)"
        if p.get("qgpu") is not None:
            replicas += f" ({qgpu_cell(p['qgpu'])})"
        if p["migProfiles"]:
            # Per profile, so the row adds up: 6 x 1g.12gb at 2 + 1 x 1g.24gb at 4 = 16 slots a GPU.
            per_gpu = sum(m["slotsPerGpu"] for m in p["migProfiles"])
            replicas = (
                " + ".join(
                    f"{m['instancesPerGpu']} x {m['profile']} at {m['replicas']}" for m in p["migProfiles"]
                )
                + f" = {per_gpu}/GPU"
            )
        rows.append(
            (
                p["name"],
                p["gpu"],
                str(p["nodes"]),
                str(p["gpus"]),
                replicas,
                str(p["slots"]),
                f"{used}/{p['memoryTotalMiB']}",
                util,
                headroom,
                str(p["slotsBefore"]),
            )
        )
    fallback = capacity["fallback"]
    assert isinstance(fallback, dict)
    rows.append(
        ("total", "", "", "", "", str(capacity["totalSlots"]), "", "", "", str(capacity["slotsBefore"]))
    )
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    inferred = [p for p in pools if p.get("qgpu") and p["qgpu"]["allocatableConfidence"] in QGPU_UNCONFIRMED]
    lines.extend(qgpu_notes(inferred))
    lines.append(
        f"\n{capacity['totalSlots']} schedulable GPU slots against {capacity['slotsBefore']} before sharing.\n"
        f"Fallback key `{FALLBACK_KEY}` (GPU nodes whose label names no key): {fallback['summary']}."
    )
    return "\n".join(lines)


def qgpu_cell(sizing: dict[str, object]) -> str:
    """A qGPU pool's replicas cell: the slice each pod requests, the card's allocatable figure and, when it
    is not Tencent-verified, a mark saying so."""
    confidence = sizing["allocatableConfidence"]
    mark = f" {str(confidence).upper()}" if confidence in QGPU_UNCONFIRMED else ""
    return (
        f"qGPU {sizing['memoryGiB']} GiB + core {sizing['corePercent']} per pod, of "
        f"{sizing['allocatableGiB']} GiB{mark}"
    )


def qgpu_notes(pools: list[dict[str, object]]) -> list[str]:
    """One line per qGPU pool whose allocatable figure is not verified: where it comes from."""
    notes = []
    for p in pools:
        sizing = p["qgpu"]
        assert isinstance(sizing, dict)
        notes.append(
            f"note: pool {p['name']}: {sizing['allocatableGiB']} GiB of allocatable qGPU memory per {p['gpu']} is "
            f"{sizing['allocatableConfidence']} ({sizing['allocatableSource']}); `verify` shows the nodes' figure"
        )
    return notes
