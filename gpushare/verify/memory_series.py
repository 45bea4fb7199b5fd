"""Exporter output to readings: the GPU memory used per GPU (or MIG instance), and per pod where known.

Pages are parsed by `prometheus_client`'s text parser, Prometheus answers are its HTTP API's JSON
vectors; both become `Sample`s, then `Readings` of one exporter. The exporters and their units:

- NVIDIA dcgm-exporter: `DCGM_FI_DEV_FB_USED` in MiB per GPU (`UUID`, or `uuid` with
  `--use-old-namespace`), per MIG instance with `GPU_I_PROFILE`/`GPU_I_ID`. With
  `KUBERNETES_VIRTUAL_GPUS=true` it adds one series per sharing pod (label `vgpu`): from 4.5.3-4.8.2 on
  next to the whole-GPU series and holding the pod's own memory, a pod with several replicas once per
  replica; before that the per-pod series carry the GPU's value and no whole-GPU series is left.
- utkuozdemir/nvidia_gpu_exporter: `nvidia_smi_memory_used_bytes` in bytes (label `uuid`, "GPU-" cut).
- TKE's nvidia-gpu-exporter: `gpu_mem_usage` in MiB. Its labels are not documented (UNVERIFIED); the
  GPU is told apart by a configurable label (default `card`, as its open-source ancestor names it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from gpushare.errors import GpushareError

MIB = 1024 * 1024
# No GPU has 2**30 MiB (1 PiB); DCGM reports a missing value as a "blank" near 2**63.
MAX_PLAUSIBLE_MIB = 2**30
DEFAULT_TKE_GPU_LABEL = "card"

DCGM = "dcgm-exporter"
NVIDIA_SMI = "nvidia_gpu_exporter"
TKE = "tke-gpu-exporter"
# The metric each exporter reports the used memory in, and its factor to MiB.
USED_METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_FB_USED": (DCGM, 1.0),
    "nvidia_smi_memory_used_bytes": (NVIDIA_SMI, 1 / MIB),
    "gpu_mem_usage": (TKE, 1.0),
}
# Where one node has several exporters, the one that can tell pods apart is read.
PREFERENCE = (DCGM, NVIDIA_SMI, TKE)

_POD_LABELS = (("exported_namespace", "exported_pod"), ("namespace", "pod"), ("pod_namespace", "pod_name"))


class PageError(GpushareError):
    """A metrics page or a Prometheus answer that cannot be read at all."""


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, order=True)
class Unit:
    """One GPU, or one MIG instance of it, on a node."""

    node: str
    gpu: str
    mig_profile: str | None = None
    mig_instance: str | None = None

    def __str__(self) -> str:
        mig = f"/mig-{self.mig_profile}-{self.mig_instance}" if self.mig_profile else ""
        return f"gpu/{self.node}/{self.gpu}{mig}"


@dataclass(frozen=True)
class PodUse:
    """One pod's memory on one unit (dcgm-exporter's per-pod series), over the replicas it holds there."""

    unit: Unit
    pod: str
    used_mib: float
    slots: int

    @property
    def per_slot_mib(self) -> float:
        return self.used_mib / max(1, self.slots)


@dataclass(frozen=True)
class Readings:
    exporter: str
    used_mib: Mapping[Unit, float] = field(default_factory=dict)
    pods: tuple[PodUse, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def per_pod(self) -> bool:
        return bool(self.pods)


def page_samples(text: str) -> list[Sample]:
    """Every sample of a Prometheus text-format page; `PageError` when the parser refuses it."""
    try:
        return [
            Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]
    except (ValueError, TypeError, IndexError, KeyError, OverflowError) as err:
        detail = " ".join(str(err).split())[:120]
        raise PageError(f"not a Prometheus text page ({detail or type(err).__name__})") from None


def vector_samples(answer: Any, metric: str) -> list[Sample]:
    """The samples of a Prometheus `/api/v1/query` answer of resultType vector (named `metric`)."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(answer, dict) or answer.get("status") != "success" or not isinstance(data, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise PageError(f"Prometheus did not answer with success ({str(error or answer)[:120]})")
    if data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise PageError(f"Prometheus answered resultType {data.get('resultType')!r}, not a vector")
    samples = []
    for item in data["result"]:
        labels = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(labels, dict) or not isinstance(value, list) or len(value) != 2:
            raise PageError("a Prometheus vector item without metric and [time, value]")
        try:
            number = float(value[1])
        except (TypeError, ValueError):
            raise PageError(f"a Prometheus value that is not a number: {str(value[1])[:40]!r}") from None
        samples.append(Sample(metric, {str(k): str(v) for k, v in labels.items()}, number))
    return samples


def _label(labels: Mapping[str, str], *names: str) -> str:
    return next((labels[n] for n in names if labels.get(n)), "")


def _describe(sample: Sample) -> str:
    shown = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))[:160]
    return f"{sample.name}{{{shown}}}"


