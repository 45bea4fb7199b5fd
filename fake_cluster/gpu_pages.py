"""Exporter pages and exporter pods, in the formats the exporters really serve, for the memory tests.

Origins (read at these commits; written here by hand, no upstream text copied beyond the format):
- dcgm-exporter: the page template of `internal/pkg/rendermetrics/render_metrics.go` (label order gpu,
  UUID, pci_bus_id, device, modelName, MIG GPU_I_PROFILE/GPU_I_ID, host; then pod labels) and the
  counter help texts of `etc/default-counters.csv` l.45-47, at tag 4.5.3-4.8.2 (691c927), where the host
  label is `Hostname` (renamed `hostname` on main by d5e5f51, #655). Per-pod `vgpu` series next to the
  whole-GPU series: the 4.5.3-4.8.2 behaviour (#594, fb5e3dc); the older form, `vgpu` series carrying
  the GPU's value and no whole-GPU series, is the time-shared sample in PR #432's discussion. The GPU
  Operator's pod: `assets/state-dcgm-exporter` of gpu-operator v26.7.0 (label app=nvidia-dcgm-exporter,
  container port `metrics` 9400).
- utkuozdemir/nvidia_gpu_exporter: `internal/integration/testdata/linux-x86_64__nvidia-l40s__595.80__load.metrics`
  at e656cd8 (v1.14.0 line): `nvidia_smi_memory_*_bytes{uuid=...}` in bytes written by Go's %g, the
  UUID without "GPU-", the GPU's name on `nvidia_smi_gpu_info`; port 9835.
- TKE's nvidia-gpu-exporter: metric names and units from Tencent Cloud's docs (457/90912, 457/66285:
  `gpu_mem_usage` MiB, `gpu_mem_utilization_percentage`, `gpu_core_usage`; hostNetwork port 5678 in
  kube-system). Its labels are NOT documented: `card` and `node` are INFERRED from its open-source
  ancestor elastic-ai/elastic-gpu-exporter (1bdc2fd, `pkg/metrics/metrics.go`).
See /work/shared/reference/gpu-memory-metrics.md for the facts and their sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

Obj = dict[str, Any]
MIB = 1024 * 1024
# What `nvidia-smi -q` shows as reserved on a recent driver is a few hundred MiB; the exact figure does
# not matter to the checks (they read used memory), only that free + used + reserved = total.
RESERVED_MIB = 487


@dataclass(frozen=True)
class Gpu:
    node: str
    uuid: str  # "GPU-..." as NVML spells it
    model: str  # modelName, as NVML names it
    memory_mib: int
    used_mib: float
    index: int = 0
    # (namespace, pod, pod uid, used MiB, vgpu replica indexes): dcgm-exporter's per-pod series.
    pods: tuple[tuple[str, str, str, float, tuple[int, ...]], ...] = ()
    # MIG instances: (profile, GPU instance id, used MiB).
    mig: tuple[tuple[str, int, float], ...] = ()


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 64), as the Go exporters write floats: the shortest digits,
    in exponent form from 1e+06 up or below 1e-04 (4.8305799168e+10, 6.38582784e+08)."""
    digits, exponent = (
        repr(float(value)).split("e") if "e" in repr(float(value)) else (repr(float(value)), "0")
    )
    mantissa = Decimal(digits).normalize() * (Decimal(10) ** int(exponent))
    sign, numerals, power = mantissa.normalize().as_tuple()
    assert isinstance(power, int)
    exp10 = len(numerals) + power - 1
    if -4 <= exp10 < 6:
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = "".join(map(str, numerals))
    body = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{body}e{'+' if exp10 >= 0 else '-'}{abs(exp10):02d}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def dcgm_page(gpus: Sequence[Gpu], host_label: str = "Hostname", whole_gpu_series: bool = True) -> str:
    """A dcgm-exporter page: SM clock and the three framebuffer counters, per GPU or MIG instance."""
    lines = [
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).",
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge",
    ]

    def labels(gpu: Gpu, mig: tuple[str, int, float] | None = None) -> str:
        text = (
            f'gpu="{gpu.index}",UUID="{gpu.uuid}",pci_bus_id="00000000:00:{8 + gpu.index:02X}.0",'
            f'device="nvidia{gpu.index}",modelName="{gpu.model}"'
        )
        if mig:
            text += f',GPU_I_PROFILE="{mig[0]}",GPU_I_ID="{mig[1]}"'
        return text + f',{host_label}="{gpu.node}"'

    for gpu in gpus:
        lines.append(f'DCGM_FI_DEV_SM_CLOCK{{{labels(gpu)},container="",namespace="",pod=""}} 1410')
    for field, help_text in (
        ("FREE", "Framebuffer memory free (in MiB)."),
        ("USED", "Framebuffer memory used (in MiB)."),
        ("RESERVED", "Framebuffer memory reserved (in MiB)."),
    ):
        lines += [f"# HELP DCGM_FI_DEV_FB_{field} {help_text}", f"# TYPE DCGM_FI_DEV_FB_{field} gauge"]
        for gpu in gpus:
            units: list[tuple[tuple[str, int, float] | None, float]] = [(m, m[2]) for m in gpu.mig]
            units = units or [(None, gpu.used_mib)]
            for mig, used in units:
                value = {"USED": used, "RESERVED": RESERVED_MIB, "FREE": gpu.memory_mib - used - RESERVED_MIB}
                if field != "USED" or whole_gpu_series or not gpu.pods:
                    lines.append(f"DCGM_FI_DEV_FB_{field}{{{labels(gpu, mig)}}} {_number(value[field])}")
            if field != "USED":
                continue
            for namespace, pod, uid, pod_used, replicas in gpu.pods:
                # Before 4.5.3-4.8.2 a sharing pod's series carried the whole GPU's value.
                shown = pod_used if whole_gpu_series else gpu.used_mib
                for vgpu in replicas:
                    lines.append(
                        f'DCGM_FI_DEV_FB_USED{{{labels(gpu)},container="infer",namespace="{namespace}",'
                        f'pod="{pod}",pod_uid="{uid}",vgpu="{vgpu}"}} {_number(shown)}'
                    )
    return "\n".join(lines) + "\n"


