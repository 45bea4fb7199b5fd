"""`verify`'s checks of the device plugins: their pods' config digests and crash loops, their ConfigMaps
and workloads, and TKE's own DaemonSet (reverted patches, drift)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gpushare import kube_names, plugin_pod
from gpushare.plugin_configs import config_checksum
from gpushare.verify.expectations import (
    HELM_CHECKSUM_ANNOTATION,
    ClusterExpectation,
    ObjectRef,
    PluginWorkload,
)
from gpushare.verify.objects import _annotations, _dig, _labels, _name, _pod_ref, _short
from gpushare.verify.report import (
    MANAGED_PLUGIN_DRIFT,
    PLUGIN_CONFIG_CURRENT,
    PLUGIN_CRASHLOOP,
    ClusterSnapshot,
    Finding,
    K8sObject,
)


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
