"""gpushare.verify.memory_peaks on its own: when a GPU's memory is one pod's peak, for the prod stack's L20
pool (one L20 per node, measured 4621 MiB, 8 replicas), without the fake API server
(tests/test_measure.py runs it through `measure`).

A whole-GPU reading is one pod's memory only while each GPU has one slot: the node advertises no more
`nvidia.com/gpu` than it has GPUs (1 here). By hand: 5939 MiB -> floor(0.9 x 46068 / 5939) =
floor(6.98) = 6 replicas. Advertising 8 slots with two pods holding them, the GPU's memory is theirs
together and dcgm-exporter (without KUBERNETES_VIRTUAL_GPUS) gives no per-pod series: refused.
"""

from __future__ import annotations

from conftest import PROJECT_DIR

from fake_cluster.gpu_pages import L20_NODE, dcgm_page, seed_gpus
from gpushare import kube_names
from gpushare.plan import build_plan
from gpushare.stack.loading import load_stack_file
from gpushare.verify.memory_observation import GpuPods, LiveMemory, MemoryObservation
from gpushare.verify.memory_peaks import Candidate, PoolPeak, pool_peaks
from gpushare.verify.memory_series import by_node, page_samples, readings


def l20_peak(advertised: int, holders: dict[str, dict[str, int]]) -> PoolPeak:
    plan = build_plan(load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod"))
    node = {
        "metadata": {"name": L20_NODE, "labels": {kube_names.LABEL_POOL: "l20"}},
        "status": {"allocatable": {"nvidia.com/gpu": str(advertised)}},
    }
    page = dcgm_page(seed_gpus(l20_used=5939)[:1])
    found = by_node(readings(page_samples(page), lambda labels: labels["Hostname"]))
    live = LiveMemory(MemoryObservation("the exporters", found), {L20_NODE: GpuPods(holders)}, {})
    (l20,) = [peak for peak in pool_peaks(plan, [node], live) if peak.pool == "l20"]
    return l20


def test_one_slot_per_gpu_makes_the_gpus_memory_the_pods_peak() -> None:
    how = f"one pod per GPU on node {L20_NODE}"
    assert l20_peak(1, {"nlp/nlp-infer-0": {"nvidia.com/gpu": 1}}) == PoolPeak(
        "l20", "L20", 4621, "8", Candidate(L20_NODE, 5939, how), "6", how, True
    )


def test_two_pods_sharing_the_gpu_without_per_pod_series_are_refused() -> None:
    holders = {"nlp/nlp-infer-0": {"nvidia.com/gpu": 1}, "nlp/nlp-infer-1": {"nvidia.com/gpu": 1}}
    assert l20_peak(8, holders) == PoolPeak(
        "l20",
        "L20",
        4621,
        "8",
        None,
        None,
        f"node {L20_NODE}: 2 pods hold 2 slots of its GPUs (8 advertised) and dcgm-exporter gives no per-pod "
        "series (dcgm-exporter does with KUBERNETES_VIRTUAL_GPUS=true); measure while the GPUs are exclusive, "
        "or enable per-pod series",
        False,
    )


def test_a_qgpu_pool_is_not_measured_and_says_why_in_one_line() -> None:
    """Pulumi.qgpu.yaml's L20 qGPU pool: the reference names TKE's elastic-gpu-exporter (port 5678) but no
    series of it, so measure reads nothing there and says so; the pool keeps its measurement."""
    plan = build_plan(load_stack_file(PROJECT_DIR / "Pulumi.qgpu.yaml", "qgpu"))
    node = {
        "metadata": {"name": L20_NODE, "labels": {kube_names.LABEL_POOL: "l20-qgpu"}},
        "status": {"allocatable": {"tke.cloud.tencent.com/qgpu-memory": "44"}},
    }
    live = LiveMemory(MemoryObservation("the exporters", {}), {L20_NODE: GpuPods({})}, {})
    (peak,) = [p for p in pool_peaks(plan, [node], live) if p.pool == "l20-qgpu"]
    assert peak == PoolPeak(
        "l20-qgpu",
        "L20",
        4621,
        "7",  # the plan's slices a card: ceil(4621 / 0.9) MiB -> 6 GiB, floor(44 / 6) = 7
        None,
        None,
        "qGPU pool: TKE's elastic-gpu-exporter (port 5678) serves its memory, but the names of its series are "
        "not published, so gpushare does not read it: run `nvidia-smi --query-compute-apps` on the node (it "
        "does not work inside a qGPU pod) and set sharing.measuredMiB",
        False,
    )
