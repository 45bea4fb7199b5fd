"""What one read of the cluster's GPU memory found: readings per node, the slots pods hold, problems.

Plain data between `live` (which fills it) and `budget` and `peaks` (which judge it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpushare.verify.memory_series import Readings


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
