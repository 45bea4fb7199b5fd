"""`verify`'s memory-budget check against the fake API server: exporter pages through the pod proxy, or a
Prometheus stand-in through a service proxy, for the seed's prod cluster.

Expected numbers, by hand: L20 46068 MiB, measured 4621 MiB, ceiling 0.9 -> 8 replicas; the ceiling is
0.9 x 46068 = 41461.2 MiB. 8 pods x 4608 MiB = 36864 MiB: under both. 6 pods x 5939 = 35634 MiB: under
the ceiling, but 5939 > 4621 per slot, and floor(41461.2 / 5939) = floor(6.98) = 6 replicas. 42000 MiB
over 8 pods: above the ceiling; 42000 / 8 = 5250 MiB per slot, floor(41461.2 / 5250) = floor(7.90) = 7.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import test_verify
from conftest import PROJECT_DIR
from prometheus_client.parser import text_string_to_metric_families
from test_verify import prod_cluster, rendered

from fake_cluster.apiserver import PAGE_KIND, FakeApiServer, Reply
from fake_cluster.gpu_pages import (
    L20_NODE,
    L20_UUID,
    T4_NODE,
    exporter_objects,
    exporter_pod,
    gpu_pod,
    page_object,
    seed_gpus,
    tke_page,
)
from gpushare.cli import main as cli_main
from gpushare.verify import memory_live as live

Obj = dict[str, Any]
PROMETHEUS_PATH = "/api/v1/namespaces/monitoring/services/prometheus-k8s:9090/proxy"
EXPORTER_NAME = {"dcgm": "dcgm-exporter", "nvidia-smi": "nvidia_gpu_exporter", "tke": "tke-gpu-exporter"}
L20_GPU = {
    "dcgm": f"gpu/{L20_NODE}/{L20_UUID.removeprefix('GPU-')}",
    "nvidia-smi": f"gpu/{L20_NODE}/{L20_UUID.removeprefix('GPU-')}",
    "tke": f"gpu/{L20_NODE}/0",
}
# The fake API server and its kubeconfig, one per module, as test_verify starts them.
server = test_verify.server
kubeconfig = test_verify.kubeconfig
SOURCES = [(kind, via) for via in ("pod-proxy", "prometheus") for kind in ("dcgm", "nvidia-smi", "tke")]


@pytest.fixture(scope="module")
def prod_base() -> list[Obj]:
    """The seed's prod cluster after gpushare, without its exporter (each test brings its own)."""
    manifests, labels, _ = rendered(PROJECT_DIR, "prod")
    objects = prod_cluster(manifests, labels)
    return [o for o in objects if o["kind"] != PAGE_KIND and "gpu-exporter" not in o["metadata"]["name"]]


def with_l20_pods(base: list[Obj], pods: int) -> list[Obj]:
    """`pods` pods holding one L20 slot each: the seed's nlp-infer pod and pods-1 more."""
    objects = copy.deepcopy(base)
    return objects + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(pods - 1)]


def prometheus_series(objects: list[Obj]) -> dict[str, list[tuple[dict[str, str], float]]]:
    """What Prometheus stores from each exporter page: its samples plus the scrape's target labels, the
    page's own clashing labels renamed `exported_*` (a ServiceMonitor with honorLabels: false)."""
    pods = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Pod"}
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    for page in (o for o in objects if o["kind"] == PAGE_KIND):
        name, port = page["metadata"]["name"].rsplit(":", 1)
        pod = pods[(page["metadata"]["namespace"], name)]
        target = {
            "instance": f"{pod['status']['podIP']}:{port}",
            "job": name.rsplit("-", 1)[0],
            "namespace": pod["metadata"]["namespace"],
            "pod": name,
        }
        for family in text_string_to_metric_families(page["page"]):
            for sample in family.samples:
                labels = {k: v for k, v in sample.labels.items() if v}  # Prometheus drops empty labels
                renamed = {(f"exported_{k}" if k in target else k): v for k, v in labels.items()}
                series.setdefault(sample.name, []).append(({**renamed, **target}, float(sample.value)))
    return series