def _pod(labels: Mapping[str, str]) -> tuple[str, str]:
    """(identity, namespace/name) of the pod a per-pod series belongs to; identity prefers `pod_uid`."""
    for namespace_label, pod_label in _POD_LABELS:
        if labels.get(pod_label):
            name = f"{labels.get(namespace_label, '')}/{labels[pod_label]}"
            return labels.get("pod_uid") or name, name
    return labels.get("pod_uid", ""), labels.get("pod_uid", "")


def _unit(sample: Sample, exporter: str, node: str, tke_gpu_label: str) -> Unit:
    labels = sample.labels
    if exporter == TKE:
        return Unit(node, _label(labels, tke_gpu_label, "gpu", "card"))
    gpu = _label(labels, "UUID", "uuid", "gpu_uuid")
    # nvidia_gpu_exporter cuts "GPU-" from the UUID; one spelling for both exporters.
    gpu = gpu.removeprefix("GPU-").lower() or _label(labels, "gpu")
    profile = _label(labels, "GPU_I_PROFILE") or None
    return Unit(node, gpu, profile, _label(labels, "GPU_I_ID") if profile else None)


def readings(
    samples: Iterable[Sample],
    node_of: Callable[[Mapping[str, str]], str | None],
    tke_gpu_label: str = DEFAULT_TKE_GPU_LABEL,
) -> list[Readings]:
    """The readings of each exporter found among `samples` (other metrics ignored). `node_of` names the
    node a series comes from (None: unknown, the series is reported as a problem)."""
    whole: dict[str, dict[Unit, float]] = defaultdict(dict)
    virtual: dict[str, dict[Unit, list[tuple[Sample, float]]]] = defaultdict(lambda: defaultdict(list))
    problems: dict[str, list[str]] = defaultdict(list)
    unnamed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for sample in samples:
        known = USED_METRICS.get(sample.name)
        if known is None:
            continue
        exporter, factor = known
        value = sample.value * factor
        if not math.isfinite(value) or value < 0 or value > MAX_PLAUSIBLE_MIB:
            problems[exporter].append(f"{_describe(sample)} is {sample.value!r}, not a memory size")
            continue
        node = node_of(sample.labels)
        if not node:
            problems[exporter].append(f"{_describe(sample)}: no node of the cluster is named in its labels")
            continue
        unit = _unit(sample, exporter, node, tke_gpu_label)
        if not unit.gpu:
            unnamed[exporter][node] += 1
        if sample.labels.get("vgpu"):
            virtual[exporter][unit].append((sample, value))
        else:
            # The same GPU twice (two scrape jobs in one Prometheus): the larger counts.
            whole[exporter][unit] = max(value, whole[exporter].get(unit, value))
    result = []
    for exporter in PREFERENCE:
        if exporter not in whole and exporter not in virtual and exporter not in problems:
            continue
        used = whole[exporter]
        for node, count in unnamed[exporter].items():
            if count > 1:
                problems[exporter].append(
                    f"node {node}: {count} series without a GPU label (looked for "
                    f"{'`' + tke_gpu_label + '`' if exporter == TKE else 'UUID'}): the GPUs cannot be told apart"
                )
                for unit in [u for u in used if u.node == node and not u.gpu]:
                    del used[unit]
        pods: list[PodUse] = []
        for unit, entries in virtual[exporter].items():
            if unit not in used:
                # dcgm-exporter before 4.5.3-4.8.2: each sharing pod's series carries the GPU's value.
                used[unit] = max(value for _, value in entries)
                continue
            by_pod: dict[str, tuple[str, float, set[str]]] = {}
            for sample, value in entries:
                identity, name = _pod(sample.labels)
                _, seen, replicas = by_pod.get(identity, (name, 0.0, set()))
                replicas.add(sample.labels["vgpu"])
                # A pod holding several replicas of the GPU appears once per replica, each with its total.
                by_pod[identity] = (name, max(seen, value), replicas)
            pods += [PodUse(unit, name, value, len(replicas)) for name, value, replicas in by_pod.values()]
        ordered = tuple(sorted(pods, key=lambda p: (p.unit, p.pod)))
        result.append(Readings(exporter, dict(used), ordered, tuple(problems[exporter])))
    return result


def by_node(all_readings: Iterable[Readings]) -> dict[str, Readings]:
    """Per node, the readings of the one exporter it is read from: the first of `PREFERENCE` with a
    series there (dcgm-exporter first: it can tell pods apart). Problems stay with their exporter."""
    chosen: dict[str, Readings] = {}
    for found in sorted(all_readings, key=lambda r: PREFERENCE.index(r.exporter)):
        for node in sorted({u.node for u in found.used_mib}):
            if node in chosen:
                continue
            chosen[node] = Readings(
                found.exporter,
                {u: v for u, v in found.used_mib.items() if u.node == node},
                tuple(p for p in found.pods if p.unit.node == node),
            )
    return chosen