def nvidia_smi_page(gpus: Sequence[Gpu]) -> str:
    """A utkuozdemir/nvidia_gpu_exporter page: gpu_info and memory in bytes, UUIDs without "GPU-"."""
    lines = [
        "# HELP nvidia_smi_gpu_info A metric with a constant '1' value labeled by gpu uuid, name, "
        "driver_model_current, driver_model_pending, vbios_version, driver_version, pci_bus_id, serial, "
        "compute_cap, pci_sub_device_id, index, cuda_version.",
        "# TYPE nvidia_smi_gpu_info gauge",
    ]
    for gpu in gpus:
        lines.append(
            f'nvidia_smi_gpu_info{{compute_cap="8.9",cuda_version="12.4",driver_version="550.90.07",'
            f'index="{gpu.index}",name="{gpu.model}",uuid="{gpu.uuid.removeprefix("GPU-")}"}} 1'
        )
    for field in ("free", "reserved", "total", "used"):
        lines += [
            f"# HELP nvidia_smi_memory_{field}_bytes memory.{field} [MiB]",
            f"# TYPE nvidia_smi_memory_{field}_bytes gauge",
        ]
        for gpu in gpus:
            mib = {
                "free": gpu.memory_mib - gpu.used_mib - RESERVED_MIB,
                "reserved": RESERVED_MIB,
                "total": gpu.memory_mib,
                "used": gpu.used_mib,
            }[field]
            # Go's strconv 'g' format, as the exporter writes floats: 4.8305799168e+10.
            lines.append(
                f'nvidia_smi_memory_{field}_bytes{{uuid="{gpu.uuid.removeprefix("GPU-")}"}} {go_float(mib * MIB)}'
            )
    return "\n".join(lines) + "\n"