def run_verify(
    server: FakeApiServer,
    kubeconfig: Path,
    objects: list[Obj],
    via: str = "pod-proxy",
    extra: tuple[str, ...] = (),
    forbidden: tuple[tuple[str, str | None], ...] = (),
    stack: str = "prod",
) -> tuple[int, dict[str, Any]]:
    server.load(objects, forbidden)
    args = ["verify", "--stack", stack, "--kubeconfig", str(kubeconfig), "--json", *extra]
    if via == "prometheus":
        server.prometheus_series = prometheus_series(objects)
        server.pages = {}  # Prometheus is the only source: a scrape of a page would be a bug
        args += ["--prometheus", server.url + PROMETHEUS_PATH]
    out = io.StringIO()
    code = cli_main.main(args, out=out)
    assert server.writes == [], "verify sent a write request"
    assert all(method == "GET" for method, _ in server.requests)
    return code, json.loads(out.getvalue())


def memory(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (f["severity"], f["object"], f["message"])
        for f in report["findings"]
        if f["check"] == "memory-budget"
    ]


def other_findings(report: dict[str, Any]) -> list[dict[str, str]]:
    return [f for f in report["findings"] if f["check"] != "memory-budget"]


# --------------------------------------------------------------------------------------------------
# The three clusters, with each exporter's format, through the pod proxy and through Prometheus


@pytest.mark.parametrize(("kind", "via"), SOURCES)
def test_eight_pods_at_4608_mib_is_within_budget(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], kind: str, via: str
) -> None:
    objects = with_l20_pods(prod_base, 8) + exporter_objects(kind, seed_gpus(l20_used=8 * 4608))
    code, report = run_verify(server, kubeconfig, objects, via)
    assert (code, report["findings"]) == (0, [])
    paths = [path for _, path in server.requests]
    if via == "prometheus":
        assert not any("/proxy/metrics" in p for p in paths)
        assert any(p.startswith(PROMETHEUS_PATH + "/api/v1/query?query=") for p in paths)
    else:
        # One page per GPU node, through the pod proxy, and the pods of each node by field selector.
        assert sum("/proxy/metrics" in p for p in paths) == 2
        assert any(f"fieldSelector=spec.nodeName%3D{L20_NODE}" in p for p in paths)


@pytest.mark.parametrize(("kind", "via"), SOURCES)
def test_six_pods_at_5939_mib_outgrew_the_measurement(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], kind: str, via: str
) -> None:
    objects = with_l20_pods(prod_base, 6) + exporter_objects(kind, seed_gpus(l20_used=6 * 5939))
    code, report = run_verify(server, kubeconfig, objects, via)
    assert (code, report["ok"], other_findings(report)) == (0, True, [])
    assert memory(report) == [
        (
            "warning",
            f"node/{L20_NODE}",
            "pool l20: 5939 MiB observed per allocated slot (average: 35634 MiB used over the 6 nvidia.com/gpu "
            f"slots pods hold on node {L20_NODE}, {EXPORTER_NAME[kind]}), more than the 4621 MiB measured: the "
            "workload outgrew the measurement; `tune` would give 6 replicas, the plan has 8 "
            "(`gpushare measure`, then `pulumi preview`)",
        )
    ]


@pytest.mark.parametrize(("kind", "via"), SOURCES)
def test_42000_mib_on_the_l20_is_above_the_ceiling(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], kind: str, via: str
) -> None:
    objects = with_l20_pods(prod_base, 8) + exporter_objects(kind, seed_gpus(l20_used=42000))
    code, report = run_verify(server, kubeconfig, objects, via)
    assert (code, report["ok"], other_findings(report)) == (1, False, [])
    assert memory(report) == [
        (
            "error",
            L20_GPU[kind],
            f"pool l20: 42000 MiB used, above the ceiling 0.9 x 46068 = 41461 MiB of this GPU ({EXPORTER_NAME[kind]}): "
            "the headroom the tuning promised is gone and allocations start failing for every pod on it; "
            "5250 MiB per allocated slot (average: 42000 MiB used over the 8 nvidia.com/gpu slots pods hold on "
            f"node {L20_NODE}) against the measured 4621 MiB; `tune` would give 7 replicas, the plan has 8",
        )
    ]


