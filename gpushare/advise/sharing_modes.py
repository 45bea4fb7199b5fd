"""Every way to share one GPU model for one measured process, across the sharing modes gpushare knows.

Four modes share a card: time-slicing (no isolation, the most slots), MPS (a pinned-memory limit per
client and a share of the SMs, enforced by NVIDIA's MPS control daemon), MIG (hardware partitions, on
MIG-capable GPUs only, fixed profiles) and TKE's qGPU (memory and compute enforced by a kernel module on
TKE native nodes). Each mode is one option provider: a function `(gpu, measured_mib, ceiling) -> options`
listed in `MODE_PROVIDERS`. qGPU's option is the slice `gpushare.qgpu.size` gives a pool (the figure
`plan` shows), its description marking a card's allocatable memory that Tencent has not published.

Isolation is a total order, weakest first: none < memory < kernel < hardware; among MIG layouts, more
instances isolate more. Memory limit (MPS) is below kernel-enforced memory and compute (qGPU): MPS
clients share one fault domain and their compute share is a hint to the scheduler, not a partition.
Hardware (MIG) is above both: each instance has its own memory, cache and SMs. The Pareto front holds
the options no other option beats on slots without giving up isolation.

Slots per GPU come from the one tuning rule (`gpushare.tuning`), exactly as `plan` derives them, so a
pool written from an option (`--stack-snippet`) plans the slots shown.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from gpushare import catalog, mps, qgpu
from gpushare.advise.layout_options import LayoutOption, advise
from gpushare.catalog import GpuModel
from gpushare.errors import GpushareError
from gpushare.tuning import DEFAULT_CEILING, MIN_SHARED_REPLICAS, check_ceiling, check_measured, max_replicas

Isolation = Literal["none", "memory", "kernel", "hardware"]
ISOLATION_LEVELS: Final[tuple[Isolation, ...]] = ("none", "memory", "kernel", "hardware")
ISOLATION_MEANING: Final[dict[Isolation, str]] = {
    "none": "none: processes share the GPU's memory and compute, nothing stops one from taking all",
    "memory": "memory limit: each client's pinned device memory is capped (MPS), compute shared by hint",
    "kernel": "kernel-enforced memory and compute (qGPU's kernel module)",
    "hardware": "hardware: MIG instances with their own memory, cache and SMs",
}
PLUGIN_MODES: Final = ("daemonsets", "helm", "gpu-operator")

ModeName = Literal["time-slicing", "mps", "mig", "qgpu"]


@dataclass(frozen=True)
class ModeOption:
    """One way to share the GPU in one mode: its slots per GPU, its isolation, what it needs."""

    mode: ModeName
    gpu: GpuModel
    measured_mib: int
    slots: int
    isolation: Isolation
    isolation_domains: int
    """MIG instances; 1 for a whole GPU."""
    description: str
    requires: tuple[str, ...]
    plugin_modes: tuple[str, ...]
    """The `devicePlugin.mode`s a pool of this option runs under."""
    memory_limit_mib: int | None = None
    """The enforced memory limit: per MPS client (the card's memory / replicas), per MIG instance (the
    smallest; its slots share it); None where nothing limits it."""
    layout: LayoutOption | None = None
    """What `--stack-snippet` writes a pool from (None: no pool mode in the stack file yet)."""

    @property
    def isolation_rank(self) -> tuple[int, int]:
        """Weakest first: the level, then (MIG) the number of instances."""
        return ISOLATION_LEVELS.index(self.isolation), self.isolation_domains

    @property
    def utilization(self) -> float:
        return self.slots * self.measured_mib / self.gpu.memory_mib

    def as_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "description": self.description,
            "slots": self.slots,
            "isolation": self.isolation,
            "isolationDomains": self.isolation_domains,
            "memoryLimitMiB": self.memory_limit_mib,
            "utilization": round(self.utilization, 4),
            "requires": list(self.requires),
            "pluginModes": list(self.plugin_modes),
            "migLayout": None if self.layout is None else self.layout.mig_layout,
        }


OptionProvider = Callable[[GpuModel, int, float], Sequence[ModeOption]]


# --- the providers, one per mode ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _layout_report(gpu: GpuModel, measured_mib: int, ceiling: float) -> tuple[LayoutOption, ...]:
    try:
        return advise(gpu, measured_mib, ceiling).options
    except GpushareError:
        return ()


def time_slicing_options(gpu: GpuModel, measured_mib: int, ceiling: float) -> list[ModeOption]:
    """The whole GPU time-sliced: floor(ceiling x memory / measured) replicas, when that is >= 2."""
    return [
        ModeOption(
            mode="time-slicing",
            gpu=gpu,
            measured_mib=measured_mib,
            slots=o.slots,
            isolation="none",
            isolation_domains=1,
            description=o.describe(),
            requires=("any device-plugin mode (TKE's v0.14.5 and NVIDIA's 0.17.1/0.20.0 all time-slice)",),
            plugin_modes=PLUGIN_MODES,
            layout=o,
        )
        for o in _layout_report(gpu, measured_mib, ceiling)
        if o.mode == "time-slicing"
    ]


def mps_layout(gpu: GpuModel, measured_mib: int, ceiling: float) -> LayoutOption | None:
    """The MPS pool the stack model accepts for this process (`gpushare.mps`), or None: the replicas of
    the tuning rule, >= 2, on a Volta-or-later GPU, each client's limit holding measured / ceiling."""
    if measured_mib > gpu.memory_mib:
        return None
    if mps.compute_capability_problem(gpu.key, gpu.compute_capability):
        return None
    replicas = max_replicas(gpu.memory_mib, measured_mib, ceiling)
    if replicas < MIN_SHARED_REPLICAS:
        return None
    if mps.client_limit_problem(gpu.memory_mib, replicas, measured_mib, ceiling):
        return None
    limit = mps.client_memory_limit_mib(gpu.memory_mib, replicas)
    return LayoutOption(
        gpu=gpu,
        mode="mps",
        measured_mib=measured_mib,
        slots=replicas,
        isolation_domains=1,
        headroom_mib_per_slot=limit - measured_mib,
        compute_slices_per_slot=None,
        replicas=replicas,
    )


