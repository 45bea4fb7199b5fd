"""Which stack and cluster the cluster `verify` or `measure` talks to belongs to, read before any judgement.

gpushare annotates its own objects with the stack and the TKE cluster id they were applied from
(`kube_names.ANNOTATION_STACK`, `ANNOTATION_CLUSTER`: the plugin ConfigMap in daemonsets and gpu-operator modes, its plugin
DaemonSets, the patch on TKE's device-plugin DaemonSet). `verify --stack staging` against the prod
cluster would otherwise report prod's objects as staging's drift and tell the operator to `pulumi up` the
wrong cluster. An object that names another stack or cluster refuses the run (exit 2); none that carries
the annotations (a cluster gpushare has not applied to yet, or applied to before they existed) is said
as "cannot confirm", and the run goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpushare import kube_names
from gpushare.errors import GpushareError
from gpushare.verify.expectations import ClusterExpectation, ObjectRef

K8sObject = dict[str, object]
# An annotation value is echoed into one line: at most this many characters, printable ASCII.
_SHOWN = 80


class OtherCluster(GpushareError):
    """The cluster's gpushare objects name another stack or cluster: nothing of it is judged."""


@dataclass(frozen=True)
class Identity:
    stack: str
    cluster_id: str

    def describe(self) -> str:
        return f"stack {self.stack} (cluster {self.cluster_id})"


def _shown(value: object) -> str:
    text = "".join(c if " " <= c <= "~" else "?" for c in str(value))
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def identity_refs(expected: ClusterExpectation) -> tuple[ObjectRef, ...]:
    """The objects that can carry gpushare's identity annotations (those that are not gpushare's, such as
    the chart's ConfigMap, simply carry none)."""
    return tuple(dict.fromkeys((expected.config_map, *expected.daemonsets)))


def _annotations(obj: Mapping[str, object]) -> list[tuple[str, Mapping[str, object]]]:
    """The object's own annotations, and its pod template's (where the device-plugin chart, which
    annotates none of its objects, lets gpushare put them: `podAnnotations`)."""
    found: list[tuple[str, Mapping[str, object]]] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("annotations"), Mapping):
        found.append(("", metadata["annotations"]))
    spec = obj.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    template_metadata = template.get("metadata") if isinstance(template, Mapping) else None
    if isinstance(template_metadata, Mapping) and isinstance(template_metadata.get("annotations"), Mapping):
        found.append(("pod template's ", template_metadata["annotations"]))
    return found


def confirm_identity(
    ours: Identity, objects: Mapping[ObjectRef, Mapping[str, object]], server: str
) -> str | None:
    """Raise `OtherCluster` when an object names another stack or cluster; a note (one line) when none
    names any; None when the cluster is confirmed as `ours`."""
    carriers = []
    for ref, obj in sorted(objects.items(), key=lambda item: str(item[0])):
        for where, said in _annotations(obj):
            stack = said.get(kube_names.ANNOTATION_STACK)
            cluster = said.get(kube_names.ANNOTATION_CLUSTER)
            if stack is None and cluster is None:
                continue
            carriers.append(ref)
            if stack != ours.stack or cluster != ours.cluster_id:
                theirs = f"stack {_shown(stack)} (cluster {_shown(cluster)})"
                raise OtherCluster(
                    f"the cluster at {server} belongs to {theirs} by the {where}annotations of {ref}, not to "
                    f"{ours.describe()}: nothing checked; choose the right --kubeconfig/--context or --stack"
                )
    if carriers:
        return None
    return (
        f"cannot confirm that the cluster at {server} is {ours.describe()}: none of gpushare's objects there "
        f"carries {kube_names.ANNOTATION_STACK} (not applied yet, applied by an older gpushare, or not "
        "readable)"
    )
