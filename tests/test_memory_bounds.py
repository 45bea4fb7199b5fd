"""The memory reads of `verify` and `measure` within their bounds (issue 34, docs/bounds.md): every answer
decoded within a depth bound (never a RecursionError), every request read whole within its deadline (a
page dripped a byte at a time meets REQUEST_SECONDS, not only each socket read's timeout), all of them
within TOTAL_SECONDS, and behind them a hard stop. The deadlines are made small here; the documented
values are 15 s per request and 90 s in all.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import test_memory_budget
from conftest import PROJECT_DIR, write_project_file
from test_memory_budget import PROMETHEUS_PATH, memory

from fake_cluster.apiserver import PAGE_KIND, FakeApiServer, Reply
from fake_cluster.gpu_pages import L20_NODE, T4_NODE, exporter_objects, seed_gpus
from gpushare.cli import main as cli_main
from gpushare.verify import memory_live as live
from gpushare.verify import reader

Obj = dict[str, Any]
server = test_memory_budget.server
kubeconfig = test_memory_budget.kubeconfig
prod_base = test_memory_budget.prod_base
# Deep enough for Python's json (RecursionError near 1000 levels) and far past MAX_JSON_DEPTH (100).
DEEP = b'{"a":' * 5000 + b"1" + b"}" * 5000


def with_tke(prod_base: list[Obj]) -> list[Obj]:
    return copy.deepcopy(prod_base) + exporter_objects("tke", seed_gpus())


def verify_json(server: FakeApiServer, kubeconfig: Path) -> tuple[int, dict[str, Any]]:
    """`verify --json` against what the server holds now (run_verify would load it again, and so drop
    the override)."""
    out = io.StringIO()
    code = cli_main.main(["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"], out=out)
    assert server.writes == []
    return code, json.loads(out.getvalue())


def page_of(server: FakeApiServer, node_suffix: str) -> bytes:
    key = next(k for k in server.pages if k[1].endswith(node_suffix))
    page = server.pages[key]
    return page if isinstance(page, bytes) else page.encode()


def test_a_page_dripped_a_byte_at_a_time_meets_the_request_deadline(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "REQUEST_SECONDS", 0.5)
    objects = with_tke(prod_base)
    server.load(objects)
    dripped = page_of(server, "n11")
    # ~400 bytes 0.02 s apart: 8 s in all, each byte well within any socket read's timeout.
    server.override = lambda path, _: (
        Reply(200, dripped, drip_seconds=0.02) if "n11:5678/proxy" in path else None
    )
    started = time.monotonic()
    code, report = verify_json(server, kubeconfig)
    assert time.monotonic() - started < 4
    assert ("warning", "pod/kube-system/nvidia-gpu-exporter-n11") in [(s, o) for s, o, _ in memory(report)]
    message = next(m for _, o, m in memory(report) if o == "pod/kube-system/nvidia-gpu-exporter-n11")
    assert message == (
        f"tke-gpu-exporter pod/kube-system/nvidia-gpu-exporter-n11 on node {L20_NODE}: no complete answer "
        "within 0.5 s"
    )
    assert code == 0


def test_a_prometheus_answer_dripped_a_byte_at_a_time_meets_the_request_deadline(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "REQUEST_SECONDS", 0.5)
    server.load(with_tke(prod_base))
    answer = b'{"status":"success","data":{"resultType":"vector","result":[]}}' * 4
    server.override = lambda path, _: (
        Reply(200, answer, drip_seconds=0.02) if path.startswith(PROMETHEUS_PATH) else None
    )
    out = io.StringIO()
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"]
    started = time.monotonic()
    code = cli_main.main([*args, "--prometheus", server.url + PROMETHEUS_PATH], out=out)
    # Three metrics, each query cut off at 0.5 s (the answer would take 5 s): well under 4 s in all.
    assert time.monotonic() - started < 4
    problems = [m for _, o, m in memory(json.loads(out.getvalue())) if o == "prometheus"]
    assert problems and all(m.endswith("no complete answer within 0.5 s") for m in problems)
    assert code == 0


def test_all_memory_reads_stop_at_the_total_deadline(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each page drips for 8 s; 0.6 s per request, 1 s for all: the second exporter gets what is left.
    monkeypatch.setattr(live, "REQUEST_SECONDS", 0.6)
    monkeypatch.setattr(live, "TOTAL_SECONDS", 1.0)
    objects = with_tke(prod_base)
    server.load(objects)
    pages = {suffix: page_of(server, suffix) for suffix in ("n11", "n12")}

    def drip(path: str, _: object) -> Reply | None:
        for suffix, page in pages.items():
            if f"{suffix}:5678/proxy" in path:
                return Reply(200, page, drip_seconds=0.02)
        return None

    server.override = drip
    started = time.monotonic()
    code, report = verify_json(server, kubeconfig)
    assert time.monotonic() - started < 4
    messages = {o: m for _, o, m in memory(report)}
    assert messages["pod/kube-system/nvidia-gpu-exporter-n11"].endswith("no complete answer within 0.6 s")
    # 1 s - 0.6 s: about 0.4 s left for the T4's exporter, then none.
    assert messages["pod/kube-system/nvidia-gpu-exporter-n12"].startswith(
        f"tke-gpu-exporter pod/kube-system/nvidia-gpu-exporter-n12 on node {T4_NODE}: no complete answer within 0.3"
    ) or messages["pod/kube-system/nvidia-gpu-exporter-n12"] == ("not read: the 1.0 s for GPU memory ran out")
    assert code == 0


def test_the_memory_reads_are_inside_verifys_hard_stop(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An exporter proxy that drips its status line and headers: no body deadline sees it; the hard stop
    # (TOTAL_SECONDS + grace after the memory reads start) ends the run.
    monkeypatch.setattr(live, "TOTAL_SECONDS", 0.5)
    monkeypatch.setattr(reader, "HARD_STOP_GRACE_SECONDS", 0.5)
    objects = with_tke(prod_base)
    server.load(objects)
    server.override = lambda path, _: (
        Reply(200, b"x" * 20, drip_seconds=0.05, drip_headers=True) if "/proxy/metrics" in path else None
    )
    started = time.monotonic()
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--dir", str(PROJECT_DIR)]
    assert cli_main.main(args, out=io.StringIO()) == 2
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("where", ["prometheus", "exporter-status", "pods"])
def test_deeply_nested_answers_are_problems_not_recursion(
    server: FakeApiServer,
    kubeconfig: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    objects = with_tke(prod_base)

    def deep(path: str, query: dict[str, list[str]]) -> Reply | None:
        if where == "prometheus" and path.startswith(PROMETHEUS_PATH.split("?")[0]):
            return Reply(200, DEEP)
        if where == "exporter-status" and "/proxy/metrics" in path:
            return Reply(503, DEEP)
        # The memory reads' per-node pod lists (spec.nodeName=<node>), not verify's workload read of every
        # scheduled pod (spec.nodeName!=), which is bounded the same way but is no memory read.
        selectors = query.get("fieldSelector", [])
        if (
            where == "pods"
            and path == "/api/v1/pods"
            and any(s.startswith("spec.nodeName=") for s in selectors)
        ):
            return Reply(200, DEEP)
        return None

    server.load(objects)
    via = "prometheus" if where == "prometheus" else "pod-proxy"
    if via == "prometheus":
        server.override = deep
        out = io.StringIO()
        args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"]
        args += ["--prometheus", server.url + PROMETHEUS_PATH]
        code = cli_main.main(args, out=out)
        report = json.loads(out.getvalue())
    else:
        server.override = deep
        out = io.StringIO()
        code = cli_main.main(
            ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"], out=out
        )
        report = json.loads(out.getvalue())
    assert code == 0
    assert "Traceback" not in capsys.readouterr().err
    assert memory(report)  # named as what could not be read


@pytest.mark.parametrize("command", ["verify", "measure"])
def test_a_deeply_nested_node_list_is_exit_2_in_one_line(
    server: FakeApiServer,
    kubeconfig: Path,
    prod_base: list[Obj],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", tmp_path / "Pulumi.prod.yaml")
    write_project_file(tmp_path)
    server.load(with_tke(prod_base))
    server.override = lambda path, _: Reply(200, DEEP) if path == "/api/v1/nodes" else None
    args = [command, "--stack", "prod", "--kubeconfig", str(kubeconfig), "--dir", str(tmp_path)]
    assert cli_main.main(args, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "list nodes" in err


def test_page_kind_is_the_fake_servers() -> None:
    assert PAGE_KIND == "test/ExporterPage"
