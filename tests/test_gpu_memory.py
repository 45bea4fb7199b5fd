"""The gpu_memory wing's modules on their own: page parsing, exporter pods, the budget rule, stack edits.

Numbers by hand: H20 MIG 1g.12gb is 11264 MiB (catalog), ceiling 0.9 -> 10137.6 MiB; 1g.24gb 22138 MiB ->
19924.2 MiB. L20 46068 MiB -> 41461.2 MiB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from fake_cluster.gpu_pages import (
    L20_NODE,
    L20_UUID,
    Gpu,
    dcgm_page,
    exporter_pod,
    mig_gpus,
    nvidia_smi_page,
    seed_gpus,
)
from gpushare import kube_names
from gpushare.errors import GpushareError
from gpushare.stack.edit import NewMeasurement, edit_measurements, write_measurements
from gpushare.stack.loading import load_stack_file
from gpushare.verify.expectations import expected_cluster
from gpushare.verify.memory_budget import budget_findings, replicas_for
from gpushare.verify.memory_exporters import NamedExporter, parse_named
from gpushare.verify.memory_exporters import exporter_pod as recognise
from gpushare.verify.memory_observation import MemoryObservation
from gpushare.verify.memory_series import (
    DCGM,
    NVIDIA_SMI,
    PageError,
    Unit,
    by_node,
    page_samples,
    readings,
    vector_samples,
)

H20_NODE = "10.0.1.13"


def on(node: str) -> object:
    return lambda _labels: node


# --------------------------------------------------------------------------------------------------
# series


def test_dcgm_page_gives_one_unit_per_gpu_in_mib() -> None:
    (found,) = readings(page_samples(dcgm_page(seed_gpus(l20_used=4608)[:1])), on(L20_NODE))  # type: ignore[arg-type]
    assert found.exporter == DCGM
    assert found.used_mib == {Unit(L20_NODE, L20_UUID.removeprefix("GPU-").lower()): 4608.0}
    assert found.pods == () and found.problems == ()


def test_dcgm_main_branch_spells_the_host_label_hostname() -> None:
    page = dcgm_page(seed_gpus(l20_used=1000)[:1], host_label="hostname")
    names = {"10.0.1.11": "10.0.1.11"}
    (found,) = readings(page_samples(page), lambda labels: names.get(labels.get("hostname", "")))
    assert list(found.used_mib.values()) == [1000.0]


def test_nvidia_smi_bytes_become_mib_and_the_uuid_matches_dcgms_spelling() -> None:
    (found,) = readings(page_samples(nvidia_smi_page(seed_gpus(l20_used=4608)[:1])), on(L20_NODE))  # type: ignore[arg-type]
    assert found.exporter == NVIDIA_SMI
    # 4608 MiB = 4831838208 bytes, written as 4.831838208e+09.
    assert 'nvidia_smi_memory_used_bytes{uuid="5c3a9f1e-7b2d-4e8a-9c1f-2d6b8e4a7f03"} 4.831838208e+09' in (
        nvidia_smi_page(seed_gpus(l20_used=4608)[:1])
    )
    assert found.used_mib == {Unit(L20_NODE, "5c3a9f1e-7b2d-4e8a-9c1f-2d6b8e4a7f03"): 4608.0}


def test_mig_instances_are_units_of_their_own() -> None:
    gpus = mig_gpus(H20_NODE, 1, {"1g.12gb": 2, "1g.24gb": 1}, used_mib=300)
    (found,) = readings(page_samples(dcgm_page(gpus)), on(H20_NODE))  # type: ignore[arg-type]
    uuid = gpus[0].uuid.removeprefix("GPU-")
    assert sorted(found.used_mib) == [
        Unit(H20_NODE, uuid, "1g.12gb", "7"),
        Unit(H20_NODE, uuid, "1g.12gb", "8"),
        Unit(H20_NODE, uuid, "1g.24gb", "9"),
    ]
    assert str(Unit(H20_NODE, uuid, "1g.12gb", "7")) == f"gpu/{H20_NODE}/{uuid}/mig-1g.12gb-7"


def test_a_pod_with_two_replicas_is_counted_once_with_both_slots() -> None:
    gpu = Gpu(L20_NODE, L20_UUID, "NVIDIA L20", 46068, 9000, pods=(("nlp", "wide", "uid-w", 8000.0, (3, 4)),))
    (found,) = readings(page_samples(dcgm_page([gpu])), on(L20_NODE))  # type: ignore[arg-type]
    (pod,) = found.pods
    assert (pod.pod, pod.used_mib, pod.slots, pod.per_slot_mib) == ("nlp/wide", 8000.0, 2, 4000.0)
    assert list(found.used_mib.values()) == [9000.0]  # the whole-GPU series, never the sum with pods


def test_unparseable_pages_raise_page_error() -> None:
    with pytest.raises(PageError, match="not a Prometheus text page"):
        page_samples("<html>")


def test_prometheus_vectors() -> None:
    answer = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {"card": "0"}, "value": [1, "4608"]}]},
    }
    assert [(s.name, dict(s.labels), s.value) for s in vector_samples(answer, "gpu_mem_usage")] == [
        ("gpu_mem_usage", {"card": "0"}, 4608.0)
    ]
    with pytest.raises(PageError, match="not a number"):
        vector_samples(
            {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "x"]}]},
            },
            "m",
        )
    with pytest.raises(PageError, match="did not answer with success"):
        vector_samples({"status": "error", "error": "bad_data"}, "m")


def test_a_node_read_by_two_exporters_counts_dcgm_only() -> None:
    page = dcgm_page(seed_gpus(l20_used=4608)[:1]) + nvidia_smi_page(seed_gpus(l20_used=4600)[:1])
    chosen = by_node(readings(page_samples(page), on(L20_NODE)))  # type: ignore[arg-type]
    assert chosen[L20_NODE].exporter == DCGM and list(chosen[L20_NODE].used_mib.values()) == [4608.0]


# --------------------------------------------------------------------------------------------------
# exporters


def test_exporter_pods_are_recognised_by_label_image_and_owner() -> None:
    for kind, port, exporter in (
        ("dcgm", 9400, DCGM),
        ("nvidia-smi", 9835, NVIDIA_SMI),
        ("tke", 5678, "tke-gpu-exporter"),
    ):
        pod, _ = exporter_pod(kind, L20_NODE, "a")
        found = recognise(pod)
        assert found is not None and (found.kind, found.port, found.node) == (exporter, port, L20_NODE)
    pod, _ = exporter_pod("tke", L20_NODE, "a")
    pod["metadata"]["namespace"] = "default"  # TKE's DaemonSet name outside kube-system is not TKE's
    assert recognise(pod) is None
    pod["metadata"]["namespace"] = "kube-system"
    pod["status"]["phase"] = "Pending"
    assert recognise(pod) is None


def test_named_exporters() -> None:
    assert parse_named("observability/gpu-metrics:9500") == NamedExporter(
        "observability", "gpu-metrics", 9500
    )
    assert parse_named("observability/gpu-metrics") == NamedExporter("observability", "gpu-metrics")
    for bad in ("gpu-metrics", "a/b:0", "a/b:70000", "A/b", "a/b/c"):
        with pytest.raises(GpushareError, match="expected NAMESPACE/NAME"):
            parse_named(bad)


# --------------------------------------------------------------------------------------------------
# budget: staging's time-sliced H20 MIG instances


def staging() -> tuple[object, list[dict[str, object]]]:
    stack = load_stack_file(PROJECT_DIR / "Pulumi.staging.yaml", "staging")
    expected = expected_cluster(stack)
    labels = {kube_names.LABEL_POOL: "h20"}
    nodes = [{"metadata": {"name": H20_NODE, "labels": labels}}]
    return expected, nodes


def test_a_mig_instance_above_its_ceiling_is_an_error() -> None:
    expected, nodes = staging()
    gpus = mig_gpus(H20_NODE, 4, {"1g.12gb": 6, "1g.24gb": 1}, used_mib=0)
    # The first H20's instance 7 only (the first FB_USED line naming it).
    page = dcgm_page(gpus).replace(
        f'GPU_I_PROFILE="1g.12gb",GPU_I_ID="7",Hostname="{H20_NODE}"}} 0\nDCGM_FI_DEV_FB_USED',
        f'GPU_I_PROFILE="1g.12gb",GPU_I_ID="7",Hostname="{H20_NODE}"}} 10200\nDCGM_FI_DEV_FB_USED',
        1,
    )
    assert page.count("} 10200") == 1
    found = by_node(readings(page_samples(page), on(H20_NODE)))  # type: ignore[arg-type]
    observation = MemoryObservation("the exporters", found, {H20_NODE: {}})
    findings = budget_findings(expected, nodes, observation)  # type: ignore[arg-type]
    uuid = gpus[0].uuid.removeprefix("GPU-")
    assert [(f.severity, f.object) for f in findings] == [("error", f"gpu/{H20_NODE}/{uuid}/mig-1g.12gb-7")]
    assert findings[0].message.startswith(
        "pool h20: 10200 MiB used, above the ceiling 0.9 x 11264 = 10137 MiB of this MIG 1g.12gb instance"
    )


def test_missing_mig_instances_are_named() -> None:
    expected, nodes = staging()
    gpus = mig_gpus(H20_NODE, 3, {"1g.12gb": 6, "1g.24gb": 1})  # the node has 4 H20s
    found = by_node(readings(page_samples(dcgm_page(gpus)), on(H20_NODE)))  # type: ignore[arg-type]
    findings = budget_findings(expected, nodes, MemoryObservation("the exporters", found))  # type: ignore[arg-type]
    assert [f.message for f in findings] == [
        "pool h20: dcgm-exporter reports 18 of the node's 24 MIG 1g.12gb instances; the others are not checked "
        "and the memory per slot cannot be worked out",
        "pool h20: dcgm-exporter reports 3 of the node's 4 MIG 1g.24gb instances; the others are not checked "
        "and the memory per slot cannot be worked out",
    ]


def test_replicas_for_degenerate_measurements() -> None:
    stack = load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod")
    (l20,) = expected_cluster(stack).pool("l20").plan.shared  # type: ignore[union-attr]
    assert replicas_for(l20, 5939) == 6  # floor(41461.2 / 5939)
    assert replicas_for(l20, 5938.2) == 6  # rounded up to 5939 first
    assert replicas_for(l20, 46068) == 0  # floor(0.9): sharing off
    assert replicas_for(l20, 50000) == 0  # does not fit at all
    # An idle GPU counts as the 256 MiB plausibility floor: floor(41461.2 / 256) = 161, capped at 110 a GPU.
    assert replicas_for(l20, 0) == 110
    assert replicas_for(l20, 377) == 109  # floor(41461.2 / 377) = 109.97: under the cap


# --------------------------------------------------------------------------------------------------
# stack_edit


STACK = """\
# a comment that must stay
config:
  gpushare:cluster: {id: cls-a1, vpcId: vpc-a1, subnetIds: [subnet-a1], kubernetesVersion: "1.30"}
  gpushare:pools:
    - name: l20   # the L20 pool
      gpu: L20
      instanceType: PNV5b.8XLARGE96
      nodes: {min: 1, max: 1, desired: 1}
      sharing:
        mode: time-slicing
        measuredMiB: 4621
        measuredAt: 2025-06-01
    - name: t4
      gpu: T4
      instanceType: GN7.2XLARGE32
      nodes: {min: 1, max: 1, desired: 1}
      sharing:
        mode: time-slicing
        measuredMiB: 4401
        measuredAt: '2025-06-01'
        source: 'by hand'
