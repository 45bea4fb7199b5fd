"""`python -m bench`: what render and check cost next to the Pulumi SDK's own floor, and how they scale;
what `verify` and `advise --fleet` cost next to what a user would otherwise pay, by cluster and fleet size.

1. Ratios: the prod and staging stacks, `--reps` repetitions of render, floor, check and check-floor
   (alternating, each sample a fresh process; see bench/worker.py), medians compared.
2. Scaling: synthetic stacks of `--sizes` GPU pools in both device-plugin modes, the same four kinds.
3. The config-size limit: how many pools fit in the `PULUMI_CONFIG` environment string (bench/synthetic.py).
4. `verify` against clusters of `--cluster-sizes` GPU nodes, and `advise --fleet` against fleets of
   `--fleet-sizes` services, each against what a user would otherwise pay (bench/live.py); `--live-only`
   runs only these two, `--skip-live` all but them.
5. `make test` wall time (skip with `--skip-test-suite`).

Prints a table, writes `out/bench/results.json` and plots `out/bench/scaling.png` (matplotlib, Agg):
untracked by default; `make bench-update` copies them over the committed `bench/` figures after a run
that succeeded.
Everything runs in a scratch project under a temporary directory, removed afterwards (`--keep` keeps it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from bench import live, report, synthetic
from bench.measure import RATIO_KINDS, Job, Series, alternating, git_revision, ratio, run_job
from bench.synthetic import PLUGIN_MODES, REPO_ROOT, PluginMode
from bench.worker import Sample

REAL_STACKS: Final = ("prod", "staging")
DEFAULT_SIZES: Final = (10, 50, 100, 500)
QUICK_SIZES: Final = (10, 50)
DEFAULT_REPS: Final = 5
QUICK_REPS: Final = 2
# Synthetic stacks above this many pools run once by default, to keep `make bench` under 10 minutes on two
# cores: a 500-pool render takes about half a minute, and four separate runs of it (daemonsets mode, while
# this benchmark was written) took 27.4-29.0 s. `--scaling-reps` repeats them too.
SINGLE_RUN_ABOVE_POOLS: Final = 100
MAX_SCALING_REPS: Final = 3

CHECK_TARGET: Final = 1.5
GROWTH_TARGET: Final = 12.0
GROWTH_SIZES: Final = (50, 500)
TEST_SUITE_TARGET_SECONDS: Final = 60.0

# Untracked (out/ is ignored): a run never rewrites the committed figures unless asked (make bench-update).
BENCH_OUT: Final = REPO_ROOT / "out" / "bench"
DEFAULT_RESULTS: Final = BENCH_OUT / "results.json"
DEFAULT_PLOT: Final = BENCH_OUT / "scaling.png"

METHOD: Final = {
    "samples": (
        "each sample is a fresh `python -m bench.worker` process; the Pulumi SDK, both provider SDKs and "
        "gpushare's offline package are imported before the clock starts, so no figure contains import "
        "time except what the operation itself loads (the program's own modules, Kubernetes schemas, the "
        "policy pack in its subprocess). Kinds alternate within a repetition and reverse order between "
        "repetitions; figures are medians."
    ),
    "memory": (
        "per-process RSS from /proc: rssPeakMiB is VmHWM of the sample's process, rssAddedMiB that minus "
        "its VmRSS just before the operation (every kind starts from the same imports); childRssPeakMiB is "
        "the policy pack process's VmHWM, read as the driver stops it. RSS, not tracemalloc: it counts "
        "native allocations (protobuf, gRPC, YAML) and does not slow the timed run. Not ru_maxrss: on "
        "Linux a child's ru_maxrss starts from its parent's high-water mark at exec (a 67 MB pack read "
        "106 MB through RUSAGE_CHILDREN)."
    ),
    "floor": (
        "bench/floor.py: the render's resources.json registered in order with pulumi.CustomResource / "
        "ProviderResource / ComponentResource (same types, names, inputs, parents, providers, "
        "dependencies, secrets), under the same recording monitor and mocks. Typed provider classes, "
        "stack validation, the plan and everything after the program count against gpushare."
    ),
    "checkFloor": (
        "check-floor is `check_stack` with bench/empty_pack: one resource policy that does nothing "
        "(pulumi_policy refuses an empty pack), same interpreter as the real pack."
    ),
}


@dataclass
class Run:
    """Everything measured in one `python -m bench`."""

    reps: int
    scaling_reps: int | None
    sizes: tuple[int, ...]
    modes: tuple[PluginMode, ...]
    real: dict[str, dict[str, Series]] = field(default_factory=dict)
    """stack -> kind -> series."""
    scaling: dict[PluginMode, dict[int, dict[str, Series]]] = field(default_factory=dict)
    """mode -> pools -> kind -> series."""
    config_bytes: dict[PluginMode, dict[int, int]] = field(default_factory=dict)
    max_pools: dict[str, int] = field(default_factory=dict)
    test_suite: dict[str, Any] | None = None
    live: live.LiveRun | None = None
    started: float = field(default_factory=time.monotonic)

    def reps_for(self, pools: int) -> int:
        if self.scaling_reps is not None:
            return self.scaling_reps
        return 1 if pools > SINGLE_RUN_ABOVE_POOLS else min(self.reps, MAX_SCALING_REPS)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _sample_line(sample: Sample, elapsed: float) -> str:
    if sample.error is not None:
        first = sample.error.strip().splitlines()[-1] if sample.error.strip() else "failed"
        return f"FAILED: {first}"
    return f"{sample.seconds:7.2f} s  peak {sample.rss_peak_kib / 1024:6.0f} MiB   [{elapsed:5.0f} s elapsed]"


def _measure_stack(run: Run, project: Path, out_root: Path, stack: str, reps: int) -> dict[str, Series]:
    series = {kind: Series(kind, stack) for kind in RATIO_KINDS}
    results = out_root / "results"
    for repetition in range(reps):
        for kind in alternating(RATIO_KINDS, repetition):
            sample = run_job(Job(kind, project, stack, out_root / "renders" / stack), results)
            series[kind].samples.append(sample)
            elapsed = time.monotonic() - run.started
            _log(f"  {stack:<22} {kind:<11} rep {repetition + 1}/{reps}  {_sample_line(sample, elapsed)}")
    return series


def run_test_suite() -> dict[str, Any]:
    """`make test` as a subprocess, timed; the venv is brought up to date first (untimed) if needed."""
    up_to_date = subprocess.run(
        ["make", "--question", "venv/.installed"], cwd=REPO_ROOT, capture_output=True, check=False
    )
    prepared = False
    if up_to_date.returncode != 0:
        subprocess.run(["make", "venv/.installed"], cwd=REPO_ROOT, capture_output=True, check=False)
        prepared = True
    started = time.perf_counter()
    completed = subprocess.run(["make", "test"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    output = (completed.stdout + completed.stderr).strip().splitlines()
    return {
        "command": "make test",
        "seconds": seconds,
        "returncode": completed.returncode,
        "venvPreparedFirst": prepared,
        "tail": output[-5:],
    }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "revision": git_revision(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "memoryGiB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "packages": {name: _version(name) for name in ("pulumi", "pulumi_kubernetes", "pulumi_policy")},
    }


# --------------------------------------------------------------------------------------------------
# Derived figures and targets


def growth(run: Run, mode: PluginMode, kind: str, small: int, large: int) -> float | None:
    sizes = run.scaling.get(mode, {})
    if small not in sizes or large not in sizes:
        return None
    return ratio(sizes[large][kind].seconds, sizes[small][kind].seconds)


def exponents(run: Run, mode: PluginMode, kind: str) -> list[tuple[int, int, float]]:
    """log-log slope of time against pools between consecutive sizes (1 = linear, 2 = quadratic)."""
    sizes = sorted(run.scaling.get(mode, {}))
    slopes = []
    for small, large in itertools.pairwise(sizes):
        times = (run.scaling[mode][small][kind].seconds, run.scaling[mode][large][kind].seconds)
        if times[0] and times[1]:
            slopes.append((small, large, math.log(times[1] / times[0]) / math.log(large / small)))
    return slopes


@dataclass(frozen=True)
class Target:
    name: str
    value: float | None
    limit: float
    detail: str

    @property
    def holds(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "limit": self.limit,
            "holds": self.holds,
            "detail": self.detail,
        }


def targets(run: Run) -> list[Target]:
    found: list[Target] = []
    # No render/floor target: the floor registers generic `pulumi.CustomResource`s, so a limit on that ratio
    # would reward a program that leaves the SDKs' typed classes (which the engine needs for versions,
    # aliases and secret outputs). The ratios are still reported (`real.<stack>.ratios`).
    for stack, series in run.real.items():
        found.append(
            Target(
                f"check/empty-pack time, {stack}",
                ratio(series["check"].seconds, series["check-floor"].seconds),
                CHECK_TARGET,
                "check_stack with the real pack over check_stack with bench/empty_pack (program run included)",
            )
        )
    small, large = GROWTH_SIZES
    for mode in run.scaling:
        for kind in ("render", "check"):
            value = growth(run, mode, kind, small, large)
            if value is not None or run.scaling[mode].get(large):
                found.append(
                    Target(
                        f"{kind} time({large})/time({small}), {mode}",
                        value,
                        GROWTH_TARGET,
                        f"{large // small}x the pools; 10 would be exactly linear",
                    )
                )
    if run.test_suite is not None:
        found.append(
            Target(
                "make test wall time (s)",
                run.test_suite["seconds"] if run.test_suite["returncode"] == 0 else None,
                TEST_SUITE_TARGET_SECONDS,
                f"exit status {run.test_suite['returncode']}",
            )
        )
    return found


def results_json(run: Run) -> dict[str, Any]:
    scaling: dict[str, Any] = {}
    for mode, sizes in run.scaling.items():
        scaling[mode] = {
            "sizes": {
                str(pools): {
                    "configEnvBytes": run.config_bytes.get(mode, {}).get(pools),
                    "repetitions": run.reps_for(pools),
                    **{kind: series.to_json() for kind, series in kinds.items()},
                }
                for pools, kinds in sorted(sizes.items())
            },
            "growth": {
                kind: {
                    f"{large}/{small}": growth(run, mode, kind, small, large)
                    for small, large in [(min(sizes), max(sizes)), GROWTH_SIZES]
                    if small in sizes and large in sizes and small < large
                }
                for kind in RATIO_KINDS
            },
            "exponents": {
                kind: [{"from": a, "to": b, "exponent": e} for a, b, e in exponents(run, mode, kind)]
                for kind in RATIO_KINDS
            },
        }
    return {
        "environment": environment(),
        "method": METHOD,
        "options": {
            "reps": run.reps,
            "scalingReps": {str(pools): run.reps_for(pools) for pools in run.sizes},
            "sizes": list(run.sizes),
            "modes": list(run.modes),
        },
        "real": {
            stack: {
                **{kind: s.to_json() for kind, s in series.items()},
                "ratios": {
                    "renderTime": ratio(series["render"].seconds, series["floor"].seconds),
                    "renderPeakRss": ratio(series["render"].rss_peak_mib, series["floor"].rss_peak_mib),
                    "renderAddedRss": ratio(series["render"].rss_added_mib, series["floor"].rss_added_mib),
                    "checkTime": ratio(series["check"].seconds, series["check-floor"].seconds),
                    "checkPackPhase": ratio(
                        series["check"].phase(report.PACK_PHASE),
                        series["check-floor"].phase(report.PACK_PHASE),
                    ),
                },
            }
            for stack, series in run.real.items()
        },
        "scaling": scaling,
        "configLimit": {
            "envStringLimitBytes": synthetic.ENV_STRING_LIMIT,
            "maxPools": run.max_pools,
            "note": (
                "the CLI passes the whole stack config to a policy pack (and the Python language host to the "
                "program) as PULUMI_CONFIG; Linux refuses a single environment string over 128 KiB "
                "(pulumi/pulumi#20402)"
            ),
        },
        "testSuite": run.test_suite,
        **(live.results_json(run.live) if run.live is not None else {}),
        "targets": [t.to_json() for t in targets(run)],
        "elapsedSeconds": time.monotonic() - run.started,
    }


# --------------------------------------------------------------------------------------------------
# Entry point


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of pool counts: {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("pool counts must be positive")
    return sizes


def _modes(text: str) -> tuple[PluginMode, ...]:
    known: dict[str, PluginMode] = {mode: mode for mode in PLUGIN_MODES}
    try:
        return tuple(known[part.strip()] for part in text.split(","))
    except KeyError as err:
        raise argparse.ArgumentTypeError(
            f"unknown mode {err.args[0]!r} (known: {', '.join(PLUGIN_MODES)})"
        ) from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: sizes {QUICK_SIZES}, {QUICK_REPS} repetitions, 1 per size",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        help=f"pool counts of the synthetic stacks (default {','.join(map(str, DEFAULT_SIZES))})",
    )
    parser.add_argument(
        "--reps",
        type=_positive,
        help=f"repetitions for prod/staging (default {DEFAULT_REPS}); synthetic stacks run min(reps, "
        f"{MAX_SCALING_REPS}), once above {SINGLE_RUN_ABOVE_POOLS} pools",
    )
    parser.add_argument("--scaling-reps", type=_positive, help="repetitions for every synthetic size")
    parser.add_argument(
        "--modes",
        type=_modes,
        default=PLUGIN_MODES,
        help="device-plugin modes, comma-separated (default: both)",
    )
    parser.add_argument("--skip-test-suite", action="store_true", help="do not time `make test`")
    parser.add_argument(
        "--cluster-sizes",
        type=_sizes,
        help="GPU nodes of the synthetic clusters `verify` reads (default "
        f"{','.join(map(str, live.DEFAULT_CLUSTER_SIZES))})",
    )
    parser.add_argument(
        "--fleet-sizes",
        type=_sizes,
        help=f"services of the synthetic fleet files (default {','.join(map(str, live.DEFAULT_FLEET_SIZES))})",
    )
    parser.add_argument(
        "--live-reps",
        type=_positive,
        help=f"repetitions for verify and advise --fleet (default {live.DEFAULT_LIVE_REPS}, 1 with --quick)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--live-only",
        action="store_true",
        help="only verify against cluster size and advise --fleet against fleet size (no render, check, "
        "config limit or test suite)",
    )
    which.add_argument("--skip-live", action="store_true", help="no verify or advise --fleet benchmark")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="JSON output")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help="PNG output")
    parser.add_argument("--keep", action="store_true", help="keep the scratch project and renders")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 also when a target could not be measured (n/a; a missed target always exits 1)",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="measure nothing: print the table and plot from --results"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.report_only:
        data = json.loads(args.results.read_text())
        print(report.table(data))
        plotted = report.plot(data, args.plot)
        print(f"\nPlot: {_shown(args.plot)}" if plotted else f"\nNo plot: {report.NO_PLOT}")
        return 0
    modes: tuple[PluginMode, ...] = args.modes
    run = Run(
        reps=args.reps or (QUICK_REPS if args.quick else DEFAULT_REPS),
        scaling_reps=args.scaling_reps or (1 if args.quick else None),
        sizes=args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES),
        modes=modes,
    )
    if not args.skip_live:
        run.live = live.LiveRun(
            reps=args.live_reps or (1 if args.quick else live.DEFAULT_LIVE_REPS),
            cluster_sizes=args.cluster_sizes
            or (live.QUICK_CLUSTER_SIZES if args.quick else live.DEFAULT_CLUSTER_SIZES),
            fleet_sizes=args.fleet_sizes
            or (live.QUICK_FLEET_SIZES if args.quick else live.DEFAULT_FLEET_SIZES),
        )
    if args.live_only:
        run.sizes, run.modes = (), ()
    else:
        _measure_offline(run, args)
    if run.live is not None:
        _log(f"verify and advise --fleet, {run.live.reps} repetition(s) per size:")
        live.measure_verify(run.live, _log, run.started)
        live.measure_fleet(run.live, _log, run.started)
    data = results_json(run)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    print(report.table(data))
    plotted = report.plot(data, args.plot)
    unplotted = report.NO_PLOT if data["scaling"] else "no scaling figures measured"
    print(
        f"\nResults: {_shown(args.results)}"
        + (f"; plot: {_shown(args.plot)}" if plotted else "; no plot: " + unplotted)
    )
    errors = [
        error
        for per_stack in [*run.real.values(), *(k for sizes in run.scaling.values() for k in sizes.values())]
        for series in per_stack.values()
        for error in series.errors
    ] + (run.live.errors if run.live is not None else [])
    if errors:
        print(f"\n{len(errors)} sample(s) failed; the first error:\n{errors[0]}", file=sys.stderr)
        return 1
    return exit_status(targets(run), strict=args.strict)


def exit_status(found: Sequence[Target], *, strict: bool) -> int:
    """A target measured and missed fails the run (`make bench` exits 1, as the report says MISSED); one
    not measured (n/a: a quick run has no 500-pool figure) fails it only with --strict."""
    missed = [t for t in found if t.holds is False]
    unmeasured = [t for t in found if t.holds is None]
    if missed:
        print(f"\nMISSED: {', '.join(t.name for t in missed)}", file=sys.stderr)
    return 1 if missed or (strict and unmeasured) else 0


def _measure_offline(run: Run, args: argparse.Namespace) -> None:
    """Render and check: the real stacks, the synthetic ones, the config limit, `make test`."""
    scratch = Path(tempfile.mkdtemp(prefix="gpushare-bench-"))
    try:
        project = synthetic.make_project(scratch / "project", copy_stacks=REAL_STACKS)
        _log(f"Scratch project {project} (pack interpreter: {synthetic.pack_venv()})")
        _log(f"Real stacks, {run.reps} repetitions each:")
        for stack in REAL_STACKS:
            run.real[stack] = _measure_stack(run, project, scratch, stack, run.reps)
        for pools in run.sizes:
            for mode in run.modes:
                synthetic_stack = synthetic.write_stack(project, pools, mode)
                stack_name = synthetic_stack.name
                run.config_bytes.setdefault(mode, {})[pools] = synthetic.config_env_bytes(project, stack_name)
                _log(f"Synthetic stack {stack_name}, {run.reps_for(pools)} repetition(s):")
                series = _measure_stack(run, project, scratch, stack_name, run.reps_for(pools))
                run.scaling.setdefault(mode, {})[pools] = series
        for sources in (False, True):
            key = "withProvenanceStrings" if sources else "terse"
            run.max_pools[key] = synthetic.max_pools_under_limit(project, sources=sources)
        if not args.skip_test_suite:
            _log("make test ...")
            run.test_suite = run_test_suite()
    finally:
        if args.keep:
            _log(f"Kept {scratch}")
        else:
            synthetic.remove_project(scratch)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
