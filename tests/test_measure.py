"""`python -m gpushare measure` against the fake API server: peaks per pool, refusals, `--write`.

Expected replicas by hand (ceiling 0.9): L20 46068 MiB -> 41461.2; T4 15360 MiB -> 13824.
4700 MiB on the L20: floor(41461.2 / 4700) = floor(8.82) = 8. 5939: floor(6.98) = 6.
4350 on the T4: floor(13824 / 4350) = floor(3.18) = 3. 4000: floor(3.46) = 3. 7000: floor(1.97) = 1.
"""

from __future__ import annotations

import copy
import difflib
import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import test_memory_budget
import test_verify
from conftest import PROJECT_DIR, write_project_file
from test_memory_budget import PROMETHEUS_PATH, prometheus_series

from fake_cluster.apiserver import FakeApiServer
from fake_cluster.gpu_pages import L20_NODE, T4_NODE, exporter_objects, gpu_pod, seed_gpus
from gpushare.cli import main as cli_main
from gpushare.cli import measure as measure_cli

Obj = dict[str, Any]
TODAY = datetime.now(UTC).date().isoformat()
# The fake API server, its kubeconfig and the seed's prod cluster without an exporter, one per module.
server = test_verify.server
kubeconfig = test_verify.kubeconfig
prod_base = test_memory_budget.prod_base


# Five scrapes, the fewest --write takes through the pod proxy; the waits between them are recorded, not slept.
SCRAPES = ("--scrapes", "5", "--interval", "10")


@pytest.fixture(autouse=True)
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(measure_cli, "_sleep", slept.append)
    return slept


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", tmp_path / "Pulumi.prod.yaml")
    write_project_file(tmp_path)
    return tmp_path


def exclusive(base: list[Obj]) -> list[Obj]:
    """Before time-slicing (the seed's start): each node advertises its one GPU, one pod on each."""
    objects = copy.deepcopy(base)
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] in (L20_NODE, T4_NODE):
            obj["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    return objects


def measure_args(project: Path, kubeconfig: Path, *extra: str) -> list[str]:
    return ["measure", "--stack", "prod", "--dir", str(project), "--kubeconfig", str(kubeconfig), *extra]


def measure(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    objects: list[Obj],
    *extra: str,
    prometheus: bool = False,
) -> tuple[int, dict[str, Any]]:
    server.load(objects)
    args = measure_args(project, kubeconfig, "--json", *extra)
    if prometheus:
        server.prometheus_series = prometheus_series(objects)
        server.pages = {}
        args += ["--prometheus", server.url + PROMETHEUS_PATH]
    out = io.StringIO()
    code = cli_main.main(args, out=out)
    assert server.writes == [], "measure sent a write request"
    text = out.getvalue()
    # Printed as every --json output is: two-space indents, one newline at the end.
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    return code, json.loads(text)


def rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (p["name"], p["measuredMiB"], p["peakMiB"], p["replicasNow"], p["replicasWithPeak"], p["refused"])
        for p in report["pools"]
    ]


def test_exclusive_gpus_give_each_pools_peak(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=4700, t4_used=4350))
    before = (project / "Pulumi.prod.yaml").read_text()
    code, report = measure(server, kubeconfig, project, objects)
    assert code == 0
    assert rows(report) == [("l20", 4621, 4700, "8", "8", False), ("t4", 4401, 4350, "3", "3", False)]
    assert report["pools"][0]["reason"] == f"one pod per GPU on node {L20_NODE}"
    assert (project / "Pulumi.prod.yaml").read_text() == before  # without --write nothing changes


