"""gpushare.verify.memory_budget on its own: the memory per slot of dcgm-exporter's per-pod series against
the prod stack's L20 measurement, without the fake API server (tests/test_memory_budget.py runs it
through `verify`).

By hand: L20 46068 MiB, measured 4621 MiB, ceiling 0.9 -> 0.9 x 46068 = 41461.2 MiB, 8 replicas.
- a pod on two slots using 11001 MiB: 11001 / 2 = 5500.5 MiB per slot > 4621; rounded up to 5501,
  floor(41461.2 / 5501) = floor(7.54) = 7 replicas;
- a pod on one slot using 5939 MiB: floor(41461.2 / 5939) = floor(6.98) = 6 replicas;
- a pod on one slot using exactly 4621 MiB: no more than measured, no finding.
Pages: fake_cluster/gpu_pages.py's dcgm-exporter 4.5.3-4.8.2 page (per-pod `vgpu` series beside the GPU's own).
"""

from __future__ import annotations

from conftest import PROJECT_DIR

from fake_cluster.gpu_pages import L20_NODE, L20_UUID, dcgm_page, seed_gpus
from gpushare import kube_names
from gpushare.stack.loading import load_stack_file
from gpushare.verify.expectations import expected_cluster
from gpushare.verify.memory_budget import budget_findings
from gpushare.verify.memory_observation import MemoryObservation
from gpushare.verify.memory_series import by_node, page_samples, readings

L20_GPU = f"gpu/{L20_NODE}/{L20_UUID.removeprefix('GPU-')}"
Pod = tuple[str, str, str, float, tuple[int, ...]]


def l20_findings(*pods: Pod) -> list[tuple[str, str, str]]:
    expected = expected_cluster(load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod"))
    nodes = [{"metadata": {"name": L20_NODE, "labels": {kube_names.LABEL_POOL: "l20"}}}]
    used = sum(pod[3] for pod in pods)
    page = dcgm_page(seed_gpus(l20_used=used, pods=pods))
    found = by_node(readings(page_samples(page), lambda labels: labels["Hostname"]))
    slots = sum(len(pod[4]) for pod in pods)
    observation = MemoryObservation("the exporters", found, {L20_NODE: {"nvidia.com/gpu": slots}})
    return [(f.severity, f.object, f.message) for f in budget_findings(expected, nodes, observation)]  # type: ignore[arg-type]


def test_a_pod_on_two_slots_is_read_per_slot() -> None:
    assert l20_findings(
        ("nlp", "nlp-small", "uid-s", 4000.0, (0,)), ("nlp", "nlp-wide", "uid-w", 11001.0, (1, 2))
    ) == [
        (
            "warning",
            L20_GPU,
            "pool l20: 5500.5 MiB observed per allocated slot (pod nlp/nlp-wide uses 11001 MiB over its 2 slots, "
            "dcgm-exporter), more than the 4621 MiB measured: the workload outgrew the measurement; `tune` would "
            "give 7 replicas, the plan has 8 (`gpushare measure`, then `pulumi preview`)",
        )
    ]


def test_a_pod_on_one_slot_is_not_said_to_hold_slots() -> None:
    assert l20_findings(("nlp", "nlp-big", "uid-b", 5939.0, (0,))) == [
        (
            "warning",
            L20_GPU,
            "pool l20: 5939 MiB observed per allocated slot (pod nlp/nlp-big uses 5939 MiB, dcgm-exporter), "
            "more than the 4621 MiB measured: the workload outgrew the measurement; `tune` would give 6 "
            "replicas, the plan has 8 (`gpushare measure`, then `pulumi preview`)",
        )
    ]


def test_exactly_the_measurement_per_slot_is_no_finding() -> None:
    assert (
        l20_findings(("nlp", "nlp-a", "uid-a", 4621.0, (0,)), ("nlp", "nlp-b", "uid-b", 3000.0, (1,))) == []
    )
