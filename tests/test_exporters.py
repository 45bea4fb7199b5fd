"""gpushare.verify.memory_exporters on its own: the port an exporter pod is scraped on when it declares none.

Each exporter serves on its documented default address when the pod names no port (a DaemonSet written by
hand, or a hostNetwork one that leaves `ports` out): dcgm-exporter `:9400` (its `--address` default, the
GPU Operator's `metrics` port), utkuozdemir/nvidia_gpu_exporter `:9835` (its `--web.listen-address`
default), TKE's nvidia-gpu-exporter 5678 (Tencent Cloud's docs). The pods come from fake_cluster/gpu_pages.py
(where each installer's pod came from is said there), with the container's `ports` removed.
"""

from __future__ import annotations

import pytest

from fake_cluster.gpu_pages import L20_NODE, exporter_pod
from gpushare.verify.memory_exporters import ExporterPod
from gpushare.verify.memory_exporters import exporter_pod as recognise


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("dcgm", ExporterPod("gpu-operator", "nvidia-dcgm-exporter-a", L20_NODE, 9400, "dcgm-exporter")),
        (
            "nvidia-smi",
            ExporterPod("monitoring", "nvidia-gpu-exporter-a", L20_NODE, 9835, "nvidia_gpu_exporter"),
        ),
        ("tke", ExporterPod("kube-system", "nvidia-gpu-exporter-a", L20_NODE, 5678, "tke-gpu-exporter")),
    ],
)
def test_a_pod_declaring_no_port_is_scraped_on_the_exporters_default(
    kind: str, expected: ExporterPod
) -> None:
    pod, _ = exporter_pod(kind, L20_NODE, "a")
    del pod["spec"]["containers"][0]["ports"]
    assert recognise(pod) == expected


def test_a_dcgm_exporter_from_a_mirrored_image_is_recognised_by_its_label() -> None:
    # A registry mirror renames the image (no "dcgm-exporter" in it); the GPU Operator's pod label
    # app=nvidia-dcgm-exporter still says what it is, and its `metrics` port is used.
    pod, _ = exporter_pod("dcgm", L20_NODE, "a")
    pod["spec"]["containers"][0]["image"] = "mirror.ccs.tencentyun.com/gpu/exporter:4.5.3-4.8.2"
    assert recognise(pod) == ExporterPod(
        "gpu-operator", "nvidia-dcgm-exporter-a", L20_NODE, 9400, "dcgm-exporter"
    )
    pod["metadata"]["labels"] = {"app": "something-else"}
    assert recognise(pod) is None
