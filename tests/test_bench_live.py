"""bench/cluster.py, bench/fleet.py, bench/baselines.py, bench/live.py: the synthetic clusters and fleets
`verify` and `advise --fleet` are timed on, the baselines, the results keys and the report's rows.
No timing is asserted anywhere here."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_DIR
from test_verify import kubeconfig, server  # one fake API server per module, and its kubeconfig

from bench import baselines, cluster, fleet, live, report, run
from bench.measure import Series
from bench.worker import Sample
from fake_cluster.apiserver import FakeApiServer
from gpushare.advise.fleet import load_fleet
from gpushare.cli import main as cli_main

__all__ = ["kubeconfig", "server"]  # fixtures used by name below


@pytest.fixture(scope="module")
def prod_render() -> cluster.StackRender:
    return cluster.render(PROJECT_DIR)


# --------------------------------------------------------------------------------------------------
# Clusters


@pytest.mark.parametrize(
    ("gpu_nodes", "l20", "t4", "nodes", "pods"),
    [
        # 2: one per pool; nodes 2 + 3 x 2 = 8 (the seed's cluster); pods 3 x 2 + 8 = 14.
        (2, 1, 1, 8, 14),
        # 3: the odd one goes to L20; nodes 3 + 9 = 12; pods 9 + 12 = 21.
        (3, 2, 1, 12, 21),
        # 1000: nodes 1000 + 3000 = 4000; pods 3000 + 4000 = 7000.
        (1000, 500, 500, 4000, 7000),
    ],
)
def test_cluster_shape_arithmetic(gpu_nodes: int, l20: int, t4: int, nodes: int, pods: int) -> None:
    shape = cluster.ClusterShape(gpu_nodes)
    assert (shape.l20_nodes, shape.t4_nodes, shape.nodes, shape.pods, shape.daemonsets) == (
        l20,
        t4,
        nodes,
        pods,
        3,
    )
    assert shape.to_json() == {"gpuNodes": gpu_nodes, "nodes": nodes, "pods": pods, "daemonsets": 3}


@pytest.mark.parametrize("gpu_nodes", [0, 1])
def test_a_cluster_needs_a_node_in_each_pool(gpu_nodes: int) -> None:
    with pytest.raises(ValueError, match="at least 2 GPU nodes"):
        cluster.ClusterShape(gpu_nodes)


def test_synthetic_cluster_holds_what_the_shape_says(prod_render: cluster.StackRender) -> None:
    objects = cluster.synthetic_cluster(prod_render, cluster.ClusterShape(3))
    # 12 nodes, 21 pods; the prod render's ConfigMap and L20 DaemonSet, TKE's, kube-proxy; the workload;
    # an exporter page per GPU node.
    assert Counter(o["kind"] for o in objects) == {
        "Node": 12,
        "Pod": 21,
        "test/ExporterPage": 3,
        "DaemonSet": 3,
        "ConfigMap": 1,
        "Deployment": 1,
        "ReplicaSet": 1,
    }
    nodes = [o for o in objects if o["kind"] == "Node"]
    slots = Counter(n["status"]["allocatable"].get("nvidia.com/gpu") for n in nodes)
    assert slots == {"8": 2, "3": 1, None: 9}  # the seed's L20 8 and T4 3 slots
    assert len({n["metadata"]["name"] for n in nodes}) == 12
    scheduled = {
        o["metadata"]["name"]: o["status"]["desiredNumberScheduled"]
        for o in objects
        if o["kind"] == "DaemonSet"
    }
    assert scheduled == {
        "nvidia-device-plugin-daemonset-l20": 2,
        "nvidia-device-plugin-daemonset": 1,
        "kube-proxy": 12,
    }
    on_nodes = Counter(o["metadata"]["ownerReferences"][0]["name"] for o in objects if o["kind"] == "Pod")
    assert on_nodes == {
        "nvidia-device-plugin-daemonset-l20": 2,
        "nvidia-device-plugin-daemonset": 1,
        "kube-proxy": 12,
        "nlp-infer-7d4b9c": 3,
        "nvidia-gpu-exporter": 3,
    }
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert (deployment["spec"]["replicas"], deployment["status"]["readyReplicas"]) == (3, 3)


def test_verify_finds_the_synthetic_cluster_conforming(
    prod_render: cluster.StackRender, server: FakeApiServer, kubeconfig: Path
) -> None:
    server.load(cluster.synthetic_cluster(prod_render, cluster.ClusterShape(3)))
    out = io.StringIO()
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json", "--dir", str(PROJECT_DIR)]
    code = cli_main.main(args, out=out)
    found = json.loads(out.getvalue())
    # Memory budget included: each GPU's exporter shows its one pod's measurement or less.
    assert (code, found["ok"], found["findings"]) == (0, True, [])
    assert [(p["name"], [n["allocatable"] for n in p["nodes"]]) for p in found["pools"]] == [
        ("l20", [8, 8]),
        ("t4", [3]),
    ]
    assert server.writes == []


def test_list_baseline_reads_every_node_pod_and_daemonset(
    prod_render: cluster.StackRender, server: FakeApiServer, kubeconfig: Path
) -> None:
    server.load(cluster.synthetic_cluster(prod_render, cluster.ClusterShape(2)))
    assert baselines.list_objects(kubeconfig) == {"nodes": 8, "pods": 14, "daemonsets": 3}
    assert sorted(path.split("?")[0] for _, path in server.requests) == [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/apis/apps/v1/daemonsets",
    ]


# --------------------------------------------------------------------------------------------------
# Fleets


def test_fleet_document_rotates_measurements_replicas_and_isolation() -> None:
    document = fleet.fleet_document(4, measured_at="2026-11-02")
    # measuredMiB = 2000 + 700 x ((7 i) mod 11): 0, 7, 3, 10 -> 2000, 6900, 4100, 9000;
    # replicas = 1 + (5 i) mod 12: 1, 6, 11, 4; isolation none, mig, shared, none.
    assert document["services"] == [
        {"name": "svc-0000", "measuredMiB": 2000, "measuredAt": "2026-11-02", "replicas": 1},
        {
            "name": "svc-0001",
            "measuredMiB": 6900,
            "measuredAt": "2026-11-02",
            "replicas": 6,
            "isolation": "mig",
        },
        {
            "name": "svc-0002",
            "measuredMiB": 4100,
            "measuredAt": "2026-11-02",
            "replicas": 11,
            "isolation": "shared",
        },
        {"name": "svc-0003", "measuredMiB": 9000, "measuredAt": "2026-11-02", "replicas": 4},
    ]
    assert document["candidates"] == [
        "PNV5b.8XLARGE96",
        "GN7.2XLARGE32",
        {"gpu": "H20", "instanceType": "PNV6.8XLARGE128", "gpusPerNode": 1},
    ]
    with pytest.raises(ValueError, match="at least one service"):
        fleet.fleet_document(0)


def test_written_fleet_loads_and_the_baseline_answers_each_service_and_candidate(tmp_path: Path) -> None:
    path = fleet.write_fleet(tmp_path, 5)
    loaded = load_fleet(path)
    assert (len(loaded.services), len(loaded.candidates), loaded.ceiling) == (5, 3, 0.9)
    # 5 services x 3 candidates; 9000 MiB at most fits a T4's 15360 x 0.9 = 13824, so none is refused.
    assert baselines.single_answers(path) == {"answers": 15, "refusals": 0}


# --------------------------------------------------------------------------------------------------
# Results and report


def _timed(kind: str, label: str, *seconds: float) -> Series:
    return Series(
        kind, label, [Sample(kind=kind, stack=label, seconds=s, cpu_seconds=s / 2) for s in seconds]
    )


def _measured() -> live.LiveRun:
    measured = live.LiveRun(reps=3, cluster_sizes=(10, 100), fleet_sizes=(10, 50, 100))
    for size, verify_s, list_s in ((10, 3.0, 2.0), (100, 6.0, 4.0)):
        measured.shapes[size] = cluster.ClusterShape(size)
        measured.verify[size] = {
            "verify": _timed("verify", f"verify {size}", verify_s, verify_s + 1, verify_s - 1),
            "list": _timed("list", f"verify {size}", list_s),
        }
    for size, fleet_s, singles_s in ((10, 1.0, 2.0), (50, 1.5, 4.0), (100, 2.0, 8.0)):
        measured.fleet[size] = {
            "fleet": _timed("fleet", f"fleet {size}", fleet_s),
            "singles": _timed("singles", f"fleet {size}", singles_s),
        }
    return measured


def test_results_keys_ratios_and_growth() -> None:
    data = live.results_json(_measured())
    json.dumps(data)
    verified = data["verify"]
    assert verified["stack"] == "prod" and verified["repetitions"] == 3
    ten = verified["sizes"]["10"]
    assert ten["shape"] == {"gpuNodes": 10, "nodes": 40, "pods": 70, "daemonsets": 3}
    # Medians: verify of (3, 4, 2) = 3.0 against list 2.0 -> 1.5; CPU is half of each sample.
    assert ten["ratio"] == 1.5
    assert ten["verify"]["median"] == {"seconds": 3.0, "cpuSeconds": 1.5}
    assert ten["verify"]["samples"] == [
        {"seconds": 3.0, "cpuSeconds": 1.5},
        {"seconds": 4.0, "cpuSeconds": 2.0},
        {"seconds": 2.0, "cpuSeconds": 1.0},
    ]
    # 6.0 / 3.0 and 4.0 / 2.0.
    assert verified["growth"] == {"verify": {"100/10": 2.0}, "list": {"100/10": 2.0}}
    planned = data["fleet"]
    assert planned["sizes"]["50"]["answers"] == 150 and planned["sizes"]["50"]["ratio"] == 1.5 / 4.0
    # Only 100 has its tenth (10) measured: 2.0 / 1.0 and 8.0 / 2.0; 50's tenth (5) did not run.
    assert planned["growth"] == {"fleet": {"100/10": 2.0}, "singles": {"100/10": 4.0}}
    assert live.results_json(live.LiveRun(reps=1, cluster_sizes=(), fleet_sizes=())) == {}


def test_report_rows_for_verify_and_fleet() -> None:
    lines = report.live_lines(live.results_json(_measured()))
    rows = [line.split() for line in lines]
    # GPU nodes, nodes, pods, DaemonSets, verify s, list s, ratio, verify CPU s, list CPU s.
    assert ["10", "40", "70", "3", "3.00", "2.00", "1.50x", "1.50", "1.00"] in rows
    assert ["100", "400", "700", "3", "6.00", "4.00", "1.50x", "3.00", "2.00"] in rows
    # services, answers, fleet s, singles s, ratio, fleet CPU s, singles CPU s.
    assert ["100", "300", "2.00", "8.00", "0.25x", "1.00", "4.00"] in rows
    assert (
        "  Growth of wall time (10 = linear for 10x the GPU nodes): verify 100/10: 2.0x, list 100/10: 2.0x"
        in lines
    )
    assert report.live_lines({}) == []


def test_a_live_only_run_reports_without_the_offline_sections() -> None:
    measured = run.Run(reps=1, scaling_reps=1, sizes=(), modes=())
    measured.live = _measured()
    data = run.results_json(measured)
    assert (data["real"], data["scaling"], sorted(data["verify"]["sizes"])) == ({}, {}, ["10", "100"])
    text = report.table(data)
    assert "Render against the floor" not in text
    assert "verify --stack prod against listing the same objects" in text


def test_parser_live_options() -> None:
    parser = run.build_parser()
    args = parser.parse_args(["--live-only", "--cluster-sizes", "100,10", "--fleet-sizes", "5"])
    assert (args.live_only, args.cluster_sizes, args.fleet_sizes) == (True, (10, 100), (5,))
    with pytest.raises(SystemExit):
        parser.parse_args(["--live-only", "--skip-live"])


@pytest.mark.e2e
def test_live_only_run_writes_both_keys(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    command = [sys.executable, "-m", "bench", "--live-only", "--live-reps", "1", "--results", str(results)]
    completed = subprocess.run(
        [*command, "--cluster-sizes", "2", "--fleet-sizes", "1,10", "--plot", str(tmp_path / "p.png")],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    data: dict[str, Any] = json.loads(results.read_text())
    assert sorted(data["verify"]["sizes"]) == ["2"] and sorted(data["fleet"]["sizes"]) == ["1", "10"]
    assert [data["verify"]["sizes"]["2"][kind]["failed"] for kind in live.VERIFY_KINDS] == [0, 0]
    assert list(data["fleet"]["growth"]["fleet"]) == ["10/1"]
