"""`verify` against API servers that lie, loop, stall or refuse (#27): never "conforms" about what it could
not read, exit 2 when nothing can be checked, bounded in time and memory whatever the server sends.

The fake API server (fake_cluster/apiserver.py) serves the rendered prod cluster; `override` makes one kind
of request misbehave. Deadlines are shortened per test so that a bound shows in a second, not in minutes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import test_verify
from test_verify import PROJECT_DIR, Obj, checks

from fake_cluster.apiserver import FakeApiServer, Reply
from gpushare.cli import main as cli_main
from gpushare.verify import reader as cluster_reader

FORBIDDEN_BUT_NODES = tuple(
    (plural, None)
    for plural in ("pods", "events", "configmaps", "daemonsets", "replicasets", "deployments", "statefulsets")
)
BOUND_SECONDS = 10  # every refusal below comes far sooner; a hang would take minutes or forever


# test_verify's fixtures, shared: one fake API server per module, the rendered prod cluster per test.
server = test_verify.server
kubeconfig = test_verify.kubeconfig
prod_render = test_verify.prod_render
prod = test_verify.prod


def run(
    server: FakeApiServer, kubeconfig: Path, objects: list[Obj], *extra: str, forbidden: Any = ()
) -> tuple[int, str, str, float]:
    server.load(objects, forbidden)
    return run_loaded(kubeconfig, *extra)


def run_loaded(kubeconfig: Path, *extra: str) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    stderr, sys.stderr = sys.stderr, err
    try:
        code = cli_main.main(
            ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--dir", str(PROJECT_DIR), *extra],
            out=out,
        )
    finally:
        sys.stderr = stderr
    return code, out.getvalue(), err.getvalue(), time.monotonic() - started


def nodes_path(path: str) -> bool:
    return path == "/api/v1/nodes"


# --------------------------------------------------------------------------------------------------
# What could not be read is never "conforms"


def test_no_nodes_and_403_to_everything_else_cannot_be_checked(
    server: FakeApiServer, kubeconfig: Path
) -> None:
    code, out, err, _ = run(server, kubeconfig, [], forbidden=FORBIDDEN_BUT_NODES)
    # An empty cluster has no gpushare object to say whose it is: said first, then the verdict.
    assert (code, err) == (
        2,
        f"verify: cannot confirm that the cluster at {server.url} is stack prod (cluster cls-prod0001): none "
        "of gpushare's objects there carries gpushare.io/stack (not applied yet, applied by an older "
        f"gpushare, or not readable)\nverify: cannot check: no node of any pool of stack prod is in the cluster at {server.url}\n",
    )
    assert "conforms" not in out
    assert out.splitlines()[-1].startswith("0 errors, ")
    assert ": NOT CHECKED: no node of any pool of stack prod is in the cluster" in out.splitlines()[-1]


def test_only_nodes_readable_is_a_partial_verdict(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    code, out, err, _ = run(server, kubeconfig, prod, "--json", forbidden=FORBIDDEN_BUT_NODES)
    report = json.loads(out)
    # 403 on the ConfigMap and DaemonSets: whose cluster this is cannot be confirmed either, and is said.
    unconfirmed = (
        f"verify: cannot confirm that the cluster at {server.url} is stack prod (cluster cls-prod0001): none of "
        "gpushare's objects there carries gpushare.io/stack (not applied yet, applied by an older gpushare, or "
        "not readable)\n"
    )
    assert (code, err, report["ok"], report["partial"], checks(report)) == (1, unconfirmed, False, True, [])
    # Every check that needed what the server refused is named with the permission it lacked.
    assert report["notChecked"] == [
        "plugin-config-current (get configmaps in namespace kube-system)",
        "plugin-config-current (get daemonsets.apps in namespace kube-system)",
        "plugin-crashloop (get daemonsets.apps in namespace kube-system)",
        "managed-plugin-drift (get daemonsets.apps in namespace kube-system)",
        "gpu-pending-pods (list pods at cluster scope)",
        "rollout-stuck (list pods at cluster scope)",
        "gpu-pod-outside-pools (list pods at cluster scope)",
        "gpu-pending-pods from FailedScheduling events (list events at cluster scope)",
        "workload-over-slots (list deployments.apps at cluster scope)",
        "rollout-stuck-on-surge (list deployments.apps at cluster scope)",
        "workload-over-slots (list statefulsets.apps at cluster scope)",
    ]
    code, out, _, _ = run_loaded(kubeconfig)
    assert code == 1
    assert out.splitlines()[-1].startswith("0 errors, ")
    assert (
        ": PARTIAL: the cluster was only partly checked against stack prod; not checked: plugin-config-current (get configmaps in namespace kube-system), "
        in out.splitlines()[-1]
    )


# --------------------------------------------------------------------------------------------------
# Malformed data


def test_quantities_are_read_as_kubernetes_writes_them(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    l20 = next(
        o for o in prod if o["kind"] == "Node" and o["metadata"]["labels"].get("gpushare.io/pool") == "l20"
    )
    planned = l20["status"]["allocatable"]["nvidia.com/gpu"]
    # `8000m` is 8 (milli-units): still the plan.
    l20["status"]["allocatable"]["nvidia.com/gpu"] = f"{int(planned) * 1000}m"
    code, out, _, _ = run(server, kubeconfig, prod, "--json")
    assert (code, checks(json.loads(out))) == (0, [])
    # `1k` is 1000 (apimachinery's decimal suffix), not 0 and not a crash.
    l20["status"]["allocatable"]["nvidia.com/gpu"] = "1k"
    code, out, _, _ = run(server, kubeconfig, prod, "--json")
    report = json.loads(out)
    assert (code, checks(report)) == (1, ["slots-allocatable"])
    message = next(f["message"] for f in report["findings"] if f["check"] == "slots-allocatable")
    assert message.startswith(f"pool l20: allocatable nvidia.com/gpu is 1000, the plan gives {planned} ")


def test_a_gpu_pending_pod_without_a_namespace_is_malformed_data(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    test_verify.freeze_rollout(prod)  # a Deployment frozen behind a GPU-Pending pod in namespace nlp

    def pending(path: str, query: dict[str, list[str]]) -> Reply | None:
        if path != "/api/v1/pods" or query.get("fieldSelector") != ["status.phase=Pending"]:
            return None
        answer = server.answer(path, query)
        for item in answer["items"]:
            del item["metadata"]["namespace"]
        return Reply(200, answer)

    server.load(prod)
    server.override = pending
    code, _, err, _ = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list pods: pod 'nlp-infer-5f6d8b-mz2kq' has no metadata.namespace (a malformed answer)\n",
    )


# --------------------------------------------------------------------------------------------------
# Bounded pages, deadlines, Retry-After


def _node_pages(server: FakeApiServer, tokens: list[str]) -> None:
    """Nodes answered page after page, each page's `continue` the next of `tokens` (cycled)."""
    served = [0]

    def answer(path: str, query: dict[str, list[str]]) -> Reply | None:
        if not nodes_path(path):
            return None
        body = server.answer(path)
        body["metadata"]["continue"] = tokens[served[0] % len(tokens)]
        served[0] += 1
        return Reply(200, body)

    server.override = answer


