"""`verify`'s checks: pure functions from the expected cluster and a snapshot of the live one to findings.

The snapshot holds objects exactly as the API server returns them (camelCase JSON); nothing here talks
to a cluster, so every check runs in tests on hand-built or rendered objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from kubernetes.utils.quantity import parse_quantity

from gpushare import kube_names, plugin_pod
from gpushare.plugin_configs import config_checksum
from gpushare.verify.expectations import (
    FALLBACK_KEY,
    HELM_CHECKSUM_ANNOTATION,
    MIG_RESOURCE_PREFIX,
    ClusterExpectation,
    ObjectRef,
    PluginWorkload,
    PoolExpectation,
)

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

_INSUFFICIENT_GPU = "Insufficient nvidia.com/"
_REVISION = "deployment.kubernetes.io/revision"


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
                        {"name": n.name, "expectedSlots": n.expected_slots, "allocatable": n.allocatable}
                        for n in p.nodes
                    ],
                }
                for p in self.pools
            ],
        }


# --------------------------------------------------------------------------------------------------
# Reading objects


def _dig(obj: Mapping[str, Any] | None, *path: str) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _dig(obj, "metadata", "labels") or {}


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return _dig(obj, "metadata", "annotations") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_dig(obj, "metadata", "name"))


def _pod_ref(pod: Mapping[str, Any]) -> str:
    return f"pod/{_dig(pod, 'metadata', 'namespace')}/{_name(pod)}"


def _count(value: Any) -> int:
    """Extended resources (`nvidia.com/*`) are integer quantities, written as Kubernetes writes quantities
    (`1k` is 1000: the client's own parser, apimachinery's suffixes); a value that is not a whole,
    non-negative ASCII quantity counts as none."""
    text = str(value)
    if not text.isascii():
        return 0  # Decimal would read full-width digits; Kubernetes reads ASCII only
    try:
        quantity = parse_quantity(text)
    except (ValueError, ArithmeticError):
        return 0
    if not quantity.is_finite() or quantity < 0 or quantity != quantity.to_integral_value():
        return 0
    return int(quantity)


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(seconds: float) -> str:
    """`28d 3h`, `5h 12m`, `4m 10s`: how long something has waited, in its two largest units."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _since(snapshot: ClusterSnapshot, value: Any) -> str | None:
    start = _timestamp(value)
    return None if start is None else age((snapshot.now - start).total_seconds())


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"


# --------------------------------------------------------------------------------------------------
# Nodes: pools, slots, labels, MIG state