def test_write_changes_only_the_measurement_keys_and_plan_shows_the_new_replicas(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=5939, t4_used=4000))
    before = (project / "Pulumi.prod.yaml").read_text()
    code, report = measure(server, kubeconfig, project, objects, "--write", "--allow-fewer-slots", *SCRAPES)
    assert (code, rows(report)) == (
        0,
        [("l20", 4621, 5939, "8", "6", False), ("t4", 4401, 4000, "3", "3", False)],
    )
    after = (project / "Pulumi.prod.yaml").read_text()
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    source = "dcgm-exporter via the pod proxy, max of 5 scrapes 10 s apart"
    # Each line keeps its style: the date its double quotes, the source its plain scalar.
    assert changed == [
        "-        measuredMiB: 4621",
        '-        measuredAt: "2025-06-01"',
        "-        source: nvidia-smi --query-compute-apps on the L20 node, NLP inference service",
        "+        measuredMiB: 5939",
        f'+        measuredAt: "{TODAY}"',
        f"+        source: gpushare measure, peak 5939 MiB (one pod per GPU on node {L20_NODE}), {source}",
        "-        measuredMiB: 4401",
        '-        measuredAt: "2025-06-01"',
        "-        source: nvidia-smi --query-compute-apps on the T4 node, NLP inference service",
        "+        measuredMiB: 4000",
        f'+        measuredAt: "{TODAY}"',
        f"+        source: gpushare measure, peak 4000 MiB (one pod per GPU on node {T4_NODE}), {source}",
    ]
    out = io.StringIO()
    assert cli_main.main(["plan", "--stack", "prod", "--dir", str(project), "--json"], out=out) == 0
    plan = json.loads(out.getvalue())
    assert [(p["name"], p["replicas"], p["slots"]) for p in plan["pools"]] == [("l20", 6, 6), ("t4", 3, 3)]


def test_shared_gpus_without_per_pod_series_are_refused(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    # The L20 time-sliced 8 ways with 6 pods and TKE's card-level exporter: one number for six pods.
    # The T4 advertises 3 slots but runs one pod holding one: its memory is that pod's.
    objects = copy.deepcopy(prod_base) + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(5)]
    objects += exporter_objects("tke", seed_gpus(l20_used=35634, t4_used=4000))
    before = (project / "Pulumi.prod.yaml").read_text()
    code, report = measure(server, kubeconfig, project, objects, "--write", *SCRAPES)
    assert (code, rows(report)) == (
        1,
        [("l20", 4621, None, "8", None, True), ("t4", 4401, 4000, "3", "3", False)],
    )
    assert report["pools"][0]["reason"] == (
        f"node {L20_NODE}: 6 pods hold 6 slots of its GPUs (8 advertised) and tke-gpu-exporter gives no "
        "per-pod series (dcgm-exporter does with KUBERNETES_VIRTUAL_GPUS=true); measure while the GPUs are "
        "exclusive, or enable per-pod series"
    )
    assert report["pools"][1]["reason"] == f"pod nlp/nlp-infer-7d4b9c-1 alone on node {T4_NODE}"
    after = (project / "Pulumi.prod.yaml").read_text()
    assert after.replace("measuredMiB: 4000", "measuredMiB: 4401").count(TODAY) == 1
    # The L20 and the fallback keep 4621; only the T4's measurement changed.
    assert before.count("measuredMiB: 4621") == after.count("measuredMiB: 4621") == 2
    assert "measuredMiB: 4401" not in after and after.count("measuredMiB: 4000") == 1


def test_per_pod_series_measure_a_shared_gpu(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    objects = copy.deepcopy(prod_base) + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(2)]
    pods = (("nlp", "nlp-infer-7d4b9c-0", "u0", 5939.0, (0,)), ("nlp", "nlp-batch-0", "u1", 4100.0, (1,)))
    pods += (("nlp", "nlp-batch-1", "u2", 4200.0, (2,)),)
    objects += exporter_objects("dcgm", seed_gpus(l20_used=14239, t4_used=4000, pods=pods))
    code, report = measure(server, kubeconfig, project, objects)
    assert rows(report)[0] == ("l20", 4621, 5939, "8", "6", False)
    assert report["pools"][0]["reason"] == f"pod nlp/nlp-infer-7d4b9c-0's own series on node {L20_NODE}"
    assert code == 0