def tke_page(gpus: Sequence[Gpu]) -> str:
    """TKE's nvidia-gpu-exporter: card-level metrics (labels INFERRED, see the module docstring)."""
    lines = []
    for name, help_text in (
        ("gpu_core_usage", "GPU core usage"),
        ("gpu_mem_usage", "GPU memory usage in MiB"),
        ("gpu_mem_utilization_percentage", "GPU memory utilization in percent"),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for gpu in gpus:
            value = {
                "gpu_core_usage": 35,
                "gpu_mem_usage": gpu.used_mib,
                "gpu_mem_utilization_percentage": round(100 * gpu.used_mib / gpu.memory_mib, 2),
            }[name]
            lines.append(f'{name}{{card="{gpu.index}",node="{gpu.node}"}} {_number(value)}')
    return "\n".join(lines) + "\n"


PAGES = {"dcgm": dcgm_page, "nvidia-smi": nvidia_smi_page, "tke": tke_page}


def _owner(kind: str, name: str) -> list[Obj]:
    return [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{kind}-{name}", "controller": True}
    ]


def exporter_pod(kind: str, node: str, suffix: str, pod_ip: str = "172.16.0.30") -> tuple[Obj, int]:
    """(the exporter's pod on `node`, the port it serves) as each installer creates it."""
    if kind == "dcgm":
        namespace, daemonset, port, labels = (
            "gpu-operator",
            "nvidia-dcgm-exporter",
            9400,
            {"app": "nvidia-dcgm-exporter"},
        )
        image, port_name, host_network = (
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04",
            "metrics",
            False,
        )
    elif kind == "nvidia-smi":
        namespace, daemonset, port = "monitoring", "nvidia-gpu-exporter", 9835
        labels = {
            "app.kubernetes.io/name": "nvidia-gpu-exporter",
            "app.kubernetes.io/instance": "nvidia-gpu-exporter",
        }
        image, port_name, host_network = "docker.io/utkuozdemir/nvidia_gpu_exporter:1.14.0", "http", False
    else:
        # TKE's: the image path and pod labels are not documented (UNVERIFIED); hostNetwork per its docs.
        namespace, daemonset, port, labels = (
            "kube-system",
            "nvidia-gpu-exporter",
            5678,
            {"k8s-app": "nvidia-gpu-exporter"},
        )
        image, port_name, host_network = (
            "ccr.ccs.tencentyun.com/tkeimages/nvidia-gpu-exporter:v1.0.0",
            "",
            True,
        )
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": f"{daemonset}-{suffix}",
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": _owner("DaemonSet", daemonset),
        },
        "spec": {
            "nodeName": node,
            "hostNetwork": host_network,
            "containers": [
                {
                    "name": "exporter",
                    "image": image,
                    "ports": [
                        {
                            "containerPort": port,
                            "protocol": "TCP",
                            **({"name": port_name} if port_name else {}),
                        }
                    ],
                }
            ],
        },
        "status": {"phase": "Running", "podIP": node if host_network else pod_ip},
    }
    return pod, port


def gpu_pod(
    name: str, node: str, slots: int = 1, namespace: str = "nlp", resource: str = "nvidia.com/gpu"
) -> Obj:
    """A running inference pod holding `slots` of `resource` on `node`."""
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "nlp-infer"}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "infer", "image": "nlp-infer:v2", "resources": {"limits": {resource: str(slots)}}}
            ],
        },
        "status": {"phase": "Running"},
    }


def page_object(pod: Obj, port: int, page: str | bytes) -> Obj:
    """The fake API server's stand-in for what the pod serves on `port` (`fake_cluster.apiserver.PAGE_KIND`)."""
    metadata = pod["metadata"]
    return {
        "kind": "test/ExporterPage",
        "metadata": {"namespace": metadata["namespace"], "name": f"{metadata['name']}:{port}"},
        "page": page,
    }


def exporter_objects(kind: str, gpus: Sequence[Gpu], **page_options: Any) -> list[Obj]:
    """One exporter pod per node of `gpus`, each serving its node's GPUs in `kind`'s format."""
    objects: list[Obj] = []
    for node in sorted({g.node for g in gpus}):
        last = node.rsplit(".", 1)[-1]
        pod, port = exporter_pod(kind, node, f"n{last}", pod_ip=f"172.16.1.{last}")
        on_node = [g for g in gpus if g.node == node]
        objects += [pod, page_object(pod, port, PAGES[kind](on_node, **page_options))]
    return objects


L20_NODE, T4_NODE = "10.0.1.11", "10.0.1.12"
L20_UUID = "GPU-5c3a9f1e-7b2d-4e8a-9c1f-2d6b8e4a7f03"
T4_UUID = "GPU-0e8b41c2-93d6-4a57-b1f8-6c2e9d7a5b14"


def seed_gpus(l20_used: float = 4608, t4_used: float = 4401, **l20: Any) -> list[Gpu]:
    """The seed's two GPUs (L20 46068 MiB, T4 15360 MiB as the catalog has them) and what they use."""
    return [
        Gpu(L20_NODE, L20_UUID, "NVIDIA L20", 46068, l20_used, **l20),
        Gpu(T4_NODE, T4_UUID, "Tesla T4", 15360, t4_used),
    ]


def mig_gpus(
    node: str, gpus: int, layout: dict[str, int], used_mib: float = 0, model: str = "NVIDIA H20"
) -> list[Gpu]:
    """H20s cut into `layout`, every instance using `used_mib`. GPU instance ids are illustrative (DCGM
    numbers them as the driver created them)."""
    result = []
    for index in range(gpus):
        instances = [p for p, count in sorted(layout.items()) for _ in range(count)]
        mig = tuple((profile, 7 + n, used_mib) for n, profile in enumerate(instances))
        uuid = f"GPU-9a1b7c3d-0000-4e5f-8a6b-{index:012x}"
        result.append(Gpu(node, uuid, model, 97871, used_mib * len(mig), index=index, mig=mig))
    return result