def test_exactly_the_ceiling_is_not_above_it(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    # 41461 MiB <= 41461.2: at the boundary, no error; 41461 / 8 = 5182.6 per slot > 4621: the warning.
    objects = with_l20_pods(prod_base, 8) + exporter_objects("dcgm", seed_gpus(l20_used=41461))
    _, report = run_verify(server, kubeconfig, objects)
    assert [(s, o) for s, o, _ in memory(report)] == [("warning", f"node/{L20_NODE}")]
    assert "5182.6 MiB observed per allocated slot" in memory(report)[0][2]


# --------------------------------------------------------------------------------------------------
# dcgm-exporter's per-pod series (KUBERNETES_VIRTUAL_GPUS=true) and MIG


def test_per_pod_series_name_the_pod_that_outgrew_the_measurement(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    # 4.5.3-4.8.2 with virtual GPUs: one pod at 5939 MiB, six at 4000, and a pod holding two replicas
    # (listed once per replica, 8000 MiB in all: 4000 per slot). Whole GPU: 5939 + 6 x 4000 + 8000 = 37939,
    # an average of 37939 / 9 slots = 4215 MiB, under 4621: only the per-pod series show the outgrown pod.
    objects = with_l20_pods(prod_base, 7)
    objects.append(gpu_pod("nlp-wide", L20_NODE, slots=2))
    pods = [("nlp", "nlp-infer-7d4b9c-0", "uid-0", 5939.0, (0,))]
    pods += [("nlp", f"nlp-batch-{i}", f"uid-b{i}", 4000.0, (i + 1,)) for i in range(6)]
    pods.append(("nlp", "nlp-wide", "uid-wide", 8000.0, (7, 8)))
    objects += exporter_objects("dcgm", seed_gpus(l20_used=37939, pods=tuple(pods)))
    code, report = run_verify(server, kubeconfig, objects)
    assert code == 0
    assert memory(report) == [
        (
            "warning",
            L20_GPU["dcgm"],
            "pool l20: 5939 MiB observed per allocated slot (pod nlp/nlp-infer-7d4b9c-0 uses 5939 MiB, "
            "dcgm-exporter), more than the 4621 MiB measured: the workload outgrew the measurement; `tune` "
            "would give 6 replicas, the plan has 8 (`gpushare measure`, then `pulumi preview`)",
        )
    ]


def test_per_pod_series_of_older_dcgm_exporters_are_the_gpus_value(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    # Before 4.5.3-4.8.2 each sharing pod's series carried the whole GPU's 35634 MiB and there was no
    # whole-GPU series: read as the GPU's memory (never summed: 6 x 35634 would be far above the
    # ceiling), averaged over the 6 slots like any whole-GPU reading.
    objects = with_l20_pods(prod_base, 6)
    pods = tuple(("nlp", f"p{i}", f"uid-{i}", 0.0, (i,)) for i in range(6))
    objects += exporter_objects("dcgm", seed_gpus(l20_used=35634, pods=pods), whole_gpu_series=False)
    _, report = run_verify(server, kubeconfig, objects)
    assert [(s, o) for s, o, _ in memory(report)] == [("warning", f"node/{L20_NODE}")]
    assert memory(report)[0][2].startswith(
        "pool l20: 5939 MiB observed per allocated slot (average: 35634 MiB"
    )


# --------------------------------------------------------------------------------------------------
# What cannot be read: a warning of memory-budget, never a failure of the other checks


def test_no_exporter_is_one_warning(server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]) -> None:
    code, report = run_verify(server, kubeconfig, copy.deepcopy(prod_base))
    assert code == 0
    assert memory(report) == [
        (
            "warning",
            "cluster",
            "no GPU memory exporter runs on the pools' nodes (looked for dcgm-exporter (labels "
            "app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter, or its image), nvidia_gpu_exporter "
            "(its image), TKE's kube-system/nvidia-gpu-exporter); memory-budget not checked: install one, name it "
            "with --exporter NAMESPACE/NAME[:PORT], or give --prometheus URL",
        )
    ]


def test_forbidden_pod_proxy_is_a_warning_and_the_other_checks_still_run(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    objects = with_l20_pods(prod_base, 8) + exporter_objects("tke", seed_gpus(l20_used=42000))
    next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == T4_NODE)["status"][
        "allocatable"
    ]["nvidia.com/gpu"] = "1"
    code, report = run_verify(server, kubeconfig, objects, forbidden=(("pods/proxy", None),))
    assert (code, [f["check"] for f in other_findings(report)]) == (1, ["slots-allocatable"])
    assert memory(report) == [
        (
            "warning",
            "permission",
            "missing permission: get pods/proxy in namespace kube-system (the API server answered 403); "
            "memory-budget not checked; see docs/measurement-loop.md for the ClusterRole",
        )
    ]


def test_forbidden_pod_list_is_a_warning(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    # verify lists pending pods at cluster scope too: that 403 is the existing permission warning.
    objects = copy.deepcopy(prod_base) + exporter_objects("tke", seed_gpus())
    code, report = run_verify(server, kubeconfig, objects, forbidden=(("pods", None),))
    # A check that could not run makes the verdict partial (exit 1), never "conforms".
    assert (code, report["partial"]) == (1, True)
    assert memory(report) == [
        (
            "warning",
            "permission",
            "missing permission: list pods at cluster scope (the API server answered 403); memory-budget not "
            "checked; see docs/measurement-loop.md for the ClusterRole",
        )
    ]


def test_an_exporter_that_does_not_answer(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]
) -> None:
    objects = copy.deepcopy(prod_base) + [
        o for o in exporter_objects("tke", seed_gpus()) if o["kind"] != PAGE_KIND
    ]
    code, report = run_verify(server, kubeconfig, objects)
    assert code == 0
    assert memory(report) == [
        (
            "warning",
            f"pod/kube-system/nvidia-gpu-exporter-n{node[-2:]}",
            f"tke-gpu-exporter pod/kube-system/nvidia-gpu-exporter-n{node[-2:]} on node {node}: the pod proxy "
            f"answered 503: error trying to reach service: dial tcp {node}:5678: connect: connection refused",
        )
        for node in (L20_NODE, T4_NODE)
    ]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        # Not a Status object (a proxy in between answering in text): its first line is what is said.
        (
            b"upstream connect error or disconnect/reset before headers",
            "upstream connect error or disconnect/reset before headers",
        ),
        (b"", "no body"),
    ],
    ids=["text", "empty"],
)
def test_an_exporter_proxy_error_that_is_not_a_status_says_its_body(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], body: bytes, said: str
) -> None:
    server.load(copy.deepcopy(prod_base) + exporter_objects("tke", seed_gpus()))
    server.override = lambda path, query: Reply(502, body) if path.endswith("/proxy/metrics") else None
    out = io.StringIO()
    code = cli_main.main(["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"], out=out)
    assert code == 0
    assert memory(json.loads(out.getvalue())) == [
        (
            "warning",
            f"pod/kube-system/nvidia-gpu-exporter-n{node[-2:]}",
            f"tke-gpu-exporter pod/kube-system/nvidia-gpu-exporter-n{node[-2:]} on node {node}: the pod proxy "
            f"answered 502: {said}",
        )
        for node in (L20_NODE, T4_NODE)
    ]


