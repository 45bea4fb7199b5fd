"""`measure --write` writes only what it can trust (issue 34): a peak over a window, attributed to the pods
that hold slots as their specs say, never lowering slots without `--allow-fewer-slots`.

Against the fake API server with the seed's prod cluster (test_measure's fixtures). Expected replicas by
hand (ceiling 0.9): L20 46068 MiB -> 41461.2; 4700 MiB: floor(8.82) = 8; 5939: floor(6.98) = 6;
8000: floor(5.18) = 5. T4 15360 -> 13824; 4000: floor(3.46) = 3; 7000: floor(1.97) = 1.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import test_measure
from test_measure import SCRAPES, exclusive, measure, measure_args, rows

from fake_cluster.apiserver import FakeApiServer
from fake_cluster.gpu_pages import (
    L20_NODE,
    PAGES,
    T4_NODE,
    exporter_objects,
    gpu_pod,
    seed_gpus,
)
from gpushare.cli import main as cli_main
from gpushare.cli import measure as measure_cli

Obj = dict[str, Any]
server = test_measure.server
kubeconfig = test_measure.kubeconfig
prod_base = test_measure.prod_base
project = test_measure.project
waits = test_measure.waits


def node(objects: list[Obj], name: str) -> Obj:
    return next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == name)


# --------------------------------------------------------------------------------------------------
# One instant reading writes nothing


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ((), "--scrapes 5 or more"),
        (("--scrapes", "4", "--interval", "10"), "--scrapes 5 or more"),
        (("--prometheus", "http://prometheus.invalid:9090"), "--window of at least 1h"),
        (("--prometheus", "http://prometheus.invalid:9090", "--window", "59m"), "--window of at least 1h"),
        (("--prometheus", "http://prometheus.invalid:9090", "--window", "3599s"), "--window of at least 1h"),
    ],
)
def test_write_without_a_window_writes_nothing_and_reads_nothing(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    said: str,
) -> None:
    # The L20 reading 40000 MiB once would give 1 slot of 8.
    server.load(exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=40000, t4_used=4000)))
    server.requests.clear()
    before = (project / "Pulumi.prod.yaml").read_bytes()
    assert cli_main.main(measure_args(project, kubeconfig, "--write", *extra), out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("measure: --write needs a peak over a window: ")
    assert said in err and "one instant reading writes nothing" in err
    assert server.requests == []
    assert (project / "Pulumi.prod.yaml").read_bytes() == before


@pytest.mark.parametrize(
    "extra",
    [
        ("--scrapes", "0"),
        ("--scrapes", "61"),
        ("--interval", "9"),
        ("--interval", "3601"),
        ("--prometheus", "http://p.invalid:9090", "--scrapes", "5"),
    ],
)
def test_scrape_options_out_of_range_are_usage_errors(
    kubeconfig: Path, project: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    assert cli_main.main(measure_args(project, kubeconfig, *extra)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("measure: --")


def test_repeated_scrapes_write_the_peak_of_all_of_them(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=4700, t4_used=4000))
    server.load(objects)
    # The third scrape sees the L20 at 5939 MiB, the others at 4700: the peak is 5939.
    pages = {2: PAGES["dcgm"]([g for g in seed_gpus(l20_used=5939, t4_used=4000) if g.node == L20_NODE])}
    waited: list[float] = []

    def wait(seconds: float) -> None:
        waited.append(seconds)
        page = pages.get(len(waited))
        if page is not None:
            key = next(k for k in server.pages if "n11" in str(k))
            server.pages[key] = page
        elif len(waited) == 3:
            key = next(k for k in server.pages if "n11" in str(k))
            server.pages[key] = PAGES["dcgm"]([g for g in seed_gpus(l20_used=4700) if g.node == L20_NODE])

    monkeypatch.setattr(measure_cli, "_sleep", wait)
    out = io.StringIO()
    args = measure_args(project, kubeconfig, "--json", "--write", "--allow-fewer-slots", *SCRAPES)
    assert cli_main.main(args, out=out) == 0
    assert waited == [10.0, 10.0, 10.0, 10.0]
    assert rows(json.loads(out.getvalue()))[0] == ("l20", 4621, 5939, "8", "6", False)
    assert "measuredMiB: 5939" in (project / "Pulumi.prod.yaml").read_text()


def test_a_prometheus_window_with_too_few_samples_writes_nothing(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prometheus answers the window's count with 4 samples (a target scraped for 4 minutes of the hour).
    import fake_cluster.apiserver as apiserver

    monkeypatch.setattr(apiserver, "PROMETHEUS_COUNT", 4)
    objects = exclusive(prod_base) + exporter_objects("nvidia-smi", seed_gpus(l20_used=4700, t4_used=4000))
    before = (project / "Pulumi.prod.yaml").read_bytes()
    code, _report = measure(
        server, kubeconfig, project, objects, "--window", "1h", "--write", prometheus=True
    )
    assert code == 1
    assert capsys.readouterr().err.endswith(
        f"not written (fewer than 5 samples over the window): l20 (4 samples at node {L20_NODE}), "
        f"t4 (4 samples at node {T4_NODE})\nnothing written: no pool's peak could be established\n"
    )
    assert (project / "Pulumi.prod.yaml").read_bytes() == before


# --------------------------------------------------------------------------------------------------
# The peak belongs to pods that hold slots, as their specs say


def shared_l20(prod_base: list[Obj], pods: tuple[Any, ...], extra_pods: int = 0) -> list[Obj]:
    objects = copy.deepcopy(prod_base) + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(extra_pods)]
    return objects + exporter_objects("dcgm", seed_gpus(l20_used=20000, t4_used=4000, pods=pods))


def test_a_pod_listed_under_many_replica_indexes_is_not_divided(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    # nlp-infer holds one slot (its spec) but the exporter lists it under four vgpu indexes with its 8000
    # MiB: 8000 is its memory, not 8000 / 4 = 2000.
    pods = (
        ("nlp", "nlp-infer-7d4b9c-0", "u0", 8000.0, (0, 1, 2, 3)),
        ("nlp", "nlp-batch-0", "u1", 4100.0, (4,)),
    )
    code, report = measure(server, kubeconfig, project, shared_l20(prod_base, pods, 1))
    assert rows(report)[0] == ("l20", 4621, 8000, "8", "5", False)
    assert code == 0


def test_a_pod_holding_two_slots_on_one_gpu_is_divided_by_its_two(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    # nlp-batch-0's spec holds 2 slots, listed twice with its 9000 MiB: 4500 per slot. nlp-infer: 4000.
    objects = [*copy.deepcopy(prod_base), gpu_pod("nlp-batch-0", L20_NODE, slots=2)]
    pods = (("nlp", "nlp-infer-7d4b9c-0", "u0", 4000.0, (0,)), ("nlp", "nlp-batch-0", "u1", 9000.0, (1, 2)))
    objects += exporter_objects("dcgm", seed_gpus(l20_used=13000, t4_used=4000, pods=pods))
    _code, report = measure(server, kubeconfig, project, objects)
    assert rows(report)[0] == ("l20", 4621, 4500, "8", "9", False)


@pytest.mark.parametrize(
    "outsider",
    [
        ("monitoring", "profiler-0", "u9", 30000.0, (5,)),  # a pod with no slot (NVIDIA_VISIBLE_DEVICES=all)
        ("nlp", "nlp-old-0", "u8", 30000.0, (5,)),  # a pod gone from the node
    ],
)
def test_series_of_pods_without_slots_are_not_the_peak(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj], outsider: tuple[Any, ...]
) -> None:
    pods = (("nlp", "nlp-infer-7d4b9c-0", "u0", 5939.0, (0,)), outsider)
    _code, report = measure(server, kubeconfig, project, shared_l20(prod_base, pods))
    assert rows(report)[0] == ("l20", 4621, 5939, "8", "6", False)


@pytest.mark.parametrize("missing", [1, 3])
def test_a_slot_holder_without_a_series_refuses_the_pool(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj], missing: int
) -> None:
    # nlp-infer has its series; nlp-batch-0.. hold slots too and have none: their memory could be the peak.
    pods = (("nlp", "nlp-infer-7d4b9c-0", "u0", 4000.0, (0,)),)
    code, report = measure(server, kubeconfig, project, shared_l20(prod_base, pods, missing))
    assert (code, rows(report)[0]) == (1, ("l20", 4621, None, "8", None, True))
    names = ", ".join(f"nlp/nlp-batch-{i}" for i in range(missing))
    verb = "holds" if missing == 1 else "hold"
    them = "it" if missing == 1 else "them"
    assert report["pools"][0]["reason"] == (
        f"node {L20_NODE}: {names} {verb} nvidia.com/gpu slots but dcgm-exporter gives no per-pod series for "
        f"{them}: the GPU's memory cannot be split"
    )


@pytest.mark.parametrize("advertised", ["1k", "0", "8", "1Ki"])
def test_one_pod_per_gpu_is_decided_by_the_pods_not_a_misread_quantity(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj], advertised: str
) -> None:
    # Six pods hold six slots of the L20's one GPU, whatever the node advertises (`1k` is 1000, not 0):
    # TKE's card-level figure is six pods' memory, never one pod's.
    objects = copy.deepcopy(prod_base) + [gpu_pod(f"nlp-batch-{i}", L20_NODE) for i in range(5)]
    objects += exporter_objects("tke", seed_gpus(l20_used=35634, t4_used=4000))
    node(objects, L20_NODE)["status"]["allocatable"]["nvidia.com/gpu"] = advertised
    code, report = measure(server, kubeconfig, project, objects)
    assert (code, rows(report)[0]) == (1, ("l20", 4621, None, "8", None, True))


def test_pod_quantities_are_read_as_kubernetes_writes_them(
    server: FakeApiServer, kubeconfig: Path, project: Path, prod_base: list[Obj]
) -> None:
    # One pod whose limit is written `1k` (1000 slots, as the scheduler reads it) on an exclusive L20: it
    # holds more slots than the node has GPUs, so its figure is no one-pod-per-GPU reading.
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=4700, t4_used=4000))
    infer = next(o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName") == L20_NODE)
    infer["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1k"
    _code, report = measure(server, kubeconfig, project, objects)
    assert rows(report)[0] == ("l20", 4621, None, "8", None, True)


# --------------------------------------------------------------------------------------------------
# Fewer slots only with the flag


@pytest.mark.parametrize(
    ("l20", "t4", "shown"),
    [
        (5939, 4000, "l20 8 -> 6"),  # the L20 loses 2 slots
        (4700, 7000, "t4 3 -> 1"),  # the T4 loses 2
        (5939, 7000, "l20 8 -> 6, t4 3 -> 1"),
    ],
)
def test_a_write_that_lowers_slots_needs_the_flag_and_prints_the_change(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
    l20: int,
    t4: int,
    shown: str,
) -> None:
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=l20, t4_used=t4))
    before = (project / "Pulumi.prod.yaml").read_bytes()
    code, _ = measure(server, kubeconfig, project, objects, "--write", *SCRAPES)
    assert code == 1
    pools = ", ".join(change.split()[0] for change in shown.split(", "))
    assert capsys.readouterr().err == (
        f"slots before -> after: {shown}\n"
        f"nothing written: the new peaks give fewer slots ({pools}); review the plan above, then run again "
        "with --allow-fewer-slots to write it\n"
    )
    assert (project / "Pulumi.prod.yaml").read_bytes() == before
    code, _ = measure(server, kubeconfig, project, objects, "--write", "--allow-fewer-slots", *SCRAPES)
    assert code == 0 and (project / "Pulumi.prod.yaml").read_bytes() != before


def test_a_write_that_keeps_or_adds_slots_needs_no_flag(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # L20 at 4000: floor(41461.2 / 4000) = 10 slots (8 before); T4 at 4000 keeps 3.
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=4000, t4_used=4000))
    code, _ = measure(server, kubeconfig, project, objects, "--write", *SCRAPES)
    assert code == 0
    assert capsys.readouterr().err == (
        "slots before -> after: l20 8 -> 10\nwrote Pulumi.prod.yaml: l20 measuredMiB 4000, t4 measuredMiB 4000\n"
    )


def test_a_peak_above_the_fallbacks_measurement_says_the_fallback_is_stale(
    server: FakeApiServer,
    kubeconfig: Path,
    project: Path,
    prod_base: list[Obj],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prod's fallback `any` shares a T4 for 4621 MiB (floor(13824 / 4621) = 2 ways); the L20's new peak
    # of 5939 MiB is larger, and measure does not rewrite the fallback: it says so.
    objects = exclusive(prod_base) + exporter_objects("dcgm", seed_gpus(l20_used=5939, t4_used=4000))
    code, _ = measure(server, kubeconfig, project, objects, "--write", "--allow-fewer-slots", *SCRAPES)
    assert code == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "note: the fallback `any` still shares each GPU 2 ways for 4621 MiB, less than l20's new peak of 5939 "
        "MiB: a GPU node in no pool would be shared for smaller processes than yours; update "
        "gpushare:sharing.fallback by hand"
    )
    assert (project / "Pulumi.prod.yaml").read_text().count("measuredMiB: 4621") == 1  # the fallback's
