"""`verify` against cluster size and `advise --fleet` against fleet size, each against what a user would
otherwise pay for the same answer, as whole processes (interpreter start and imports included on both
sides: a user runs a command, not a function).

* verify: synthetic clusters of N GPU nodes (bench/cluster.py; 4N nodes, 6N pods, 3 DaemonSets) served
  by the read-only fake API server (`fake_cluster.apiserver`, in this process) through a kubeconfig.
  `python -m gpushare verify --stack prod --json` against `python -m bench.baselines list`, which lists
  the same nodes, pods and DaemonSets with the official kubernetes client (what `kubectl get
  nodes,pods,daemonsets -A -o json` costs).
* advise --fleet: fleet files of N services over three candidate GPUs (bench/fleet.py).
  `python -m gpushare advise --fleet FILE --json` against `python -m bench.baselines advise FILE`: the 3N
  single `advise` answers a user would otherwise ask for, computed in one process.

The two kinds of a size alternate and swap order between repetitions (`measure.alternating`); figures are
medians (`measure.Series`), growth is time(largest) / time(the size a tenth of it) when both ran.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import cluster, fleet
from bench.measure import Series, alternating, ratio, run_process
from bench.synthetic import REPO_ROOT
from fake_cluster.apiserver import FakeApiServer

VERIFY_KINDS: Final = ("verify", "list")
FLEET_KINDS: Final = ("fleet", "singles")
DEFAULT_CLUSTER_SIZES: Final = (10, 100, 1000)
DEFAULT_FLEET_SIZES: Final = (10, 100, 1000)
QUICK_CLUSTER_SIZES: Final = (10, 100, 1000)
QUICK_FLEET_SIZES: Final = (10, 100, 1000)
DEFAULT_LIVE_REPS: Final = 3
GROWTH_FACTOR: Final = 10

METHOD: Final = {
    "verify": (
        "wall time of `python -m gpushare verify --stack prod --json` against `python -m bench.baselines "
        "list` (the kubernetes client listing every node, pod and DaemonSet and serialising them, as "
        "`kubectl get nodes,pods,daemonsets -A -o json` does), both fresh processes against the same fake "
        "API server (fake_cluster/apiserver.py, in the benchmark's process) holding a synthetic cluster of "
        "N GPU nodes built from the prod render (bench/cluster.py). CPU is the child's user + system time."
    ),
    "fleet": (
        "wall time of `python -m gpushare advise --fleet FILE --json` against `python -m bench.baselines "
        "advise FILE` (one `advise` answer and its table per service and candidate, in one process), both "
        "fresh processes, over fleet files of N services and 3 candidates (bench/fleet.py)."
    ),
}

Log = Callable[[str], None]


@dataclass
class LiveRun:
    """The series of both benchmarks, by size."""

    reps: int
    cluster_sizes: tuple[int, ...]
    fleet_sizes: tuple[int, ...]
    verify: dict[int, dict[str, Series]] = field(default_factory=dict)
    shapes: dict[int, cluster.ClusterShape] = field(default_factory=dict)
    fleet: dict[int, dict[str, Series]] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        return [
            error
            for by_size in (self.verify, self.fleet)
            for kinds in by_size.values()
            for series in kinds.values()
            for error in series.errors
        ]


def verify_command(kubeconfig: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gpushare",
        "verify",
        "--stack",
        cluster.STACK,
        "--kubeconfig",
        str(kubeconfig),
        "--json",
        "--dir",
        str(REPO_ROOT),
    ]


def list_command(kubeconfig: Path) -> list[str]:
    return [sys.executable, "-m", "bench.baselines", "list", "--kubeconfig", str(kubeconfig)]


def fleet_command(fleet_file: Path) -> list[str]:
    return [sys.executable, "-m", "gpushare", "advise", "--fleet", str(fleet_file), "--json"]


def singles_command(fleet_file: Path) -> list[str]:
    return [sys.executable, "-m", "bench.baselines", "advise", str(fleet_file)]


def _repeat(
    label: str, commands: dict[str, list[str]], reps: int, log: Log, started: float
) -> dict[str, Series]:
    series = {kind: Series(kind, label) for kind in commands}
    for repetition in range(reps):
        for kind in alternating(list(commands), repetition):
            sample = run_process(kind, label, commands[kind])
            series[kind].samples.append(sample)
            shown = f"FAILED: {sample.error.splitlines()[0]}" if sample.error else f"{sample.seconds:7.2f} s"
            log(
                f"  {label:<22} {kind:<8} rep {repetition + 1}/{reps}  {shown}   [{time.monotonic() - started:5.0f} s]"
            )
    return series


def measure_verify(run: LiveRun, log: Log, started: float) -> None:
    rendered = cluster.render(REPO_ROOT)
    server = FakeApiServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="gpushare-bench-kube-") as scratch:
            kubeconfig = server.write_kubeconfig(Path(scratch) / "config")
            for gpu_nodes in run.cluster_sizes:
                shape = cluster.ClusterShape(gpu_nodes)
                server.load(cluster.synthetic_cluster(rendered, shape))
                run.shapes[gpu_nodes] = shape
                log(f"Cluster of {gpu_nodes} GPU nodes ({shape.nodes} nodes, {shape.pods} pods):")
                commands = {"verify": verify_command(kubeconfig), "list": list_command(kubeconfig)}
                run.verify[gpu_nodes] = _repeat(f"verify {gpu_nodes}", commands, run.reps, log, started)
            if server.writes:
                raise RuntimeError(f"a benchmarked command wrote to the API server: {server.writes[:3]}")
    finally:
        server.stop()


def measure_fleet(run: LiveRun, log: Log, started: float) -> None:
    with tempfile.TemporaryDirectory(prefix="gpushare-bench-fleet-") as scratch:
        for services in run.fleet_sizes:
            fleet_file = fleet.write_fleet(Path(scratch), services)
            log(f"Fleet of {services} services, {len(fleet.CANDIDATES)} candidates:")
            commands = {"fleet": fleet_command(fleet_file), "singles": singles_command(fleet_file)}
            run.fleet[services] = _repeat(f"fleet {services}", commands, run.reps, log, started)


# --------------------------------------------------------------------------------------------------
# The results document's `verify` and `fleet` keys


def timing_json(series: Series) -> dict[str, Any]:
    """A series of whole-process samples: times only (run_process measures no memory)."""
    return {
        "kind": series.kind,
        "label": series.stack,
        "repetitions": len(series.samples),
        "failed": len(series.errors),
        "errors": series.errors,
        "median": {"seconds": series.seconds, "cpuSeconds": series.cpu_seconds},
        "spread": series.spread,
        "samples": [{"seconds": s.seconds, "cpuSeconds": s.cpu_seconds} for s in series.ok],
    }


def growth(by_size: dict[int, dict[str, Series]], kind: str) -> dict[str, float | None]:
    """time(large) / time(large / GROWTH_FACTOR) for each size whose tenth ran too (10 = linear)."""
    return {
        f"{large}/{large // GROWTH_FACTOR}": ratio(
            by_size[large][kind].seconds, by_size[large // GROWTH_FACTOR][kind].seconds
        )
        for large in sorted(by_size)
        if large % GROWTH_FACTOR == 0 and large // GROWTH_FACTOR in by_size
    }


def _sized_json(
    by_size: dict[int, dict[str, Series]],
    kinds: Sequence[str],
    extra: Callable[[int], dict[str, Any]],
) -> dict[str, Any]:
    ours, baseline = kinds
    return {
        "sizes": {
            str(size): {
                **extra(size),
                **{kind: timing_json(series[kind]) for kind in kinds},
                "ratio": ratio(series[ours].seconds, series[baseline].seconds),
            }
            for size, series in sorted(by_size.items())
        },
        "growth": {kind: growth(by_size, kind) for kind in kinds},
    }


def results_json(run: LiveRun) -> dict[str, Any]:
    """`verify` and `fleet`: per size the shape, each kind's medians, ours / baseline; growth."""
    found: dict[str, Any] = {}
    if run.verify:
        found["verify"] = {
            "method": METHOD["verify"],
            "stack": cluster.STACK,
            "repetitions": run.reps,
            **_sized_json(run.verify, VERIFY_KINDS, lambda size: {"shape": run.shapes[size].to_json()}),
        }
    if run.fleet:
        candidates = len(fleet.CANDIDATES)
        found["fleet"] = {
            "method": METHOD["fleet"],
            "candidates": candidates,
            "repetitions": run.reps,
            **_sized_json(
                run.fleet, FLEET_KINDS, lambda size: {"services": size, "answers": size * candidates}
            ),
        }
    return found