def test_an_exporter_that_hangs_is_cut_off(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "REQUEST_SECONDS", 0.2)
    objects = copy.deepcopy(prod_base) + exporter_objects("tke", seed_gpus())
    server.load(objects)
    server.page_delay = 0.5
    out = io.StringIO()
    code = cli_main.main(["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json"], out=out)
    report = json.loads(out.getvalue())
    assert code == 0
    assert [(o, m.split(": ", 1)[1]) for _, o, m in memory(report)] == [
        ("pod/kube-system/nvidia-gpu-exporter-n11", "no answer within 0.2 s"),
        ("pod/kube-system/nvidia-gpu-exporter-n12", "no answer within 0.2 s"),
    ]


EXPORTER_POD = "pod/kube-system/nvidia-gpu-exporter-n11"
UNCHECKED = (
    "warning",
    f"node/{L20_NODE}",
    "pool l20: the exporters gave no GPU memory series for this node; not checked",
)
# page -> (what the warning about the page says, whether the L20 is also named as not checked).
HOSTILE_PAGES = {
    "html": (
        "<html><body>502 Bad Gateway</body></html>\n",
        "not a Prometheus text page (invalid metric name:",
        False,
    ),
    "garbage": ("\x00\xff\x17 gpu mem lots\n", "not a Prometheus text page (", False),
    "duplicate-labels": (
        'gpu_mem_usage{card="0",card="1"} 1\n',
        "not a Prometheus text page (Invalid labels:",
        False,
    ),
    "nan": (
        'gpu_mem_usage{card="0",node="10.0.1.11"} NaN\n',
        'gpu_mem_usage{card="0",node="10.0.1.11"} is nan',
        True,
    ),
    "negative": ('gpu_mem_usage{card="0",node="10.0.1.11"} -4608\n', "is -4608.0, not a memory size", True),
    "dcgm-blank": (
        f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="{L20_UUID}"}} 9223372036854775794\n',
        "is 9.223372036854776e+18, not a memory size",
        True,
    ),
    "infinite": ('gpu_mem_usage{card="0",node="10.0.1.11"} +Inf\n', "is inf, not a memory size", True),
    "no-memory-metric": ("up 1\n", None, True),
    "two-gpus-without-labels": (
        "gpu_mem_usage 100\ngpu_mem_usage 200\n",
        "2 series without a GPU label",
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_PAGES))
def test_hostile_pages_are_warnings_not_crashes_nor_healthy(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], name: str
) -> None:
    page, problem, unchecked = HOSTILE_PAGES[name]
    objects = copy.deepcopy(prod_base)
    l20, port = exporter_pod("tke", L20_NODE, "n11")
    objects += [l20, page_object(l20, port, page)]
    objects += exporter_objects("tke", seed_gpus()[1:])  # the T4's page is fine
    code, report = run_verify(server, kubeconfig, objects)
    assert (code, other_findings(report)) == (0, [])
    found = memory(report)
    # Never silently healthy: the L20 is named as not checked, or its page as unreadable.
    expected_objects = ([UNCHECKED[1]] if unchecked else []) + ([EXPORTER_POD] if problem else [])
    assert [(severity, obj) for severity, obj, _ in found] == [("warning", o) for o in expected_objects]
    if unchecked:
        assert found[0] == UNCHECKED
    if problem is not None:
        assert found[-1][2].startswith(f"tke-gpu-exporter {EXPORTER_POD} on node {L20_NODE}: ")
        assert problem in found[-1][2]


