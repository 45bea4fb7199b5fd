"""What `verify` reports: the snapshot of the live cluster the checks read, the check names, the findings
and the report (table rows, JSON). Pure data: nothing here talks to a cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from gpushare.verify.expectations import ObjectRef

K8sObject = dict[str, Any]
Severity = Literal["error", "warning"]

SLOTS_ALLOCATABLE = "slots-allocatable"
NODE_LABELS = "node-labels"
PLUGIN_CONFIG_CURRENT = "plugin-config-current"
PLUGIN_CRASHLOOP = "plugin-crashloop"
MANAGED_PLUGIN_DRIFT = "managed-plugin-drift"
GPU_PENDING_PODS = "gpu-pending-pods"
ROLLOUT_STUCK = "rollout-stuck"
MIG_CONFIG_STATE = "mig-config-state"
# Warnings
NODE_IN_NO_POOL = "node-in-no-pool"
POOL_WITHOUT_NODES = "pool-without-nodes"
PERMISSION = "permission"


@dataclass(frozen=True)
class Denial:
    """An API request answered 403: what `verify` could not read, as the RBAC rule that would allow it."""

    verb: str
    resource: str
    namespace: str | None = None
    checks: tuple[str, ...] = ()

    @property
    def permission(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "at cluster scope"
        return f"{self.verb} {self.resource} {where}"


@dataclass(frozen=True)
class ClusterSnapshot:
    """What `verify` read. `objects` holds every object fetched by name (DaemonSets, the plugin
    ConfigMap, the owners of pending pods); `missing` those the server answered 404 for."""

    now: datetime
    nodes: tuple[K8sObject, ...]
    objects: Mapping[ObjectRef, K8sObject] = field(default_factory=dict)
    missing: frozenset[ObjectRef] = frozenset()
    # Pods owned by each DaemonSet in `objects` (matched by the DaemonSet's selector and uid).
    daemonset_pods: Mapping[ObjectRef, tuple[K8sObject, ...]] = field(default_factory=dict)
    pending_pods: tuple[K8sObject, ...] = ()
    scheduling_events: tuple[K8sObject, ...] = ()
    denied: tuple[Denial, ...] = ()


@dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    object: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {
            "check": self.check,
            "severity": self.severity,
            "object": self.object,
            "message": self.message,
        }


@dataclass(frozen=True)
class NodeRow:
    name: str
    expected_slots: int
    allocatable: int
    qgpu_version: str | None = None
    """qGPU pools: the node's `tke.cloud.tencent.com/qgpu.version` label."""


@dataclass(frozen=True)
class PoolRow:
    name: str
    resources: tuple[str, ...]
    nodes: tuple[NodeRow, ...]


@dataclass(frozen=True)
class VerifyReport:
    stack: str
    pools: tuple[PoolRow, ...]
    findings: tuple[Finding, ...]
    not_checked: tuple[str, ...] = ()
    """What could not be read (a 403), as `check (permission)`: the verdict is then partial, never
    "conforms"."""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def partial(self) -> bool:
        return bool(self.not_checked)

    @property
    def checked_pools(self) -> tuple[PoolRow, ...]:
        """The pools with at least one node in the cluster: the only ones whose slots were checked."""
        return tuple(p for p in self.pools if p.nodes)

    @property
    def ok(self) -> bool:
        """Conforming: no error, everything read, at least one pool checked."""
        return not self.errors and not self.partial and bool(self.checked_pools)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "partial": self.partial,
            "notChecked": list(self.not_checked),
            "findings": [f.as_json() for f in self.findings],
            "pools": [
                {
                    "name": p.name,
                    "nodes": [
                        {
                            "name": n.name,
                            "expectedSlots": n.expected_slots,
                            "allocatable": n.allocatable,
                            **({"qgpuVersion": n.qgpu_version} if n.qgpu_version is not None else {}),
                        }
                        for n in p.nodes
                    ],
                }
                for p in self.pools
            ],
        }
