"""Can the chosen mode's device plugin run on a pool's nodes? Taints it does not tolerate, and GPU Operator
labels that switch an operand off, make a pool whose planned slots are 0: the stack model refuses them, or
the plugin is given the tolerations.

What each mode's plugin tolerates, from the pinned charts:
- `daemonsets`: gpushare's own DaemonSets tolerate every taint (`operator: Exists`).
- `helm`: the device-plugin chart's `tolerations` (values.yaml of 0.17.1): `CriticalAddonsOnly` (any
  effect) and `nvidia.com/gpu:NoSchedule`; gpushare renders those plus one toleration per other pool
  taint (`helm_tolerations`), so every taint is tolerated.
- `gpu-operator`: the ClusterPolicy's `daemonsets.tolerations` (the operator chart v26.7.0's values), for
  every operand: `nvidia.com/gpu:NoSchedule` only. Not extended: NFD's worker, which labels the nodes
  the operator places its operands on, has tolerations of its own; an untolerated taint is refused.
A `PreferNoSchedule` taint never keeps a DaemonSet pod off a node. The GPU Operator skips an operand on a
node labelled `nvidia.com/gpu.deploy.<operand>=false` (`operands=false`: all of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from gpushare import kube_names


@dataclass(frozen=True)
class Toleration:
    key: str
    effect: str | None = None  # None: every effect (operator Exists, no effect)

    def tolerates(self, taint: Mapping[str, str]) -> bool:
        return taint.get("key") == self.key and self.effect in (None, taint.get("effect"))

    def describe(self) -> str:
        return self.key + (f":{self.effect}" if self.effect else "")


_GPU_NO_SCHEDULE: Final = Toleration("nvidia.com/gpu", "NoSchedule")
CHART_TOLERATIONS: Final = (Toleration("CriticalAddonsOnly"), _GPU_NO_SCHEDULE)
# None: every taint is tolerated (daemonsets: `operator: Exists`; helm: the pools' taints are rendered).
PLUGIN_TOLERATIONS: Final[dict[str, tuple[Toleration, ...] | None]] = {
    "daemonsets": None,
    "helm": None,
    "gpu-operator": (_GPU_NO_SCHEDULE,),
}
_WHERE: Final = {"gpu-operator": "the GPU Operator's ClusterPolicy (daemonsets.tolerations)"}


def blocks(taint: Mapping[str, str]) -> bool:
    """A `PreferNoSchedule` taint never keeps a DaemonSet pod off a node."""
    return taint.get("effect") != "PreferNoSchedule"


def helm_tolerations(taints: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The device-plugin chart's `tolerations` value: its defaults, then one `Equal` toleration per pool
    taint (of every pool, in order, once each) that the defaults do not tolerate."""
    rendered: list[dict[str, str]] = [
        {"key": t.key, "operator": "Exists", **({"effect": t.effect} if t.effect else {})}
        for t in CHART_TOLERATIONS
    ]
    for taint in taints:
        if not blocks(taint) or any(t.tolerates(taint) for t in CHART_TOLERATIONS):
            continue
        toleration = {
            "key": taint["key"],
            "operator": "Equal",
            "value": taint.get("value", ""),
            "effect": taint["effect"],
        }
        if toleration not in rendered:
            rendered.append(toleration)
    return rendered


def untolerated_taint(mode: str, taints: Sequence[Mapping[str, str]]) -> tuple[int, str] | None:
    """(index, message) of the first pool taint that keeps `mode`'s plugin off the pool's nodes."""
    tolerations = PLUGIN_TOLERATIONS[mode]
    if tolerations is None:
        return None
    for index, taint in enumerate(taints):
        if not blocks(taint) or any(t.tolerates(taint) for t in tolerations):
            continue
        written = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
        return index, (
            f"{written} is not tolerated by {_WHERE[mode]}, which tolerates only "
            f"{' and '.join(t.describe() for t in tolerations)}: the plugin would never run on this pool's "
            "nodes (0 slots); use mode daemonsets or helm (they tolerate every pool taint) or drop the taint"
        )
    return None


def disabled_operand(mode: str, labels: Mapping[str, str], mig: bool) -> tuple[str, str] | None:
    """(label key, message) of a node label that switches off an operand the pool needs in gpu-operator
    mode: the device plugin always, the MIG manager and GPU feature discovery (which labels
    `nvidia.com/mig.capable`, where the operator places the MIG manager) on a MIG pool."""
    if mode != "gpu-operator":
        return None
    needed = ["operands", "device-plugin"] + (["mig-manager", "gpu-feature-discovery"] if mig else [])
    for operand in needed:
        key = kube_names.LABEL_OPERATOR_DEPLOY_PREFIX + operand
        if labels.get(key) == "false":  # the operator's selector: NotIn (false), exactly
            what = "every operand" if operand == "operands" else f"the {operand}"
            lost = (
                "no plugin would advertise its slots"
                if operand in ("operands", "device-plugin")
                else "nothing would partition its GPUs into MIG instances"
            )
            return key, f"false switches off {what} on this pool's nodes: {lost}; remove the label"
    return None