def test_an_oversized_page_is_not_read(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_PAGE_BYTES", 64 * 1024)
    objects = copy.deepcopy(prod_base)
    l20, port = exporter_pod("tke", L20_NODE, "n11")
    huge = "".join(f'gpu_core_usage{{card="{i}"}} 1\n' for i in range(5000))  # ~120 KiB
    objects += [l20, page_object(l20, port, huge), *exporter_objects("tke", seed_gpus()[1:])]
    _, report = run_verify(server, kubeconfig, objects)
    assert memory(report) == [
        (
            "warning",
            EXPORTER_POD,
            f"tke-gpu-exporter {EXPORTER_POD} on node {L20_NODE}: its page is larger than 0 MiB; not read",
        )
    ]


def test_a_named_exporter_is_scraped(server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]) -> None:
    """An exporter nothing recognises (an in-house image) serving dcgm-exporter's format, named by the user."""
    objects = with_l20_pods(prod_base, 8)
    exporters = exporter_objects("dcgm", seed_gpus(l20_used=42000))
    for obj in exporters:
        if obj["kind"] == "Pod":
            obj["metadata"].update(namespace="observability", labels={"app": "gpu-metrics"})
            obj["metadata"]["ownerReferences"][0]["name"] = "gpu-metrics"
            obj["spec"]["containers"][0]["image"] = "registry.example/gpu-metrics:3"
        else:
            obj["metadata"]["namespace"] = "observability"
    objects += exporters
    _, unnamed = run_verify(server, kubeconfig, objects)
    assert [o for _, o, _ in memory(unnamed)] == ["cluster"]
    code, named = run_verify(server, kubeconfig, objects, extra=("--exporter", "observability/gpu-metrics"))
    assert (code, [(s, o) for s, o, _ in memory(named)]) == (1, [("error", L20_GPU["dcgm"])])


def test_a_bad_exporter_option_is_a_usage_error(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main.main(
        ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--exporter", "just-a-name"]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "verify: cannot check: --exporter 'just-a-name': expected NAMESPACE/NAME or NAMESPACE/NAME:PORT "
        "(NAME a DaemonSet or a pod)\n"
    )


def test_prometheus_that_is_not_there(server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]) -> None:
    server.load(copy.deepcopy(prod_base))
    out = io.StringIO()
    url = server.url + "/api/v1/namespaces/monitoring/pods/not-prometheus:9090/proxy"
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json", "--prometheus", url]
    code = cli_main.main(args, out=out)
    assert code == 0
    assert memory(json.loads(out.getvalue())) == [
        (
            "warning",
            "prometheus",
            f'Prometheus at {url}: {metric}: answered 404 (pods "not-prometheus" not found)',
        )
        for metric in ("DCGM_FI_DEV_FB_USED", "nvidia_smi_memory_used_bytes", "gpu_mem_usage")
    ]


