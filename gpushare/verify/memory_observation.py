"""What one read of the cluster's GPU memory found: readings per node, the slots pods hold, problems.

Plain data between `live` (which fills it) and `budget` and `peaks` (which judge it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpushare.verify.memory_series import PodUse, Readings


@dataclass(frozen=True)
class MemoryObservation:
    """What was read: per node the readings of its exporter, and the slots its pods hold per resource."""

    source: str
    readings: Mapping[str, Readings] = field(default_factory=dict)
    allocated: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Nodes already reported as unread (no exporter pod, unreadable page, ...), and those reports.
    unread: frozenset[str] = frozenset()
    problems: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class GpuPods:
    """The pods on a node holding GPU resources: resource -> slots each holds."""

    pods: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def allocated(self) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for resources in self.pods.values():
            for resource, slots in resources.items():
                total[resource] += slots
        return dict(total)

    def holders(self, resource: str) -> list[str]:
        return sorted(p for p, resources in self.pods.items() if resources.get(resource))


@dataclass
class LiveMemory:
    observation: MemoryObservation
    gpu_pods: dict[str, GpuPods]
    # For `measure` with a window: Prometheus' sample count per node (the fewest of its series).
    samples: dict[str, int]


def merge_scrapes(scrapes: list[LiveMemory]) -> LiveMemory:
    """Repeated reads of the same nodes as one: per unit (and per pod there) the largest value any read
    gave, the pods that held slots in any read, and per node how many reads gave it a reading (its samples)."""

    readings: dict[str, Readings] = {}
    samples: dict[str, int] = defaultdict(int)
    pods: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    unread: set[str] = set()
    problems: list[tuple[str, str]] = []
    for live in scrapes:
        observation = live.observation
        unread |= observation.unread
        problems += [p for p in observation.problems if p not in problems]
        for node, held in live.gpu_pods.items():
            for pod, resources in held.pods.items():
                known = pods[node].setdefault(pod, {})
                for resource, slots in resources.items():
                    known[resource] = max(slots, known.get(resource, 0))
        for node, found in observation.readings.items():
            samples[node] += 1
            before = readings.get(node)
            if before is None:
                readings[node] = found
                continue
            used = dict(before.used_mib)
            for unit, value in found.used_mib.items():
                used[unit] = max(value, used.get(unit, value))
            uses = {(p.unit, p.pod): p for p in before.pods}
            for use in found.pods:
                old = uses.get((use.unit, use.pod))
                uses[(use.unit, use.pod)] = (
                    use
                    if old is None
                    else PodUse(use.unit, use.pod, max(use.used_mib, old.used_mib), max(use.slots, old.slots))
                )
            readings[node] = Readings(
                before.exporter, used, tuple(sorted(uses.values(), key=lambda p: (p.unit, p.pod)))
            )
    last = scrapes[-1].observation
    observation = MemoryObservation(
        source=last.source,
        readings=readings,
        allocated={node: GpuPods(held).allocated() for node, held in pods.items()},
        unread=frozenset(unread),
        problems=tuple(problems),
    )
    return LiveMemory(observation, {node: GpuPods(held) for node, held in pods.items()}, dict(samples))
