"""TKE qGPU pools (`sharing.mode: qgpu`): native, NVIDIA-free, MIG-free, with the add-on, and asked for
in well-formed slices (gpushare/qgpu.py; shared/reference/tke-qgpu.md).

A qGPU pool is a node pool whose labels say `qgpu-device-enable=enable` (the qgpu-manager DaemonSet's
nodeSelector) or set the qGPU schedule policy, or that the stack's config calls a qGPU pool:
- `qgpu-pool-native`: it is a `NativeNodePool` (TKE runs qGPU on native nodes only);
- `qgpu-no-nvidia-plugin`: no `nvidia.com/device-plugin.config` label, TKE's switch `disable`, and no
  NVIDIA plugin lands on it (TKE's DaemonSet, gpushare's, the chart's, the GPU Operator's: the same
  placement model as `one-device-plugin-per-node`); a plugin there would advertise the cards qGPU slices
  as `nvidia.com/gpu` too;
- `qgpu-no-mig`: no MIG (`nvidia.com/mig.config`, `gpuArgs.migEnable`): qGPU slices a whole card;
- `qgpu-addon-present`: the stack declares `Addon(addon_name="qgpu")`, version pinned, values plain JSON;
- `qgpu-request-shape`: a workload's qgpu-core/qgpu-memory requests equal their limits, core a multiple
  of 5, memory whole GiB, and (with the stack's plan) at most one planned slice of the pools it reaches;
- `qgpu-measurement-fresh` (advisory, as `time-slicing-measurement-fresh`): the measurement a qGPU pool's
  slice is sized from is recent. qGPU enforces the slice, so a process that outgrew an old measurement
  fails its allocations at the slice's edge instead of slowing its neighbours.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare import kube_names, qgpu, workload_fit
from gpushare.plan import build_plan
from gpushare.pool_offers import pool_node_labels
from gpushare.qgpu import QgpuSizing
from gpushare.resource_types import ADDON, NATIVE_NODE_POOL, NODE_POOL
from gpushare.stack import fields as stack_fields
from gpushare.stack.model import Qgpu
from gpushare_policies.props import UNKNOWN, Resource, boolean, dig, items, string_map, text
from gpushare_policies.reporting import report_once
from gpushare_policies.settings import MEASUREMENT_AGE_CONFIG_SCHEMA, StackFacts, refusing_unknown_properties
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.tuning_rules import measurement_age_limit, stale_measurement
from gpushare_policies.workloads import NodePoolView


def _labels(res: Resource) -> dict[str, str] | None:
    """A pool's labels: a map on NodePool, a list of {name, value} on NativeNodePool; None if unknown."""
    raw = res.props.get("labels")
    if raw is UNKNOWN:
        return None
    if res.type == NATIVE_NODE_POOL:
        found: dict[str, str] = {}
        for item in items(raw):
            name, value = text(dig(item, "name")), text(dig(item, "value"))
            if name is not None and value is not None:
                found[name] = value
        return found
    return string_map(raw)


@dataclass(frozen=True)
class QgpuPool:
    view: NodePoolView
    native: bool
    why: str
    """What makes it a qGPU pool, for messages."""

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def urn(self) -> str:
        return self.view.resource.urn


def _why_qgpu(labels: dict[str, str], stack_mode: str | None) -> str | None:
    if labels.get(qgpu.LABEL_DEVICE_ENABLE) == qgpu.DEVICE_ENABLE_VALUE:
        return f"labelled {qgpu.LABEL_DEVICE_ENABLE}={qgpu.DEVICE_ENABLE_VALUE}"
    if qgpu.LABEL_SCHEDULE_POLICY in labels:
        return f"labelled {qgpu.LABEL_SCHEDULE_POLICY}"
    if stack_mode == qgpu.MODE:
        return "the stack's pool is sharing.mode qgpu"
    return None