@pytest.mark.parametrize(
    "value",
    [[1764633600.0], [1764633600.0, "4608", "4608"]],
    ids=["time-only", "one-cell-more"],
)
def test_a_prometheus_vector_item_that_is_not_time_and_value_is_a_warning(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], value: list[Any]
) -> None:
    # A vector item's value is [time, "number"] (Prometheus' HTTP API); one cell short or one more is no
    # reading: each metric asked for is a warning naming it, never an IndexError nor a number taken anyway.
    broken = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {"Hostname": L20_NODE}, "value": value}]},
    }
    server.load(copy.deepcopy(prod_base))
    server.override = lambda path, query: (
        Reply(200, broken) if path == PROMETHEUS_PATH + "/api/v1/query" else None
    )
    url = server.url + PROMETHEUS_PATH
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json", "--prometheus", url]
    out = io.StringIO()
    assert cli_main.main(args, out=out) == 0
    assert memory(json.loads(out.getvalue())) == [
        (
            "warning",
            "prometheus",
            f"Prometheus at {url}: {metric}: a Prometheus vector item without metric and [time, value]",
        )
        for metric in ("DCGM_FI_DEV_FB_USED", "nvidia_smi_memory_used_bytes", "gpu_mem_usage")
    ]


def test_prometheus_answering_a_matrix_is_refused(server: FakeApiServer, kubeconfig: Path) -> None:
    from gpushare.verify.memory_series import PageError, vector_samples

    with pytest.raises(PageError, match="resultType 'matrix', not a vector"):
        vector_samples({"status": "success", "data": {"resultType": "matrix", "result": []}}, "gpu_mem_usage")


def test_a_prometheus_on_another_host_gets_no_cluster_credentials(
    server: FakeApiServer, prod_base: list[Obj], tmp_path: Path
) -> None:
    """The kubeconfig's token goes to the API server only; a Prometheus reached directly never sees it."""
    prometheus = FakeApiServer().start()
    try:
        kubeconfig = server.write_kubeconfig(tmp_path / "config")
        config = json.loads(kubeconfig.read_text())
        config["users"][0]["user"] = {"token": "cluster-secret-token"}
        kubeconfig.write_text(json.dumps(config))
        objects = with_l20_pods(prod_base, 6) + exporter_objects("dcgm", seed_gpus(l20_used=6 * 5939))
        server.load(objects)
        prometheus.load([])
        prometheus.prometheus_series = prometheus_series(objects)
        out = io.StringIO()
        args = [
            "verify",
            "--stack",
            "prod",
            "--kubeconfig",
            str(kubeconfig),
            "--json",
            "--prometheus",
            prometheus.url,
        ]
        assert cli_main.main(args, out=out) == 0
        assert [o for _, o, _ in memory(json.loads(out.getvalue()))] == [f"node/{L20_NODE}"]
        assert set(server.authorization) == {"Bearer cluster-secret-token"}
        assert len(prometheus.requests) == 3 and set(prometheus.authorization) == {None}
    finally:
        prometheus.stop()


def test_finished_pods_hold_no_slot(server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj]) -> None:
    # A finished Job's pod (Succeeded) and a crashed one (Failed) stay listed on the node with their GPU
    # limits, but the scheduler no longer counts them: 35634 MiB over the 6 running slots is 5939 per slot,
    # as in test_six_pods_at_5939_mib_outgrew_the_measurement (over 8 slots it would be 4454.25, no finding).
    objects = with_l20_pods(prod_base, 6) + exporter_objects("dcgm", seed_gpus(l20_used=6 * 5939))
    for name, phase in (("nlp-eval-done", "Succeeded"), ("nlp-eval-crashed", "Failed")):
        finished = gpu_pod(name, L20_NODE)
        finished["status"]["phase"] = phase
        objects.append(finished)
    _, report = run_verify(server, kubeconfig, objects)
    assert memory(report) == [
        (
            "warning",
            f"node/{L20_NODE}",
            "pool l20: 5939 MiB observed per allocated slot (average: 35634 MiB used over the 6 nvidia.com/gpu "
            f"slots pods hold on node {L20_NODE}, dcgm-exporter), more than the 4621 MiB measured: the "
            "workload outgrew the measurement; `tune` would give 6 replicas, the plan has 8 "
            "(`gpushare measure`, then `pulumi preview`)",
        )
    ]


