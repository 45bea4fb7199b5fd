"""Which pods on a GPU node are GPU memory exporters, and on which port they serve `/metrics`.

Recognised by the names, labels and images their installers give them, in any namespace: the GPU
Operator's `app: nvidia-dcgm-exporter` (port 9400), NVIDIA's dcgm-exporter chart's
`app.kubernetes.io/name: dcgm-exporter`, utkuozdemir/nvidia_gpu_exporter's image (port 9835), TKE's
`kube-system` DaemonSets `nvidia-gpu-exporter` and `elastic-gpu-exporter` (hostNetwork, port 5678); or
as the user names them (`--exporter NAMESPACE/NAME[:PORT]`, NAME a DaemonSet or a pod). What a page holds
is recognised by its metric names (`series`), not by what the pod looked like.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare.errors import GpushareError
from gpushare.verify.memory_series import DCGM, NVIDIA_SMI, TKE

NAMED = "named exporter"
TKE_NAMESPACE = "kube-system"
TKE_DAEMONSETS = ("nvidia-gpu-exporter", "elastic-gpu-exporter")
DEFAULT_PORTS = {DCGM: 9400, NVIDIA_SMI: 9835, TKE: 5678}
# Container port names the exporters' manifests give their metrics port.
_PORT_NAMES = ("metrics", "gpu-metrics", "http", "http-metrics")
_LABELS: tuple[tuple[str, str, str], ...] = (
    ("app", "nvidia-dcgm-exporter", DCGM),
    ("app.kubernetes.io/name", "dcgm-exporter", DCGM),
)
_IMAGES = (("dcgm-exporter", DCGM), ("nvidia_gpu_exporter", NVIDIA_SMI))
_NAMED = re.compile(
    r"^(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?P<name>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)(:(?P<port>[0-9]{1,5}))?$"
)


@dataclass(frozen=True)
class NamedExporter:
    namespace: str
    name: str
    port: int | None = None

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" + (f":{self.port}" if self.port else "")


def parse_named(value: str) -> NamedExporter:
    """`--exporter NAMESPACE/NAME[:PORT]`."""
    match = _NAMED.match(value)
    port = int(match["port"]) if match and match["port"] else None
    if match is None or (port is not None and not 0 < port < 65536):
        raise GpushareError(
            f"--exporter {value!r}: expected NAMESPACE/NAME or NAMESPACE/NAME:PORT (NAME a DaemonSet or a pod)"
        )
    return NamedExporter(match["ns"], match["name"], port)


@dataclass(frozen=True)
class ExporterPod:
    namespace: str
    name: str
    node: str
    port: int
    kind: str

    def __str__(self) -> str:
        return f"pod/{self.namespace}/{self.name}"


def _meta(pod: Mapping[str, Any], key: str) -> Any:
    return (pod.get("metadata") or {}).get(key)


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("containers") or [])


def _owners(pod: Mapping[str, Any]) -> set[str]:
    return {str(o.get("name")) for o in _meta(pod, "ownerReferences") or [] if o.get("kind") == "DaemonSet"}


def _kind(pod: Mapping[str, Any], named: Sequence[NamedExporter]) -> tuple[str, int | None] | None:
    namespace, name = _meta(pod, "namespace"), _meta(pod, "name")
    for wanted in named:
        if wanted.namespace == namespace and (wanted.name == name or wanted.name in _owners(pod)):
            return NAMED, wanted.port
    images = " ".join(str(c.get("image") or "") for c in _containers(pod))
    for fragment, kind in _IMAGES:
        if fragment in images:
            return kind, None
    labels = _meta(pod, "labels") or {}
    for key, value, kind in _LABELS:
        if labels.get(key) == value:
            return kind, None
    if namespace == TKE_NAMESPACE and _owners(pod) & set(TKE_DAEMONSETS):
        return TKE, None
    return None


def _port(pod: Mapping[str, Any], kind: str) -> int | None:
    ports = [
        p for c in _containers(pod) for p in c.get("ports") or [] if isinstance(p.get("containerPort"), int)
    ]
    for name in _PORT_NAMES:
        for port in ports:
            if port.get("name") == name:
                return int(port["containerPort"])
    if kind in DEFAULT_PORTS:
        return DEFAULT_PORTS[kind]
    return int(ports[0]["containerPort"]) if ports else None


def exporter_pod(pod: Mapping[str, Any], named: Sequence[NamedExporter] = ()) -> ExporterPod | None:
    """The exporter a running pod is, or None (not an exporter, not running, or no port to scrape)."""
    status = pod.get("status") or {}
    node = (pod.get("spec") or {}).get("nodeName")
    if status.get("phase") != "Running" or _meta(pod, "deletionTimestamp") or not node:
        return None
    found = _kind(pod, named)
    if found is None:
        return None
    kind, port = found
    port = port or _port(pod, kind)
    if port is None:
        return None
    return ExporterPod(str(_meta(pod, "namespace")), str(_meta(pod, "name")), str(node), port, kind)
