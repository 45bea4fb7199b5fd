"""`python -m bench.process_cpu` (`make bench-cpu`): the CPU of whole `render` processes against a process
that only imports the SDK modules the program uses (`bench.worker.SDK_MODULES`: pulumi, and the provider
SDKs' submodules its typed classes come from).

The figure #14 asks for: user + system CPU of each child process (from `getrusage(RUSAGE_CHILDREN)`
around it), the kinds alternating so each sees the same machine, medians over `--runs`. Bytecode caches
are in place for both sides (a private `PYTHONPYCACHEPREFIX`, warmed once), as on a machine that keeps
them; `--no-bytecode-cache` measures with `PYTHONDONTWRITEBYTECODE=1` instead, where gpushare's own
modules are compiled on every run and the SDKs' installed caches still serve. Prints a table and writes
`out/bench/process_cpu.json` (untracked; `make bench-update` copies it to `bench/`); asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.measure import git_revision
from bench.synthetic import REPO_ROOT
from bench.worker import SDK_MODULES

SDK_IMPORTS: Final = f"import {', '.join(('pulumi', *SDK_MODULES))}"
DEFAULT_STACKS: Final = ("prod", "staging", "dev")
DEFAULT_RUNS: Final = 11
RESULTS: Final = REPO_ROOT / "out" / "bench" / "process_cpu.json"


@dataclass(frozen=True)
class Process:
    label: str
    argv: tuple[str, ...]


def child_cpu_seconds(argv: Sequence[str], env: dict[str, str]) -> float:
    """User + system CPU of one child process run to completion (a failing one stops the benchmark)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        tail = completed.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"bench.process_cpu: {' '.join(argv)} exited {completed.returncode}: {tail[0]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def processes(stacks: Sequence[str], out: Path, chart_dirs: Sequence[Path]) -> list[Process]:
    chart_args = [arg for directory in chart_dirs for arg in ("--chart-dir", str(directory))]
    measured = [Process("SDK imports", (sys.executable, "-c", SDK_IMPORTS))]
    for stack in stacks:
        argv = [sys.executable, "-m", "gpushare", "render", "--stack", stack, "--out", str(out / stack)]
        measured.append(Process(f"render --stack {stack}", (*argv, *chart_args)))
    return measured


def measure(measured: Sequence[Process], runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    for process in measured:  # warm-up: bytecode caches, page cache, chart cache
        child_cpu_seconds(process.argv, env)
    samples: dict[str, list[float]] = {process.label: [] for process in measured}
    for run in range(runs):
        # Alternate the order so no kind always follows another.
        for process in measured if run % 2 == 0 else reversed(measured):
            samples[process.label].append(child_cpu_seconds(process.argv, env))
    return samples


def summary(samples: dict[str, list[float]]) -> list[dict[str, object]]:
    medians = {label: statistics.median(values) for label, values in samples.items()}
    return [
        {
            "process": label,
            "cpuSeconds": round(medians[label], 3),
            "vsSdkImports": round(medians[label] / medians["SDK imports"], 2),
            "samples": [round(value, 3) for value in values],
        }
        for label, values in samples.items()
    ]


def table(rows: Sequence[dict[str, object]]) -> str:
    lines = ["| process | CPU (median) | vs the SDK imports |", "|---|---|---|"]
    lines += [f"| {r['process']} | {r['cpuSeconds']:.2f} s | {r['vsSdkImports']:.2f}x |" for r in rows]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.process_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="samples of each process")
    parser.add_argument("--stacks", nargs="+", default=list(DEFAULT_STACKS))
    # Where the charts come from is render's own rule (--chart-dir, then $GPUSHARE_CHART_DIRS, ...).
    parser.add_argument("--chart-dir", type=Path, action="append", default=[])
    bytecode = parser.add_mutually_exclusive_group()
    bytecode.add_argument("--no-bytecode-cache", action="store_true", help="PYTHONDONTWRITEBYTECODE=1")
    bytecode.add_argument(
        "--installed-bytecode",
        action="store_true",
        help="use the venv's own __pycache__ instead of a private, freshly warmed one (quicker; the tests)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="JSON output (default: out/bench/)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="gpushare-cpu-"))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    elif not args.installed_bytecode:
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    try:
        rows = summary(measure(processes(args.stacks, scratch / "out", args.chart_dir), args.runs, env))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(table(rows))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(
        json.dumps(
            {
                "date": dt.date.today().isoformat(),
                "revision": git_revision(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "runs": args.runs,
                "bytecodeCache": not args.no_bytecode_cache,
                "processes": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