def mps_options(gpu: GpuModel, measured_mib: int, ceiling: float) -> list[ModeOption]:
    layout = mps_layout(gpu, measured_mib, ceiling)
    if layout is None:
        return []
    limit = mps.client_memory_limit_mib(gpu.memory_mib, layout.replicas)
    return [
        ModeOption(
            mode="mps",
            gpu=gpu,
            measured_mib=measured_mib,
            slots=layout.slots,
            isolation="memory",
            isolation_domains=1,
            description=f"whole GPU, MPS x{layout.replicas} ({limit} MiB/client)",
            requires=(
                f"NVIDIA's plugin {mps.FIRST_MPS_PLUGIN_VERSION}+ (devicePlugin.mode helm or gpu-operator; not "
                "TKE's v0.14.5)",
                f"the MPS control daemon, on nodes labelled {mps.LABEL_MPS_CAPABLE}=true (gpushare labels "
                "the pool)",
                "no migStrategy mixed/single",
            ),
            plugin_modes=("helm", "gpu-operator"),
            memory_limit_mib=limit,
            layout=layout,
        )
    ]


def mig_options(gpu: GpuModel, measured_mib: int, ceiling: float) -> list[ModeOption]:
    """Every MIG layout that holds the process, each instance time-sliced (`layout_options`)."""
    return [
        ModeOption(
            mode="mig",
            gpu=gpu,
            measured_mib=measured_mib,
            slots=o.slots,
            isolation="hardware",
            isolation_domains=o.isolation_domains,
            description=o.describe(),
            requires=(
                f"a MIG-capable GPU ({gpu.key})",
                "MIG laid out on the nodes (gpushare's boot unit, or the GPU Operator's MIG manager)",
                "migStrategy single (one unshared profile) or mixed",
            ),
            plugin_modes=PLUGIN_MODES,
            memory_limit_mib=min(s.profile.memory_mib for s in o.shares),
            layout=o,
        )
        for o in _layout_report(gpu, measured_mib, ceiling)
        if o.mode == "mig"
    ]


def qgpu_options(gpu: GpuModel, measured_mib: int, ceiling: float) -> list[ModeOption]:
    """TKE's qGPU: the slices `gpushare.qgpu.size` gives a pool of this card (the catalog's allocatable
    memory, its confidence in the description), when at least 2 fit. None for a card qGPU does not
    support or whose allocatable memory nobody has published (a pool then sets `sharing.allocatableGiB`,
    which advise cannot guess). qGPU pools keep every NVIDIA plugin off their nodes, so they run beside
    any device-plugin mode."""
    if not catalog.qgpu_supported(gpu.key) or catalog.qgpu_card(gpu.key) is None:
        return []
    sizing = qgpu.size(gpu, measured_mib, ceiling)
    if sizing.slots_per_gpu < MIN_SHARED_REPLICAS:
        return []
    return [
        ModeOption(
            mode="qgpu",
            gpu=gpu,
            measured_mib=measured_mib,
            slots=sizing.slots_per_gpu,
            isolation="kernel",
            isolation_domains=1,
            description=f"qGPU {sizing.describe()}",
            requires=(
                "a TKE native node pool (the pool's `native:` keys)",
                f"TKE's qGPU add-on (sharing.qgpu) and a driver of series {', '.join(catalog.QGPU_DRIVER_SERIES)}",
            ),
            plugin_modes=PLUGIN_MODES,
            memory_limit_mib=sizing.memory_gib * catalog.QGPU_MEMORY_UNIT_MIB,
        )
    ]