def qgpu_pools(resources: tuple[Resource, ...], stack: StackFacts) -> Iterator[QgpuPool]:
    for res in resources:
        if res.type not in (NODE_POOL, NATIVE_NODE_POOL):
            continue
        labels = _labels(res)
        pool_name = (labels or {}).get(kube_names.LABEL_POOL)
        stack_pool = stack.pool(pool_name) if pool_name else None
        why = _why_qgpu(labels or {}, stack_pool.sharing.mode if stack_pool else None)
        if why is None:
            continue
        instance_type = (
            text(dig(res.props, "native", "instanceTypes", 0))
            if res.type == NATIVE_NODE_POOL
            else text(dig(res.props, "autoScalingConfig", "instanceType"))
        )
        view = NodePoolView(
            resource=res,
            labels=labels,
            instance_type=instance_type,
            mig_enable=boolean(dig(res.props, "nodeConfig", "gpuArgs", "migEnable")),
            stack_pool=stack_pool,
        )
        yield QgpuPool(view, res.type == NATIVE_NODE_POOL, why)


def _pools(view: StackView) -> list[QgpuPool]:
    return list(qgpu_pools(view.resources, view.stack))


# --------------------------------------------------------------------------------------------------------


def _check_native(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for pool in _pools(view_of(args)):
        if not pool.native:
            report_violation(
                f"node pool {pool.name} is {pool.why}, but it is a regular TKE node pool: TKE runs qGPU on "
                "native nodes only, so the qgpu kernel module never slices its cards. Declare it as a "
                "NativeNodePool (gpushare: sharing.mode qgpu with pools[].native).",
                pool.urn,
            )


def _check_no_nvidia_plugin(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    report = report_once(report_violation)
    for pool in _pools(view):
        labels = pool.view.labels
        assert labels is not None  # qgpu_pools yields only pools whose labels it could read
        config = labels.get(kube_names.LABEL_PLUGIN_CONFIG)
        if config is not None:
            report(
                f"qGPU node pool {pool.name} is labelled {kube_names.LABEL_PLUGIN_CONFIG}={config}: a device-plugin "
                "config names it, so an NVIDIA plugin would serve its cards beside qGPU. Remove the label.",
                pool.urn,
            )
        switch = labels.get(kube_names.LABEL_DEVICE_ENABLE)
        if switch != kube_names.DEVICE_DISABLE_VALUE:
            found = (
                "has no such label (TKE labels GPU nodes `enable`)" if switch is None else f"has {switch!r}"
            )
            report(
                f"qGPU node pool {pool.name} must be labelled {kube_names.LABEL_DEVICE_ENABLE}="
                f"{kube_names.DEVICE_DISABLE_VALUE} and {found}: TKE's NVIDIA plugin would advertise the cards "
                "qGPU slices as nvidia.com/gpu too, and they would be allocated twice.",
                pool.urn,
            )
        for workload in view.workloads_on(pool.view):
            placement = view.placement(workload)
            how = f" ({placement.describe()})" if placement else ""
            report(
                f"qGPU node pool {pool.name}: {workload.label}{how} would run an NVIDIA device plugin on its "
                "nodes, advertising the cards qGPU slices as nvidia.com/gpu too (allocated twice). Keep it off: "
                f"{kube_names.LABEL_DEVICE_ENABLE}={kube_names.DEVICE_DISABLE_VALUE} for TKE's, a nodeSelector "
                f"that excludes the pool for others, {qgpu.LABEL_OPERATOR_OPERANDS}=false for the GPU Operator's.",
                pool.urn,
            )


def _check_no_mig(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for pool in _pools(view_of(args)):
        labels = pool.view.labels or {}
        layout = labels.get(kube_names.LABEL_MIG_CONFIG)
        if layout is not None and layout != "all-disabled":
            report_violation(
                f"qGPU node pool {pool.name} is labelled {kube_names.LABEL_MIG_CONFIG}={layout}: qGPU slices a "
                "whole card in its kernel module, and a card in MIG mode runs CUDA only inside its MIG instances. "
                "Use MIG or qGPU per pool.",
                pool.urn,
            )
        if pool.view.mig_enable:
            report_violation(
                f"qGPU node pool {pool.name} turns MIG on (nodeConfig.gpuArgs.migEnable): qGPU slices a whole "
                "card. Use MIG or qGPU per pool.",
                pool.urn,
            )


def _addon_problem(addon: Resource) -> str | None:
    version = text(addon.props.get("addonVersion"))
    if addon.props.get("addonVersion") is UNKNOWN:
        return None
    if not version:
        return (
            "has no addonVersion: TKE installs whatever is current, and the qGPU kernel module's version is bound "
            "to the add-on's (v1.1.1 on). Pin it (sharing.qgpu.addonVersion)."
        )
    raw = addon.props.get("rawValues")
    if not isinstance(raw, str) or raw is UNKNOWN:
        return None
    try:
        json.loads(raw)
    except ValueError:
        try:
            decoded = base64.b64decode(raw, validate=True).decode()
            json.loads(decoded)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return "rawValues is not JSON."
        return (
            "rawValues is base64-encoded JSON: the provider base64-encodes raw_values itself, so TKE would get it "
            "encoded twice. Pass the plain JSON."
        )
    return None


def _check_addon(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    addons = [
        r for r in view.resources if r.type == ADDON and text(r.props.get("addonName")) == qgpu.ADDON_NAME
    ]
    for addon in addons:
        problem = _addon_problem(addon)
        if problem:
            report_violation(f"TKE add-on {qgpu.ADDON_NAME} ({addon.name}) {problem}", addon.urn)
    if addons:
        return
    for pool in _pools(view):
        report_violation(
            f"qGPU node pool {pool.name} ({pool.why}) but the stack declares no TKE add-on "
            f'{qgpu.ADDON_NAME} (tencentcloud.kubernetes.Addon(addon_name="{qgpu.ADDON_NAME}")): without its '
            "qgpu-manager no node gets a qGPU resource. gpushare declares it for sharing.mode qgpu.",
            pool.urn,
        )


# --------------------------------------------------------------------------------------------------------
# qgpu-request-shape


def _kind(resource_type: str) -> str | None:
    provider, _, rest = resource_type.partition(":")
    return rest.rpartition(":")[2] if provider == "kubernetes" else None


def _slices(stack: StackFacts) -> list[tuple[dict[str, str], QgpuSizing]]:
    """(node labels, sizing) of every qGPU pool of the stack config."""
    if stack.config is None:
        return []
    plan = build_plan(stack.config)
    return [
        (pool_node_labels(stack.config, p), p.qgpu)
        for p in plan.pools
        if p.qgpu is not None and isinstance(p.pool.sharing, Qgpu)
    ]


def _quantities(value: object) -> dict[str, object]:
    """A container's requests or limits, every known entry (quantities arrive as strings or doubles)."""
    return {k: v for k, v in (value if isinstance(value, dict) else {}).items() if v is not UNKNOWN}


def _check_requests(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    slices = _slices(view.stack)
    report = report_once(report_violation)
    for res in view.resources:
        kind = _kind(res.type)
        if kind is None:
            continue
        spec = workload_fit.pod_spec_of(kind, res.props)
        if spec is None:
            continue
        placement = workload_fit.placement_of(spec)
        reached = [s for labels, s in slices if placement is None or placement.lands_on(labels)] or [
            s for _, s in slices
        ]
        # The smallest slice it may get: a pod larger than that waits forever on the pools that have it.
        smallest = min(reached, key=lambda s: (s.memory_gib, s.core_percent), default=None)
        for field in ("containers", "initContainers"):
            for container in items(spec.get(field)):
                requests = _quantities(dig(container, "resources", "requests"))
                limits = _quantities(dig(container, "resources", "limits"))
                if not any(r in requests or r in limits for r in qgpu.RESOURCES):
                    continue
                name = text(dig(container, "name")) or "?"
                for problem in qgpu.request_problems(requests, limits, smallest):
                    report(f"{kind} {res.name} container {name}: {problem}.", res.urn)


def _check_measurement_age(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    limit = measurement_age_limit(args.get_config(), view.stack)
    today = stack_fields.latest_date_on_earth()  # the loader's today, as time-slicing-measurement-fresh
    for pool in _pools(view):
        stack_pool = pool.view.stack_pool
        if stack_pool is None or not isinstance(stack_pool.sharing, Qgpu):
            continue  # a pool the stack config does not size: nothing says what its slice rests on
        measured_at = stack_pool.sharing.measured_at
        problem = "no measuredAt, so its age is unknown" if measured_at is None else None
        if measured_at is not None:
            stale = stale_measurement(measured_at, limit, today)
            problem = None if stale is None else f"measured {measured_at}, {stale}"
        if problem is not None:
            report_violation(
                f"qGPU pool {stack_pool.name} (sharing.measuredMiB {stack_pool.sharing.measured_mib}): {problem}. "
                "Re-measure the largest process: qGPU enforces the slice, so a process that grew fails its "
                "allocations at the slice's edge.",
                pool.urn,
            )


QGPU_POOL_NATIVE: Final = StackValidationPolicy(
    name="qgpu-pool-native",
    description="A node pool labelled for qGPU (qgpu-device-enable=enable, the qGPU schedule policy) or "
    "declared sharing.mode qgpu is a TKE native node pool.",
    validate=_check_native,
    remediation_steps="Declare the pool as tencentcloud.kubernetes.NativeNodePool (gpushare: sharing.mode qgpu "
    "with pools[].native), or remove its qGPU labels.",
)
QGPU_NO_NVIDIA_PLUGIN: Final = StackValidationPolicy(
    name="qgpu-no-nvidia-plugin",
    description="A qGPU node pool carries no device-plugin config label, is labelled nvidia-device-enable="
    "disable, and no NVIDIA device plugin (TKE's, gpushare's DaemonSets, the chart's, the operator's) "
    "lands on it.",
    validate=_check_no_nvidia_plugin,
    remediation_steps="Label the pool nvidia-device-enable=disable (and nvidia.com/gpu.deploy.operands=false "
    "under the GPU Operator), drop nvidia.com/device-plugin.config, and narrow plugin nodeSelectors.",
)
QGPU_NO_MIG: Final = StackValidationPolicy(
    name="qgpu-no-mig",
    description="A qGPU node pool turns no MIG on (nvidia.com/mig.config, gpuArgs.migEnable).",
    validate=_check_no_mig,
    remediation_steps="Use MIG or qGPU per pool: drop the MIG label or migEnable from the qGPU pool.",
)
QGPU_ADDON_PRESENT: Final = StackValidationPolicy(
    name="qgpu-addon-present",
    description="A stack with a qGPU node pool declares TKE's qgpu add-on, its version pinned and its "
    "rawValues plain JSON.",
    validate=_check_addon,
    remediation_steps='Declare tencentcloud.kubernetes.Addon(addon_name="qgpu", addon_version=...) with plain '
    "JSON raw_values (gpushare does for sharing.mode qgpu).",
)
QGPU_REQUEST_SHAPE: Final = StackValidationPolicy(
    name="qgpu-request-shape",
    description="Workloads asking for tke.cloud.tencent.com/qgpu-core or qgpu-memory ask well: requests equal "
    "limits, core a multiple of 5, memory whole GiB, no more than one planned slice of the pools they reach.",
    validate=_check_requests,
    remediation_steps="Set requests equal to limits; qgpu-core in steps of 5, qgpu-memory in whole GiB, at most "
    "the slice `gpushare plan` gives the pool.",
)

QGPU_MEASUREMENT_FRESH: Final = StackValidationPolicy(
    name="qgpu-measurement-fresh",
    description="The measurement a qGPU pool's slice is sized from is recent (measuredAt within "
    "maxMeasurementAgeDays).",
    validate=refusing_unknown_properties(MEASUREMENT_AGE_CONFIG_SCHEMA, _check_measurement_age),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=MEASUREMENT_AGE_CONFIG_SCHEMA,
    remediation_steps="Measure the largest process's GPU memory on the node (nvidia-smi --query-compute-apps), "
    "set the pool's sharing.measuredMiB and measuredAt, and let gpushare size the slice.",
)

QGPU_POLICIES: Final = (
    QGPU_POOL_NATIVE,
    QGPU_NO_NVIDIA_PLUGIN,
    QGPU_NO_MIG,
    QGPU_ADDON_PRESENT,
    QGPU_REQUEST_SHAPE,
    QGPU_MEASUREMENT_FRESH,
)