"""


def test_edit_keeps_styles_and_adds_missing_keys_in_place() -> None:
    updates = {
        "l20": NewMeasurement(5939, "2026-12-01", "gpushare measure"),
        "t4": NewMeasurement(4000, "2026-12-01", "gpushare measure"),
    }
    assert edit_measurements(STACK, updates, "Pulumi.x.yaml") == STACK.replace(
        "measuredMiB: 4621\n        measuredAt: 2025-06-01\n",
        "measuredMiB: 5939\n        measuredAt: 2026-12-01\n        source: gpushare measure\n",
    ).replace(
        "measuredMiB: 4401\n        measuredAt: '2025-06-01'\n        source: 'by hand'",
        "measuredMiB: 4000\n        measuredAt: '2026-12-01'\n        source: 'gpushare measure'",
    )


def test_edit_refuses_unknown_pools_and_exclusive_ones() -> None:
    with pytest.raises(GpushareError, match="no pool named h20 in the file"):
        edit_measurements(STACK, {"h20": NewMeasurement(1, "2026-12-01", "x")}, "Pulumi.x.yaml")
    exclusive = STACK.replace(
        "mode: time-slicing\n        measuredMiB: 4621\n        measuredAt: 2025-06-01\n", "mode: exclusive\n"
    )
    with pytest.raises(GpushareError, match="sharing.mode is 'exclusive'; set it to time-slicing"):
        edit_measurements(exclusive, {"l20": NewMeasurement(1, "2026-12-01", "x")}, "Pulumi.x.yaml")


def test_write_never_writes_what_the_loader_refuses(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", path)
    before = path.read_bytes()
    for bad, why in (
        (NewMeasurement(0, "2026-12-01", "x"), "measuredMiB"),
        (NewMeasurement(50000, "2026-12-01", "x"), "50000 MiB is more than L20's 46068 MiB"),
        (NewMeasurement(4608, "2999-01-01", "x"), "is in the future"),
    ):
        with pytest.raises(GpushareError, match="not written: the stack loader would refuse") as refused:
            write_measurements(path, "prod", {"l20": bad})
        assert why in str(refused.value)
        assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.prod.yaml"]  # no temporary file left


def test_a_layout_ruamel_would_change_is_not_edited() -> None:
    # A hand-aligned flow mapping: ruamel.yaml would write it back as `{min: 1, max: 1, desired: 1}`.
    odd = STACK.replace("nodes: {min: 1, max: 1, desired: 1}", "nodes: {min: 1,  max: 1,  desired: 1}", 1)
    with pytest.raises(GpushareError, match="cannot edit this file in place without changing its layout"):
        edit_measurements(odd, {"l20": NewMeasurement(1, "2026-12-01", "x")}, "Pulumi.x.yaml")


TWO_GPU_STACK = """\
config:
  gpushare:cluster: {id: cls-a1, vpcId: vpc-a1, subnetIds: [subnet-a1], kubernetesVersion: "1.30"}
  gpushare:pools:
    - name: l20x2
      gpu: L20
      instanceType: PNV5b.16XLARGE192
      gpusPerNode: 2
      nodes: {min: 1, max: 1, desired: 1}
      sharing: {mode: time-slicing, measuredMiB: 4621, measuredAt: "2025-06-01"}
    - name: t4
      gpu: T4
      instanceType: GN7.2XLARGE32
      nodes: {min: 1, max: 1, desired: 1}
      sharing: {mode: time-slicing, measuredMiB: 7000, measuredAt: "2025-06-01"}