@pytest.mark.parametrize("tokens", [["same"], ["a", "b", "c"]], ids=["repeated", "cycling"])
def test_a_looping_continue_token_is_refused(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], tokens: list[str]
) -> None:
    server.load(prod)
    _node_pages(server, tokens)
    code, _, err, seconds = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: the server sent the same `continue` token twice (its pages loop)\n",
    )
    assert len([r for r in server.requests if r[1].startswith("/api/v1/nodes")]) == len(tokens) + 1
    assert seconds < BOUND_SECONDS


def test_endless_pages_stop_at_the_page_bound(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_reader, "MAX_PAGES", 5)
    server.load(prod)
    _node_pages(server, [f"page-{n}" for n in range(1000)])
    code, _, err, _ = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: more than 5 pages of 500; not read further\n",
    )


def test_a_dripped_body_meets_the_request_deadline(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_reader, "REQUEST_SECONDS", 1.0)
    monkeypatch.setattr(cluster_reader, "READ_SECONDS", 0.5)
    server.load(prod)
    # One byte every 0.1 s: each read returns in time, the whole body (kilobytes) would take many minutes.
    server.override = lambda path, query: (
        Reply(200, server.answer(path), drip_seconds=0.1) if nodes_path(path) else None
    )
    code, _, err, seconds = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: no complete answer within 1 s\n",
    )
    assert seconds < BOUND_SECONDS