MODE_PROVIDERS: Final[tuple[tuple[ModeName, OptionProvider], ...]] = (
    ("time-slicing", time_slicing_options),
    ("mps", mps_options),
    ("mig", mig_options),
    ("qgpu", qgpu_options),
)


# --- the report -------------------------------------------------------------------------------------------


def _preference(option: ModeOption) -> tuple[int, int, int, int]:
    """Best first: more slots, then more isolation, then the mode's place in MODE_PROVIDERS; the sort is
    stable, so MIG layouts that tie keep the order `layout_options` prefers (no `+me` unless it buys
    something, more headroom)."""
    level, domains = option.isolation_rank
    modes = [name for name, _ in MODE_PROVIDERS]
    return (-option.slots, -level, -domains, modes.index(option.mode))


def _dominated(option: ModeOption, options: Sequence[ModeOption]) -> bool:
    return any(
        other.slots >= option.slots
        and other.isolation_rank >= option.isolation_rank
        and (other.slots, other.isolation_rank) != (option.slots, option.isolation_rank)
        for other in options
    )


@dataclass(frozen=True)
class ModesReport:
    gpu: GpuModel
    measured_mib: int
    ceiling: float
    options: tuple[ModeOption, ...]
    """Every option of every mode allowed, best first."""
    plugin_mode: str | None
    at_least: Isolation
    unavailable: tuple[tuple[ModeName, str], ...]
    """Modes with no option here, and why."""

    @functools.cached_property
    def pareto(self) -> tuple[ModeOption, ...]:
        return tuple(o for o in self.options if not _dominated(o, self.options))

    def best_per_mode(self) -> list[ModeOption]:
        """Each mode's best option (most slots, then most isolation), best first."""
        best: dict[ModeName, ModeOption] = {}
        for option in self.options:
            best.setdefault(option.mode, option)
        return list(best.values())

    def as_json(self) -> list[dict[str, object]]:
        front = set(self.pareto)
        return [{**o.as_json(), "pareto": o in front} for o in self.options]


def _none_reason(name: ModeName, gpu: GpuModel) -> str:
    """Why a mode's provider has no option for this GPU and process."""
    if name == "mig" and not gpu.mig_capable:
        return f"{gpu.key} has no MIG"
    if name == "qgpu":
        if not catalog.qgpu_supported(gpu.key):
            return f"{gpu.key} is not on Tencent's qGPU list"
        if catalog.qgpu_card(gpu.key) is None:
            return f"no allocatable qGPU memory published for {gpu.key} (a pool sets sharing.allocatableGiB)"
        return "fewer than 2 slices fit in the card's allocatable qGPU memory"
    if name == "mps":
        return "fewer than 2 clients fit, or a client's limit (memory / replicas) would not hold the process"
    return "fewer than 2 copies of the process fit"


def compare_modes(
    gpu: GpuModel,
    measured_mib: int,
    ceiling: float = DEFAULT_CEILING,
    *,
    plugin_mode: str | None = None,
    at_least: Isolation = "none",
) -> ModesReport:
    """Every option of every mode `plugin_mode` allows (None: every mode) with at least `at_least`
    isolation, best first, and the Pareto front."""
    check_ceiling(ceiling)
    check_measured(measured_mib)
    if plugin_mode is not None and plugin_mode not in PLUGIN_MODES:
        raise GpushareError(f"unknown device-plugin mode {plugin_mode!r}: one of {', '.join(PLUGIN_MODES)}")
    floor = ISOLATION_LEVELS.index(at_least)
    options: list[ModeOption] = []
    unavailable: list[tuple[ModeName, str]] = []
    for name, provider in MODE_PROVIDERS:
        provided = list(provider(gpu, measured_mib, ceiling))
        allowed = [o for o in provided if plugin_mode is None or plugin_mode in o.plugin_modes]
        found = [o for o in allowed if ISOLATION_LEVELS.index(o.isolation) >= floor]
        options.extend(found)
        if not provided:
            unavailable.append((name, _none_reason(name, gpu)))
        elif not allowed:
            unavailable.append((name, f"not under devicePlugin.mode {plugin_mode}"))
        elif not found:
            unavailable.append((name, f"isolation {allowed[0].isolation} is below {at_least}"))
    return ModesReport(
        gpu=gpu,
        measured_mib=measured_mib,
        ceiling=ceiling,
        options=tuple(sorted(options, key=_preference)),
        plugin_mode=plugin_mode,
        at_least=at_least,
        unavailable=tuple(unavailable),
    )
