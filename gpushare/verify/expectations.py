"""What the live cluster should look like for a stack: the plan turned into objects `verify` reads.

Per pool: the node labels its plugin selects on and the resources each node should advertise; per
plugin mode: the DaemonSets that run the device plugin, the ConfigMap they read and where a plugin
pod's config digest lives; and what the patch on TKE's own DaemonSet set. Pure data from the same
plan and config entries as `render`; the checks compare it with a snapshot of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpushare import gpu_operator, kube_names, mps, plugin_pod, qgpu
from gpushare.errors import GpushareError
from gpushare.plan import FALLBACK_KEY, GPU_RESOURCE, PoolPlan, SharingPlan, build_plan
from gpushare.plugin_configs import PluginConfigEntry, plugin_config_entries
from gpushare.stack.model import Mig, Mps, Qgpu, StackConfig

# The device-plugin chart as DevicePluginRelease installs it: release and chart are both
# `nvidia-device-plugin`, so the chart's fullname is that too (`_helpers.tpl` fullname), its DaemonSet
# carries that name and its embedded `config.map` becomes the ConfigMap `<fullname>-configs`.
HELM_RELEASE = "nvidia-device-plugin"
HELM_CONFIG_MAP = f"{HELM_RELEASE}-configs"
# The chart hashes its embedded ConfigMap template into this pod-template annotation (`_helpers.tpl`).
HELM_CHECKSUM_ANNOTATION = "checksum/config"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

# How a plugin pod proves it runs the current config:
# - "pool-key": its `gpushare.io/config-sha256` annotation equals the digest of its key's text in the
#   live ConfigMap (DaemonSet mode, and TKE's adopted DaemonSet);
# - "template-checksum": the chart's `checksum/config` on the pod equals the one on the live DaemonSet's
#   pod template (Helm mode: the config-manager picks the key by node label, and a changed `config.map`
#   changes only that checksum; a pod with an older one started before the change);
# - "config-map-name": the pod mounts the ConfigMap named in `ClusterExpectation.config_map` (configs
#   published under content-addressed names: a pod mounting another name runs an older config).
DigestRule = Literal["pool-key", "template-checksum", "config-map-name"]


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.namespace}/{self.name}"


@dataclass(frozen=True)
class PluginWorkload:
    """A DaemonSet that runs the device plugin for some pools."""

    daemonset: ObjectRef
    pools: tuple[str, ...]
    digest_rule: DigestRule
    # DaemonSet mode reads one fixed key per DaemonSet; None: the key the node's label names (Helm).
    config_key: str | None = None


@dataclass(frozen=True)
class ManagedPluginExpectation:
    """What gpushare's patch set on TKE's `kube-system/nvidia-device-plugin-daemonset`."""

    daemonset: ObjectRef
    action: str
    container: str
    # Adopt: the pool whose plugin TKE's DaemonSet became, and its config entry.
    adopted: PluginConfigEntry | None = None

    @property
    def node_selector(self) -> dict[str, str] | None:
        """The nodeSelector the patch set; None for an action that patches nothing."""
        if self.adopted is not None:
            return plugin_pod.node_selector(self.adopted.key)
        if self.action == "park":
            return {kube_names.LABEL_PARKED: kube_names.PARKED_VALUE}
        return None


@dataclass(frozen=True)
class PoolExpectation:
    plan: PoolPlan
    # Labels the pool's plugin (and MIG set-up) select on, with their values.
    node_labels: dict[str, str]
    # Resource -> count one node of the pool should advertise in `status.allocatable`.
    per_node_resources: dict[str, int]

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def mig(self) -> Mig | None:
        sharing = self.plan.pool.sharing
        return sharing if isinstance(sharing, Mig) else None

    @property
    def slots_per_node(self) -> int:
        return sum(self.per_node_resources.values())


@dataclass(frozen=True)
class ClusterExpectation:
    stack: str
    mode: str
    pools: tuple[PoolExpectation, ...]
    entries: tuple[PluginConfigEntry, ...]
    config_map: ObjectRef
    workloads: tuple[PluginWorkload, ...]
    managed: ManagedPluginExpectation
    fallback: str = "exclusive, one pod per GPU"
    """What the fallback key gives a node whose label names no key (the plan's own words)."""
    mps_daemon: ObjectRef | None = None
    """The MPS control daemon's DaemonSet, for stacks with an MPS pool (`mps_checks`)."""
    gfd_runs: bool = False
    """GFD labels the nodes (gpu-operator mode, or `gfdEnabled`)."""
    qgpu_manager: ObjectRef | None = None
    """TKE's qgpu-manager DaemonSet, for stacks with a qGPU pool (`qgpu_checks`)."""

    def pool(self, name: str) -> PoolExpectation | None:
        return next((p for p in self.pools if p.name == name), None)

    def entry(self, key: str) -> PluginConfigEntry | None:
        return next((e for e in self.entries if e.key == key), None)

    @property
    def daemonsets(self) -> tuple[ObjectRef, ...]:
        """Every DaemonSet `verify` reads: the plugin workloads, then TKE's."""
        mps_daemon = () if self.mps_daemon is None else (self.mps_daemon,)
        qgpu_manager = () if self.qgpu_manager is None else (self.qgpu_manager,)
        return (*(w.daemonset for w in self.workloads), *mps_daemon, *qgpu_manager, self.managed.daemonset)


def per_node_resources(plan: PoolPlan) -> dict[str, int]:
    """What one node of the pool advertises once its plugin runs the pool's config.

    Time-slicing: replicas x GPUs of `nvidia.com/gpu`. MIG `single` (one profile, not time-sliced): every
    instance as `nvidia.com/gpu`. MIG `mixed`: `nvidia.com/mig-<profile>` per profile, instances x replicas.
    """
    gpus = plan.pool.gpus_per_node_effective
    sharing = plan.pool.sharing
    if isinstance(sharing, Qgpu):
        return {}  # no NVIDIA resource: qgpu_checks reads the qGPU ones
    if not isinstance(sharing, Mig):
        return {GPU_RESOURCE: plan.slots_per_gpu * gpus}
    if plan.mig_strategy == "single":
        return {GPU_RESOURCE: sum(sharing.mig_layout.values()) * gpus}
    slots = {s.resource: s.tuning.slots for s in plan.shared}
    resources: dict[str, int] = {}
    for profile, count in sorted(sharing.mig_layout.items()):
        resource = plan.gpu.mig_profile(profile).resource_name
        resources[resource] = resources.get(resource, 0) + count * slots.get(resource, 1) * gpus
    return resources


def selected_node_labels(stack: StackConfig, plan: PoolPlan) -> dict[str, str]:
    """The labels the pool's node pool sets that something in the cluster selects on."""
    pool = plan.pool
    if isinstance(pool.sharing, Qgpu):
        # All of them: qGPU's switch and policy, and the switches that keep NVIDIA's plugins off.
        labels = qgpu.node_labels(
            pool.labels,
            pool.name,
            pool.gpu,
            pool.sharing.schedule_policy,
            gpu_operator=stack.plugin.mode == "gpu-operator",
        )
        return {k: v for k, v in labels.items() if k not in pool.labels and k != kube_names.LABEL_GPU_MODEL}
    managed = stack.plugin.managed_plugin
    labels = dict(plugin_pod.node_selector(pool.config_key, tke_switch=managed.action != "optOut"))
    labels[kube_names.LABEL_POOL] = pool.name
    if isinstance(pool.sharing, Mig):
        labels[kube_names.LABEL_MIG_CONFIG] = pool.sharing.config_name
    if isinstance(pool.sharing, Mps):
        labels[mps.LABEL_MPS_CAPABLE] = mps.MPS_CAPABLE_VALUE  # the MPS control daemon selects on it
    if stack.plugin.mode == "helm" and not stack.plugin.node_feature_discovery:
        labels[kube_names.LABEL_GPU_PRESENT] = "true"
    return labels


def _nvidia_pools(stack: StackConfig) -> tuple[str, ...]:
    """The pools an NVIDIA plugin serves: all but qGPU pools."""
    return tuple(p.name for p in stack.pools if not isinstance(p.sharing, Qgpu))


def _helm_workloads(stack: StackConfig) -> tuple[ObjectRef, tuple[PluginWorkload, ...]]:
    namespace = stack.plugin.namespace
    workload = PluginWorkload(
        daemonset=ObjectRef("DaemonSet", namespace, HELM_RELEASE),
        pools=_nvidia_pools(stack),
        digest_rule="template-checksum",
    )
    return ObjectRef("ConfigMap", namespace, HELM_CONFIG_MAP), (workload,)


def _daemonset_workloads(
    stack: StackConfig, adopted_pool: str | None
) -> tuple[ObjectRef, tuple[PluginWorkload, ...]]:
    workloads = [
        PluginWorkload(
            daemonset=ObjectRef(
                "DaemonSet", kube_names.CONFIG_MAP_NAMESPACE, plugin_pod.daemonset_name(pool.config_key)
            ),
            pools=(pool.name,),
            digest_rule="pool-key",
            config_key=pool.config_key,
        )
        for pool in stack.pools
        if pool.name != adopted_pool and not isinstance(pool.sharing, Qgpu)
    ]
    managed = stack.plugin.managed_plugin
    if adopted_pool is not None:
        workloads.append(
            PluginWorkload(
                daemonset=ObjectRef("DaemonSet", managed.namespace, managed.name),
                pools=(adopted_pool,),
                digest_rule="pool-key",
                config_key=stack.pool(adopted_pool).config_key,
            )
        )
    config_map = ObjectRef("ConfigMap", kube_names.CONFIG_MAP_NAMESPACE, kube_names.CONFIG_MAP_NAME)
    return config_map, tuple(workloads)


def _operator_workloads(
    stack: StackConfig, entries: tuple[PluginConfigEntry, ...]
) -> tuple[ObjectRef, tuple[PluginWorkload, ...]]:
    namespace = stack.plugin.gpu_operator.namespace
    workload = PluginWorkload(
        daemonset=ObjectRef("DaemonSet", namespace, gpu_operator.PLUGIN_DAEMONSET),
        pools=_nvidia_pools(stack),
        # The config is published under a content-addressed name: a pod mounting another one is stale.
        digest_rule="config-map-name",
    )
    return ObjectRef("ConfigMap", namespace, gpu_operator.device_plugin_config_map(entries).name), (workload,)


def _workloads(
    stack: StackConfig, entries: tuple[PluginConfigEntry, ...], adopted_pool: str | None
) -> tuple[ObjectRef, tuple[PluginWorkload, ...]]:
    """The ConfigMap the plugin reads and the DaemonSets that run it, per plugin mode (`entries`: for
    modes that publish the config under a name derived from its content)."""
    mode: str = stack.plugin.mode
    if mode == "helm":
        return _helm_workloads(stack)
    if mode == "daemonsets":
        return _daemonset_workloads(stack, adopted_pool)
    if mode == "gpu-operator":
        return _operator_workloads(stack, entries)
    # A mode verify does not model would be checked against another mode's objects: refuse instead.
    raise GpushareError(f"verify does not know devicePlugin.mode {mode!r} yet", source=stack.source)


def expected_cluster(stack: StackConfig, plan: SharingPlan | None = None) -> ClusterExpectation:
    plan = plan or build_plan(stack)
    entries = plugin_config_entries(plan)
    managed = stack.plugin.managed_plugin
    adopted_pool = managed.pool if managed.action == "adopt" else None
    config_map, workloads = _workloads(stack, entries, adopted_pool)
    adopted = next((e for e in entries if e.key == adopted_pool), None) if adopted_pool else None
    return ClusterExpectation(
        stack=stack.stack,
        mode=stack.plugin.mode,
        pools=tuple(
            PoolExpectation(p, selected_node_labels(stack, p), per_node_resources(p)) for p in plan.pools
        ),
        entries=entries,
        config_map=config_map,
        workloads=workloads,
        managed=ManagedPluginExpectation(
            daemonset=ObjectRef("DaemonSet", managed.namespace, managed.name),
            action=managed.action,
            container=managed.container_name,
            adopted=adopted,
        ),
        fallback=plan.fallback.describe(),
        mps_daemon=mps_control_daemon(stack),
        gfd_runs=stack.plugin.mode == "gpu-operator" or stack.plugin.gfd_enabled,
        qgpu_manager=(
            ObjectRef("DaemonSet", qgpu.MANAGER_NAMESPACE, qgpu.MANAGER_DAEMONSET)
            if any(isinstance(pool.sharing, Qgpu) for pool in stack.pools)
            else None
        ),
    )


def mps_control_daemon(stack: StackConfig) -> ObjectRef | None:
    """The MPS control daemon's DaemonSet, for a stack with an MPS pool: `<release>-mps-control-daemon`
    from the chart (0.17.1 `templates/daemonset-mps-control-daemon.yml`), `nvidia-device-plugin-mps-control-daemon`
    from the GPU Operator (its `assets/state-mps-control-daemon/0400_daemonset.yaml`, read at the operator's
    HEAD, not at v26.7.0: nodeSelector `nvidia.com/mps.capable=true` and `nvidia.com/gpu.deploy.device-plugin=true`)."""
    if not any(isinstance(pool.sharing, Mps) for pool in stack.pools):
        return None
    plugin = stack.plugin
    if plugin.mode == "gpu-operator":
        name = "nvidia-device-plugin" + mps.CONTROL_DAEMON_SUFFIX
        return ObjectRef("DaemonSet", plugin.gpu_operator.namespace, name)
    return ObjectRef("DaemonSet", plugin.namespace, HELM_RELEASE + mps.CONTROL_DAEMON_SUFFIX)


__all__ = [
    "FALLBACK_KEY",
    "HELM_CHECKSUM_ANNOTATION",
    "HELM_CONFIG_MAP",
    "MIG_RESOURCE_PREFIX",
    "ClusterExpectation",
    "ManagedPluginExpectation",
    "ObjectRef",
    "PluginWorkload",
    "PoolExpectation",
    "expected_cluster",
    "per_node_resources",
]