@pytest.mark.e2e
def test_a_server_dripping_its_headers_meets_the_hard_stop(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each byte of the status line comes within any read timeout, and no body deadline has started yet.
    monkeypatch.setattr(cluster_reader, "RUN_SECONDS", 1.0)
    monkeypatch.setattr(cluster_reader, "HARD_STOP_GRACE_SECONDS", 0.5)
    server.load(prod)
    server.override = lambda path, query: (
        Reply(200, server.answer(path), drip_seconds=0.1, drip_headers=True) if nodes_path(path) else None
    )
    code, _, err, seconds = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: no complete answers within 1.5 s; verify stopped\n",
    )
    assert seconds < BOUND_SECONDS


def test_a_request_with_under_a_second_left_is_still_read(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deadline is spent at 0 s left, not before: with 0.95 s for each whole answer, the loopback server's
    prompt answers are all read and the healthy prod cluster checks clean."""
    monkeypatch.setattr(cluster_reader, "REQUEST_SECONDS", 0.95)
    code, out, err, _ = run(server, kubeconfig, prod, "--json")
    assert (code, err, checks(json.loads(out))) == (0, "", [])


def test_the_whole_run_has_a_deadline(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_reader, "RUN_SECONDS", 0.0)
    code, _, err, _ = run(server, kubeconfig, prod)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: no answer within verify's 0 s for all its requests\n",
    )


def test_a_large_answer_is_refused_while_read(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_reader, "MAX_RESPONSE_BYTES", 1000)
    code, _, err, _ = run(server, kubeconfig, prod)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: the answer is larger than 1000 bytes\n",
    )


def _throttled(server: FakeApiServer, retry_after: str, times: int) -> None:
    left = [times]

    def answer(path: str, query: dict[str, list[str]]) -> Reply | None:
        if not nodes_path(path) or left[0] == 0:
            return None
        left[0] -= 1
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "TooManyRequests",
            "code": 429,
            "message": "too many requests",
        }
        return Reply(429, body, headers={"Retry-After": retry_after})

    server.override = answer


def test_retry_after_an_hour_is_not_slept(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    server.load(prod)
    _throttled(server, "3600", times=1)
    code, _, err, seconds = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: 429 Too Many Requests (Retry-After 3600 s; verify waits at most 5 s)\n",
    )
    assert seconds < BOUND_SECONDS


def test_a_short_retry_after_is_honoured(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    server.load(prod)
    _throttled(server, "0", times=2)  # what API Priority and Fairness answers under load, twice
    code, out, err, _ = run_loaded(kubeconfig, "--json")
    assert (code, err, checks(json.loads(out))) == (0, "", [])
    assert len([r for r in server.requests if r[1].startswith("/api/v1/nodes")]) == 3


def test_throttled_for_good_gives_up(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    server.load(prod)
    _throttled(server, "0", times=100)
    code, _, err, _ = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes failed: 429 Too Many Requests\n",
    )


# --------------------------------------------------------------------------------------------------
# The kubeconfig is read like every other input


@pytest.mark.e2e
def test_kubeconfig_that_is_not_a_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    deep = tmp_path / "deep"
    deep.write_text("clusters: " + "[" * 25_000 + "]" * 25_000 + "\n")
    cases = {
        str(tmp_path / "fifo"): "is a FIFO (named pipe), not a regular file; not read",
        "/dev/zero": "is a character device, not a regular file; not read",
        str(deep): "nested too deeply",
    }
    processes = {
        path: subprocess.Popen(
            [sys.executable, "-m", "gpushare", "verify", "--stack", "prod", "--kubeconfig", path],
            cwd=PROJECT_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in cases
    }
    for path, process in processes.items():
        _, err = process.communicate(timeout=60)
        assert (process.returncode, err) == (
            2,
            f"verify: cannot check: cannot load the kube config ({path}): {cases[path]}\n",
        ), path