def _pool_nodes(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> dict[str, list[K8sObject]]:
    by_pool: dict[str, list[K8sObject]] = {p.name: [] for p in expected.pools}
    for node in snapshot.nodes:
        pool = _labels(node).get(kube_names.LABEL_POOL)
        if pool in by_pool:
            by_pool[pool].append(node)
    return by_pool


def _describe_plan(pool: PoolExpectation, resource: str) -> str:
    plan = pool.plan
    gpus = f"{plan.pool.gpus_per_node_effective} GPU(s)"
    if pool.mig is None:
        return f"{plan.slots_per_gpu} replicas x {gpus}"
    layout = pool.mig.mig_layout
    if not resource.startswith(MIG_RESOURCE_PREFIX):
        return f"{sum(layout.values())} MIG instances x {gpus}"
    instances = sum(n for p, n in layout.items() if plan.gpu.mig_profile(p).resource_name == resource)
    replicas = pool.per_node_resources[resource] // max(1, instances * plan.pool.gpus_per_node_effective)
    return f"{instances} instances x {replicas} replicas x {gpus}"


def _slot_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    allocatable = _dig(node, "status", "allocatable") or {}
    for resource, planned in pool.per_node_resources.items():
        have = _count(allocatable.get(resource, 0))
        if have != planned:
            yield Finding(
                SLOTS_ALLOCATABLE,
                "error",
                f"node/{_name(node)}",
                f"pool {pool.name}: allocatable {resource} is {have}, the plan gives {planned} "
                f"({_describe_plan(pool, resource)}); the plugin on this node does not serve the pool's config "
                "(see the plugin findings, or `kubectl describe node`)",
            )


def _label_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    labels = _labels(node)
    for key, value in pool.node_labels.items():
        if labels.get(key) != value:
            now = f"it has {key}={labels[key]}" if key in labels else "it has none"
            yield Finding(
                NODE_LABELS,
                "error",
                f"node/{_name(node)}",
                f"pool {pool.name}: needs label {key}={value} ({now}); the node pool sets it on new nodes "
                f"(`pulumi up`), a node that lost it needs `kubectl label node {_name(node)} {key}={value} --overwrite`",
            )


def _mig_findings(pool: PoolExpectation, node: K8sObject) -> Iterator[Finding]:
    if pool.mig is None:
        return
    state = _labels(node).get(kube_names.LABEL_MIG_CONFIG_STATE)
    if state is not None and state != "success":
        yield Finding(
            MIG_CONFIG_STATE,
            "error",
            f"node/{_name(node)}",
            f"pool {pool.name}: {kube_names.LABEL_MIG_CONFIG_STATE}={state} for {kube_names.LABEL_MIG_CONFIG}="
            f"{pool.mig.config_name}; the GPUs are not partitioned as planned (the MIG manager's or the "
            "pre-start script's log on the node says why)",
        )
    allocatable = _dig(node, "status", "allocatable") or {}
    unplanned = sorted(
        r for r in allocatable if r.startswith(MIG_RESOURCE_PREFIX) and r not in pool.per_node_resources
    )
    if unplanned:
        planned = ", ".join(pool.per_node_resources) or "none"
        yield Finding(
            MIG_CONFIG_STATE,
            "error",
            f"node/{_name(node)}",
            f"pool {pool.name}: advertises {', '.join(unplanned)}, which layout {pool.mig.config_name} "
            f"does not have (planned: {planned}); the node's MIG partition differs from the layout",
        )


def _is_gpu_node(node: K8sObject) -> bool:
    for field_name in ("capacity", "allocatable"):
        resources = _dig(node, "status", field_name) or {}
        if any(r.startswith("nvidia.com/") and _count(v) > 0 for r, v in resources.items()):
            return True
    return kube_names.LABEL_DEVICE_ENABLE in _labels(node)


def _node_warnings(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> Iterator[Finding]:
    pools = {p.name for p in expected.pools}
    for node in snapshot.nodes:
        pool = _labels(node).get(kube_names.LABEL_POOL)
        if pool is not None and pool not in pools:
            yield Finding(
                NODE_IN_NO_POOL,
                "warning",
                f"node/{_name(node)}",
                f"labelled {kube_names.LABEL_POOL}={pool}, a pool stack {expected.stack} does not have",
            )
        elif pool is None and _is_gpu_node(node):
            # Outside daemonsets mode a config-manager picks a key per node; without a label it is `any`.
            served = (
                f"; its plugin serves it the fallback key `{FALLBACK_KEY}`: {expected.fallback}"
                if expected.mode != "daemonsets"
                else ""
            )
            yield Finding(
                NODE_IN_NO_POOL,
                "warning",
                f"node/{_name(node)}",
                f"a GPU node in no gpushare pool (no {kube_names.LABEL_POOL} label): its GPUs are not "
                f"planned, and whatever plugin runs there is not checked{served}",
            )


# --------------------------------------------------------------------------------------------------
# Plugin pods: config digest and crash loops


def _node_pools(snapshot: ClusterSnapshot) -> dict[str, str]:
    return {
        _name(n): _labels(n)[kube_names.LABEL_POOL]
        for n in snapshot.nodes
        if kube_names.LABEL_POOL in _labels(n)
    }


def _on(pod: K8sObject, node_pools: Mapping[str, str]) -> str:
    node = _dig(pod, "spec", "nodeName")
    if not node:
        return "not scheduled"
    pool = node_pools.get(node)
    return f"on node {node} (pool {pool})" if pool else f"on node {node}"


def _crashloop_findings(pod: K8sObject, node_pools: Mapping[str, str]) -> Iterator[Finding]:
    statuses = [
        *(_dig(pod, "status", "initContainerStatuses") or []),
        *(_dig(pod, "status", "containerStatuses") or []),
    ]
    for status in statuses:
        waiting = _dig(status, "state", "waiting") or {}
        restarts = int(status.get("restartCount") or 0)
        if waiting.get("reason") != "CrashLoopBackOff" and restarts == 0:
            continue
        terminated = _dig(status, "lastState", "terminated") or {}
        last = (terminated.get("message") or "").strip()
        if not last and terminated:
            last = f"{terminated.get('reason', 'terminated')}, exit code {terminated.get('exitCode')}"
        state = "CrashLoopBackOff" if waiting.get("reason") == "CrashLoopBackOff" else "restarted"
        yield Finding(
            PLUGIN_CRASHLOOP,
            "error",
            _pod_ref(pod),
            f"{_on(pod, node_pools)}: container {status.get('name')} {state}, {restarts} restart(s); "
            f"last termination: {last or 'no message'}",
        )


def _running(pod: K8sObject) -> bool:
    return _dig(pod, "status", "phase") == "Running" and not _dig(pod, "metadata", "deletionTimestamp")


def _digest_findings(
    workload: PluginWorkload,
    daemonset: K8sObject,
    pods: Sequence[K8sObject],
    config_ref: ObjectRef,
    config_map: K8sObject | None,
    node_pools: Mapping[str, str],
) -> Iterator[Finding]:
    ds_name = _name(daemonset)
    template_annotations = _dig(daemonset, "spec", "template", "metadata", "annotations") or {}
    restart = f"`kubectl -n {workload.daemonset.namespace} rollout restart daemonset/{ds_name}`"
    for pod in pods:
        if not _running(pod):
            continue
        annotations = _annotations(pod)
        if workload.digest_rule == "config-map-name":
            wanted_name = config_ref.name
            mounted = sorted(
                str(_dig(v, "configMap", "name"))
                for v in _dig(pod, "spec", "volumes") or []
                if _dig(v, "configMap", "name")
            )
            if wanted_name and wanted_name not in mounted:
                yield Finding(
                    PLUGIN_CONFIG_CURRENT,
                    "error",
                    _pod_ref(pod),
                    f"{_on(pod, node_pools)}: mounts ConfigMap {', '.join(mounted) or 'none'}, the current config "
                    f"is {config_ref.namespace}/{wanted_name}: the pod started before the last config change; {restart}",
                )
            continue
        if workload.digest_rule == "template-checksum":
            wanted = template_annotations.get(HELM_CHECKSUM_ANNOTATION)
            have = annotations.get(HELM_CHECKSUM_ANNOTATION)
            if wanted and have != wanted:
                yield Finding(
                    PLUGIN_CONFIG_CURRENT,
                    "error",
                    _pod_ref(pod),
                    f"{_on(pod, node_pools)}: {HELM_CHECKSUM_ANNOTATION} {_short(have)}, the DaemonSet's template "
                    f"has {_short(wanted)}: the pod started before the last config change and still runs the "
                    f"old config (the plugin never re-reads it); its rollout is pending or stuck: {restart}",
                )
            continue
        if config_map is None or workload.config_key is None:
            continue
        text = (config_map.get("data") or {}).get(workload.config_key)
        if text is None:
            continue  # reported once for the ConfigMap
        wanted = config_checksum(text)
        have = annotations.get(kube_names.ANNOTATION_CONFIG_SHA256)
        if have == wanted:
            continue
        # The template's checksum says whether the DaemonSet knows the live config: if it does, its pods
        # just have not been replaced; if not, the ConfigMap was changed outside Pulumi.
        fix = (
            restart
            if template_annotations.get(kube_names.ANNOTATION_CONFIG_SHA256) == wanted
            else "the ConfigMap was changed outside Pulumi (the DaemonSet's template does not have it either): "
            "`pulumi up` restores the planned config and rolls the pods"
        )
        yield Finding(
            PLUGIN_CONFIG_CURRENT,
            "error",
            _pod_ref(pod),
            f"{_on(pod, node_pools)}: runs config digest {_short(have)}, key {workload.config_key} of the live "
            f"ConfigMap {_where(config_map)} has {_short(wanted)}: the pod started before the "
            f"last config change and still runs the old config (the plugin never re-reads it); {fix}",
        )


def _where(config_map: K8sObject) -> str:
    return f"{_dig(config_map, 'metadata', 'namespace')}/{_name(config_map)}"


def _config_map_findings(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> Iterator[Finding]:
    ref = expected.config_map
    if ref in snapshot.missing:
        yield Finding(
            PLUGIN_CONFIG_CURRENT,
            "error",
            str(ref),
            "the device-plugin ConfigMap does not exist: no pool has a config; `pulumi up` creates it",
        )
        return
    config_map = snapshot.objects.get(ref)
    if config_map is None:
        return
    data = config_map.get("data") or {}
    for entry in expected.entries:
        live = data.get(entry.key)
        if live is None:
            yield Finding(
                PLUGIN_CONFIG_CURRENT,
                "error",
                str(ref),
                f"has no key {entry.key}: nodes selecting it get no config; `pulumi up` writes it",
            )
        elif config_checksum(live) != entry.sha256:
            yield Finding(
                PLUGIN_CONFIG_CURRENT,
                "error",
                str(ref),
                f"key {entry.key} has digest {_short(config_checksum(live))}, the plan's is {_short(entry.sha256)}: "
                "edited by hand or the stack is not applied; `pulumi up` writes the planned config",
            )


def _workload_findings(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> Iterator[Finding]:
    node_pools = _node_pools(snapshot)
    config_map = snapshot.objects.get(expected.config_map)
    for workload in expected.workloads:
        ref = workload.daemonset
        if ref in snapshot.missing:
            yield Finding(
                PLUGIN_CONFIG_CURRENT,
                "error",
                str(ref),
                f"not found: pool(s) {', '.join(workload.pools)} have no device plugin; `pulumi up` creates it",
            )
            continue
        daemonset = snapshot.objects.get(ref)
        if daemonset is None:
            continue
        pods = snapshot.daemonset_pods.get(ref, ())
        for pod in pods:
            yield from _crashloop_findings(pod, node_pools)
        yield from _digest_findings(workload, daemonset, pods, expected.config_map, config_map, node_pools)


# --------------------------------------------------------------------------------------------------
# TKE's own DaemonSet


def _container(daemonset: K8sObject, name: str) -> K8sObject | None:
    containers = _dig(daemonset, "spec", "template", "spec", "containers") or []
    return next((c for c in containers if c.get("name") == name), None)


def _reverted_fields(expected: ClusterExpectation, daemonset: K8sObject) -> list[str]:
    """What TKE's DaemonSet no longer has of gpushare's patch, one phrase per field."""
    managed = expected.managed
    template = _dig(daemonset, "spec", "template") or {}
    node_selector = _dig(template, "spec", "nodeSelector") or {}
    reverted: list[str] = []
    wanted_selector = managed.node_selector
    if wanted_selector is not None and any(node_selector.get(k) != v for k, v in wanted_selector.items()):
        reverted.append(
            f"nodeSelector (wants {_pairs(wanted_selector)}, has {_pairs(node_selector) or 'none'})"
        )
    if managed.adopted is None:
        return reverted
    entry = managed.adopted
    container = _container(daemonset, managed.container)
    if container is None:
        names = [c.get("name") for c in _dig(template, "spec", "containers") or []]
        reverted.append(
            f"container {managed.container} (not found; it has {', '.join(map(str, names))}: set "
            "sharing.devicePlugin.managedPlugin.containerName)"
        )
        return reverted
    args = list(container.get("args") or [])
    if args != plugin_pod.plugin_args(entry.key):
        reverted.append(
            f"args (wants {' '.join(plugin_pod.plugin_args(entry.key))}, has {' '.join(args) or 'none'})"
        )
    mounts = container.get("volumeMounts") or []
    if not any(
        m.get("name") == kube_names.CONFIG_VOLUME and m.get("mountPath") == kube_names.CONFIG_MOUNT_DIR
        for m in mounts
    ):
        reverted.append(f"volumeMount {kube_names.CONFIG_VOLUME} at {kube_names.CONFIG_MOUNT_DIR}")
    volumes = _dig(template, "spec", "volumes") or []
    if not any(
        v.get("name") == kube_names.CONFIG_VOLUME and _dig(v, "configMap", "name") == expected.config_map.name
        for v in volumes
    ):
        reverted.append(f"volume {kube_names.CONFIG_VOLUME} (ConfigMap {expected.config_map.name})")
    checksum = _dig(template, "metadata", "annotations", kube_names.ANNOTATION_CONFIG_SHA256)
    if checksum != entry.sha256:
        reverted.append(
            f"annotation {kube_names.ANNOTATION_CONFIG_SHA256} (wants {_short(entry.sha256)}, has {_short(checksum)})"
        )
    return reverted


def _pairs(mapping: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))


def _managed_findings(expected: ClusterExpectation, snapshot: ClusterSnapshot) -> Iterator[Finding]:
    managed = expected.managed
    daemonset = snapshot.objects.get(managed.daemonset)
    if daemonset is None:
        return  # absent: nothing to park (an adopted one missing is a plugin finding)
    reverted = _reverted_fields(expected, daemonset)
    if reverted:
        yield Finding(
            MANAGED_PLUGIN_DRIFT,
            "error",
            str(managed.daemonset),
            f"TKE's DaemonSet no longer has what gpushare's {managed.action} patch set: {'; '.join(reverted)}. "
            "TKE reconciled it back; `pulumi up` re-applies the patch",
        )
    opt_out = managed.action == "optOut"
    keeps_it_off = "the node pool's label" if opt_out else "the patch"
    if opt_out:
        # optOut patches nothing: the pools' own `nvidia-device-enable=disable` keeps TKE's plugin off.
        for node in snapshot.nodes:
            labels = _labels(node)
            pool = labels.get(kube_names.LABEL_POOL)
            switch = labels.get(kube_names.LABEL_DEVICE_ENABLE)
            if (
                pool is not None
                and expected.pool(pool) is not None
                and switch != kube_names.DEVICE_DISABLE_VALUE
            ):
                yield Finding(
                    MANAGED_PLUGIN_DRIFT,
                    "error",
                    f"node/{_name(node)}",
                    f"pool {pool} opts out of TKE's device plugin, but the node has "
                    f"{kube_names.LABEL_DEVICE_ENABLE}={switch or '(none)'} instead of "
                    f"{kube_names.DEVICE_DISABLE_VALUE}: TKE's plugin may run beside the pool's own; "
                    "`pulumi up` re-applies the node pool's label (TKE applies it to nodes it creates)",
                )
    # Whatever the action, TKE's plugin must run on no pool node but the adopted pool's: two plugins on
    # one node fight over the same resource.
    allowed = {managed.adopted.key} if managed.adopted else set()
    node_pools = _node_pools(snapshot)
    for pod in snapshot.daemonset_pods.get(managed.daemonset, ()):
        pool = node_pools.get(str(_dig(pod, "spec", "nodeName")))
        if pool is not None and pool not in allowed and expected.pool(pool) is not None:
            yield Finding(
                MANAGED_PLUGIN_DRIFT,
                "error",
                _pod_ref(pod),
                f"TKE's device plugin runs on node {_dig(pod, 'spec', 'nodeName')} of pool {pool}, beside the "
                f"pool's own plugin; `pulumi up` re-applies {keeps_it_off} that keeps it off",
            )


# --------------------------------------------------------------------------------------------------
# Workloads waiting for GPUs


def _gpu_wait_reason(pod: K8sObject, events: Sequence[K8sObject]) -> str | None:
    for condition in _dig(pod, "status", "conditions") or []:
        message = condition.get("message") or ""
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and _INSUFFICIENT_GPU in message
        ):
            return str(message)
    uid = _dig(pod, "metadata", "uid")
    namespace = _dig(pod, "metadata", "namespace")
    for event in sorted(events, key=lambda e: str(e.get("lastTimestamp") or ""), reverse=True):
        involved = event.get("involvedObject") or {}
        same = (
            involved.get("uid") == uid
            if involved.get("uid")
            else (involved.get("name") == _name(pod) and involved.get("namespace") == namespace)
        )
        if same and involved.get("kind") == "Pod" and _INSUFFICIENT_GPU in (event.get("message") or ""):
            return str(event.get("message"))
    return None


def gpu_pending_pods(pods: Sequence[K8sObject], events: Sequence[K8sObject]) -> list[tuple[K8sObject, str]]:
    """(pod, scheduler message) of every unscheduled Pending pod that waits for an `nvidia.com/` resource."""
    found = []
    for pod in pods:
        if _dig(pod, "status", "phase") != "Pending" or _dig(pod, "spec", "nodeName"):
            continue
        reason = _gpu_wait_reason(pod, events)
        if reason is not None:
            found.append((pod, reason))
    return found


def _pending_findings(
    pending: Sequence[tuple[K8sObject, str]], snapshot: ClusterSnapshot
) -> Iterator[Finding]:
    for pod, reason in pending:
        waited = _since(snapshot, _dig(pod, "metadata", "creationTimestamp")) or "an unknown time"
        yield Finding(
            GPU_PENDING_PODS,
            "error",
            _pod_ref(pod),
            f"Pending for {waited}: {reason.strip()} — add slots (a pool's nodes or replicas) or free them",
        )


def _owner(obj: K8sObject, kinds: tuple[str, ...]) -> ObjectRef | None:
    namespace = str(_dig(obj, "metadata", "namespace"))
    for owner in _dig(obj, "metadata", "ownerReferences") or []:
        if owner.get("kind") in kinds and owner.get("controller", True):
            return ObjectRef(str(owner["kind"]), namespace, str(owner["name"]))
    return None


def _condition(obj: K8sObject, kind: str) -> K8sObject | None:
    return next((c for c in _dig(obj, "status", "conditions") or [] if c.get("type") == kind), None)


def _deployment_stuck(
    deployment: K8sObject, replica_set: K8sObject, pod: K8sObject, snapshot: ClusterSnapshot
) -> str | None:
    progressing = _condition(deployment, "Progressing")
    status = deployment.get("status") or {}
    revision = _annotations(deployment).get(_REVISION)
    new_rs = revision is not None and _annotations(replica_set).get(_REVISION) == revision
    old_pods_left = int(status.get("replicas") or 0) > int(status.get("updatedReplicas") or 0)
    deadline = progressing is not None and progressing.get("status") == "False"
    if not deadline and not (new_rs and old_pods_left):
        return None
    # How long the rollout has been going: since its new ReplicaSet was created.
    since = _dig(replica_set, "metadata", "creationTimestamp")
    ready = int(_dig(replica_set, "status", "readyReplicas") or 0)
    wanted = int(_dig(replica_set, "spec", "replicas") or 0)
    why = f" ({progressing.get('reason')})" if deadline and progressing else ""
    frozen = _since(snapshot, since)
    old = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
    return (
        f"rollout to revision {revision or '?'} has not progressed{f' for {frozen}' if frozen else ''}{why}: "
        f"ReplicaSet {_name(replica_set)} has {ready}/{wanted} ready, its pod {_name(pod)} waits for a GPU"
        + (f", and {old} old pod(s) keep running" if old > 0 else "")
    )


def _statefulset_stuck(statefulset: K8sObject, pod: K8sObject) -> str | None:
    status = statefulset.get("status") or {}
    if status.get("updateRevision") and status.get("updateRevision") != status.get("currentRevision"):
        return (
            f"rolling update to {status['updateRevision']} has not finished: pod {_name(pod)} waits for a GPU, "
            f"{int(status.get('updatedReplicas') or 0)}/{int(_dig(statefulset, 'spec', 'replicas') or 0)} updated"
        )
    return None


def _rollout_findings(
    pending: Sequence[tuple[K8sObject, str]], snapshot: ClusterSnapshot
) -> Iterator[Finding]:
    seen: set[ObjectRef] = set()
    for pod, _ in pending:
        owner = _owner(pod, ("ReplicaSet", "StatefulSet"))
        if owner is None:
            continue
        owner_object = snapshot.objects.get(owner)
        if owner_object is None:
            continue
        message: str | None
        if owner.kind == "ReplicaSet":
            workload = _owner(owner_object, ("Deployment",))
            deployment = snapshot.objects.get(workload) if workload else None
            if workload is None or deployment is None:
                continue
            message = _deployment_stuck(deployment, owner_object, pod, snapshot)
        else:
            workload = owner
            message = _statefulset_stuck(owner_object, pod)
        if message is None or workload in seen:
            continue
        seen.add(workload)
        yield Finding(
            ROLLOUT_STUCK,
            "error",
            str(workload),
            f"{message} — the release is frozen behind a GPU-Pending pod; give it a slot and it continues",
        )


# --------------------------------------------------------------------------------------------------
# All together


def _permission_findings(snapshot: ClusterSnapshot) -> Iterator[Finding]:
    for denial in snapshot.denied:
        skipped = f"; not checked: {', '.join(denial.checks)}" if denial.checks else ""
        yield Finding(
            PERMISSION,
            "warning",
            denial.resource,
            f"missing permission: {denial.permission} (the API server answered 403){skipped}; "
            "see the ClusterRole in docs/verify.md",
        )


def _pool_rows(expected: ClusterExpectation, by_pool: Mapping[str, list[K8sObject]]) -> tuple[PoolRow, ...]:
    rows = []
    for pool in expected.pools:
        nodes = []
        for node in sorted(by_pool[pool.name], key=_name):
            allocatable = _dig(node, "status", "allocatable") or {}
            have = sum(_count(allocatable.get(r, 0)) for r in pool.per_node_resources)
            nodes.append(NodeRow(_name(node), pool.slots_per_node, have))
        rows.append(PoolRow(pool.name, tuple(pool.per_node_resources), tuple(nodes)))
    return tuple(rows)


def run_checks(
    expected: ClusterExpectation, snapshot: ClusterSnapshot, extra: Sequence[Finding] = ()
) -> VerifyReport:
    """Every check over the snapshot, plus `extra` findings of checks that read more (memory-budget)."""
    findings: list[Finding] = list(extra)
    by_pool = _pool_nodes(expected, snapshot)
    for pool in expected.pools:
        nodes = sorted(by_pool[pool.name], key=_name)
        if not nodes and pool.plan.pool.nodes.desired > 0:
            findings.append(
                Finding(
                    POOL_WITHOUT_NODES,
                    "warning",
                    f"pool/{pool.name}",
                    f"no node carries {kube_names.LABEL_POOL}={pool.name} yet (desired "
                    f"{pool.plan.pool.nodes.desired}): the node pool is not created or its nodes have not joined",
                )
            )
        for node in nodes:
            findings.extend(_label_findings(pool, node))
            findings.extend(_slot_findings(pool, node))
            findings.extend(_mig_findings(pool, node))
    findings.extend(_config_map_findings(expected, snapshot))
    findings.extend(_workload_findings(expected, snapshot))
    findings.extend(_managed_findings(expected, snapshot))
    pending = gpu_pending_pods(snapshot.pending_pods, snapshot.scheduling_events)
    findings.extend(_pending_findings(pending, snapshot))
    findings.extend(_rollout_findings(pending, snapshot))
    findings.extend(_node_warnings(expected, snapshot))
    findings.extend(_permission_findings(snapshot))
    # Errors first, then by check and object, so two runs over the same cluster print the same.
    findings.sort(key=lambda f: (f.severity != "error", f.check, f.object))
    not_checked = tuple(
        f"{check} ({denial.permission})" for denial in snapshot.denied for check in denial.checks or ("-",)
    )
    return VerifyReport(expected.stack, _pool_rows(expected, by_pool), tuple(findings), not_checked)