def test_every_node_left_when_the_time_for_gpu_memory_runs_out_is_named(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The time is up before the first node is read: each of the prod stack's two GPU nodes (the L20 and the
    # T4) is named as not read, not only the first one.
    monkeypatch.setattr(live, "TOTAL_SECONDS", 0)
    objects = with_l20_pods(prod_base, 8) + exporter_objects("dcgm", seed_gpus(l20_used=8 * 4608))
    _, report = run_verify(server, kubeconfig, objects)
    assert [finding for finding in memory(report) if finding[1].startswith("node/")] == [
        ("warning", f"node/{node}", "not read: the 0 s for GPU memory ran out")
        for node in (L20_NODE, T4_NODE)
    ]


@pytest.mark.parametrize("over", [0, 1])
def test_a_page_of_exactly_the_bound_is_read_one_byte_more_is_not(
    server: FakeApiServer,
    kubeconfig: Path,
    prod_base: list[Obj],
    monkeypatch: pytest.MonkeyPatch,
    over: int,
) -> None:
    """MAX_PAGE_BYTES is the largest page read (docs/bounds.md: "at most"): the L20's TKE page of exactly
    that many bytes is judged like any page (no memory finding), one byte longer it is
    named as not read. The bound is set from the fixture page's own length, not from the code."""
    objects = copy.deepcopy(prod_base)
    l20, port = exporter_pod("tke", L20_NODE, "n11")
    # Padded with comment lines (the text format ignores them) past the 64 KiB the other answers stay
    # under (test_an_oversized_page_is_not_read), so the bound falls on this page alone.
    page = tke_page(seed_gpus()[:1]) + "# padding\n" * 8000  # + 80 000 bytes
    monkeypatch.setattr(live, "MAX_PAGE_BYTES", len(page.encode()) - over)
    objects += [l20, page_object(l20, port, page), *exporter_objects("tke", seed_gpus()[1:])]
    _, report = run_verify(server, kubeconfig, objects)
    not_read = [
        (
            "warning",
            EXPORTER_POD,
            f"tke-gpu-exporter {EXPORTER_POD} on node {L20_NODE}: its page is larger than 0 MiB; not read",
        )
    ]
    assert memory(report) == ([] if over == 0 else not_read)


@pytest.mark.parametrize("over", [0, 1])
def test_a_prometheus_answer_of_exactly_the_bound_is_read_one_byte_more_is_not(
    server: FakeApiServer, kubeconfig: Path, prod_base: list[Obj], monkeypatch: pytest.MonkeyPatch, over: int
) -> None:
    """The same "at most" for Prometheus' answers: an empty vector padded with spaces (JSON ignores them) to
    exactly MAX_PAGE_BYTES is read (no series: each metric asked for is answered and none is said larger);
    one byte longer, each is named as not read. The bound is set from the answer's own length."""
    answer = (
        json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}) + " " * 4000
    ).encode()
    monkeypatch.setattr(live, "MAX_PAGE_BYTES", len(answer) - over)
    server.load(copy.deepcopy(prod_base))
    server.override = lambda path, query: (
        Reply(200, answer) if path == PROMETHEUS_PATH + "/api/v1/query" else None
    )
    url = server.url + PROMETHEUS_PATH
    out = io.StringIO()
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json", "--prometheus", url]
    assert cli_main.main(args, out=out) == 0
    too_large = [
        ("warning", "prometheus", f"Prometheus at {url}: {metric}: answer larger than 0 MiB")
        for metric in ("DCGM_FI_DEV_FB_USED", "nvidia_smi_memory_used_bytes", "gpu_mem_usage")
    ]
    found = [f for f in memory(json.loads(out.getvalue())) if f[1] == "prometheus"]
    assert found == ([] if over == 0 else too_large)