"""


def two_gpu_budget(tmp_path: Path, l20_used: tuple[float, float], slots: int) -> list[tuple[str, str, str]]:
    path = tmp_path / "Pulumi.two.yaml"
    path.write_text(TWO_GPU_STACK)
    expected = expected_cluster(load_stack_file(path, "two"))
    nodes = [
        {"metadata": {"name": L20_NODE, "labels": {kube_names.LABEL_POOL: "l20x2"}}},
        {"metadata": {"name": "10.0.1.12", "labels": {kube_names.LABEL_POOL: "t4"}}},
    ]
    gpus = [
        Gpu(L20_NODE, f"GPU-00000000-0000-0000-0000-00000000000{i}", "NVIDIA L20", 46068, used, index=i)
        for i, used in enumerate(l20_used)
    ]
    gpus.append(Gpu("10.0.1.12", "GPU-00000000-0000-0000-0000-0000000000f4", "Tesla T4", 15360, 15000))
    found = by_node(readings(page_samples(dcgm_page(gpus)), lambda labels: labels["Hostname"]))
    allocated = {L20_NODE: {"nvidia.com/gpu": slots}, "10.0.1.12": {"nvidia.com/gpu": 1}}
    findings = budget_findings(expected, nodes, MemoryObservation("the exporters", found, allocated))  # type: ignore[arg-type]
    return [(f.severity, f.object, f.message) for f in findings]


def test_a_two_gpu_node_averages_over_both_and_errs_per_gpu(tmp_path: Path) -> None:
    # 40000 + 30000 = 70000 MiB over 14 slots = 5000 per slot > 4621; floor(41461.2 / 5000) = 8 replicas
    # (the plan: floor(41461.2 / 4621) = 8 per GPU, 16 per node). Neither GPU is above 41461.2 MiB.
    # The T4 measured at 7000 MiB gives floor(13824 / 7000) = 1 replica: not shared, so its 15000 MiB
    # is one pod's business and no memory-budget finding.
    assert two_gpu_budget(tmp_path, (40000, 30000), 14) == [
        (
            "warning",
            f"node/{L20_NODE}",
            "pool l20x2: 5000 MiB observed per allocated slot (average: 70000 MiB used over the 14 nvidia.com/gpu "
            f"slots pods hold on node {L20_NODE}, dcgm-exporter), more than the 4621 MiB measured: the workload "
            "outgrew the measurement; `tune` would give 8 replicas, the plan has 8 (`gpushare measure`, then "
            "`pulumi preview`)",
        )
    ]
    # One GPU above the ceiling: an error for that GPU only.
    assert [(s, o) for s, o, _ in two_gpu_budget(tmp_path, (42000, 1000), 14)] == [
        ("error", f"gpu/{L20_NODE}/00000000-0000-0000-0000-000000000000")
    ]
    # No pod holds a slot: no average to take, and nothing above the ceiling.
    assert two_gpu_budget(tmp_path, (1000, 1000), 0) == []