def test_prometheus_window_gives_the_peak_and_the_sample_count(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    objects = exclusive(prod_base) + exporter_objects("nvidia-smi", seed_gpus(l20_used=4700, t4_used=7000))
    code, report = measure(
        server,
        kubeconfig,
        project,
        objects,
        "--window",
        "7d",
        "--write",
        "--allow-fewer-slots",
        prometheus=True,
    )
    assert (code, rows(report)) == (
        0,
        [("l20", 4621, 4700, "8", "8", False), ("t4", 4401, 7000, "3", "1", False)],
    )
    paths = [p for _, p in server.requests]
    assert any("query=max_over_time%28nvidia_smi_memory_used_bytes%5B7d%5D%29" in p for p in paths)
    text = (project / "Pulumi.prod.yaml").read_text()
    # 7 x 24 x 60 = 10080: the stand-in's one sample a minute for a week.
    url = server.url + PROMETHEUS_PATH
    assert (
        f"source: gpushare measure, peak 4700 MiB (one pod per GPU on node {L20_NODE}), nvidia_gpu_exporter via "
        f"Prometheus at {url}, max over 7d, 10080 samples" in text
    )
    # The T4 at 7000 MiB gives 1 replica: the loader accepts the file (sharing off is a valid plan).
    out = io.StringIO()
    assert cli_main.main(["plan", "--stack", "prod", "--dir", str(project), "--json"], out=out) == 0


def test_a_peak_that_does_not_fit_the_gpu_is_refused(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    # A hostile reading above the L20's 46068 MiB: tune refuses it, so nothing the loader would refuse
    # (measuredMiB more than the GPU's memory) is ever written.
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=50000, t4_used=4000))
    before = (project / "Pulumi.prod.yaml").read_text()
    code, report = measure(server, kubeconfig, project, objects, "--write", *SCRAPES)
    assert (code, rows(report)[0]) == (1, ("l20", 4621, None, "8", None, True))
    assert report["pools"][0]["reason"] == "measured 50000 MiB does not fit L20 (46068 MiB)"
    assert (project / "Pulumi.prod.yaml").read_text() != before  # the T4 was written
    assert "measuredMiB: 4621" in (project / "Pulumi.prod.yaml").read_text()


def test_window_without_prometheus_is_a_usage_error(
    kubeconfig: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main.main(measure_args(project, kubeconfig, "--window", "7d"))
    assert code == 2
    assert capsys.readouterr().err == (
        "measure: --window needs --prometheus: an exporter page holds only the current value\n"
    )


def test_no_cluster_is_exit_2(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main.main(measure_args(project, tmp_path / "none"))
    assert code == 2
    assert capsys.readouterr().err.startswith("measure: cannot measure: cannot load the kube config")


def test_the_table_shows_peaks_refusals_and_the_new_plan(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects = copy.deepcopy(prod_base) + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(5)]
    objects += exporter_objects("tke", seed_gpus(l20_used=35634, t4_used=4000))
    server.load(objects)
    out = io.StringIO()
    assert cli_main.main(measure_args(project, kubeconfig, "--write", *SCRAPES), out=out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0] == "Peak per-pod GPU memory for stack prod, from the pod proxy"
    assert [line.split()[:6] for line in lines[2:6]] == [
        ["pool", "gpu", "measured", "MiB", "peak", "MiB"],
        ["----", "---", "------------", "--------", "------------", "---------"],
        ["l20", "L20", "4621", "-", "8", "-"],
        ["t4", "T4", "4401", "4000", "3", "3"],
    ]
    assert lines[4].endswith(
        f"REFUSED: node {L20_NODE}: 6 pods hold 6 slots of its GPUs (8 advertised) and "
        "tke-gpu-exporter gives no per-pod series (dcgm-exporter does with "
        "KUBERNETES_VIRTUAL_GPUS=true); measure while the GPUs are exclusive, or enable per-pod series"
    )
    # Then the plan of the file as written: the T4 at 4000 MiB keeps 3 replicas (floor(13824 / 4000) = 3).
    assert "Capacity plan for stack prod (Pulumi.prod.yaml)" in lines
    assert ["t4", "T4", "1", "1", "3", "3"] in [line.split()[:6] for line in lines]
    assert capsys.readouterr().err == "wrote Pulumi.prod.yaml: t4 measuredMiB 4000\n"
