"""`python -m bench.profiling`: which functions grow faster than the number of pools (cProfile, two sizes).

Renders (or runs the floor or the check for) a small and a large synthetic stack in fresh workers under
cProfile (`bench/worker.py --profile`), then lists the functions that take the most time at the large
size with how their time and call counts grew. A function whose calls grow like the pools but whose
time grows much faster (per-call time rising with the stack), or whose calls grow like the square of
the pools, is a step that is quadratic in pools; the cyclic garbage collector's share is shown
separately, since its pauses land in whatever function allocates (`--disable-gc` tells them apart).

`--kind pack` profiles the real policy pack's own process instead (bench/pack_profiler.py), over the
resources of the same stacks: that is where the rules run.

    venv/bin/python -m bench.profiling --kind render --mode daemonsets --sizes 50,500
    venv/bin/python -m bench.profiling --kind pack --sizes 100,500
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench import synthetic
from bench.synthetic import PLUGIN_MODES, REPO_ROOT
from gpushare.stack.model import PROJECT

# Waiting, not working: a thread blocked on another (the program's thread, gRPC's queues, a sleep).
_WAITS: Final = (
    "acquire' of '_thread.lock",
    "get' of '_queue.SimpleQueue",
    "time.sleep",
    "wait' of 'threading.Condition",
    "_server.py:1311 _serve",
    "select.epoll",
)
SUPERLINEAR: Final = 1.5
"""Flag a function when its time grows this many times faster than the pools."""


@dataclass(frozen=True)
class Row:
    function: str
    small_seconds: float
    large_seconds: float
    small_calls: int
    large_calls: int

    @property
    def growth(self) -> float:
        return self.large_seconds / max(self.small_seconds, 1e-4)


def _label(key: tuple[str, int, str]) -> str:
    file, line, name = key
    for root in (str(REPO_ROOT) + "/", "site-packages/"):
        if root in file:
            file = file.split(root, 1)[1]
    return f"{file}:{line} {name}" if line else name


def _profile(
    kind: str, project: Path, stack: str, scratch: Path, extra: Sequence[str]
) -> tuple[pstats.Stats, float, float]:
    """(stats, seconds, gc seconds) of one profiled worker run; a render first when the floor needs one."""
    render_dir = scratch / "renders" / stack
    if kind == "floor" and not render_dir.exists():
        _worker("render", project, stack, render_dir, scratch / "unused.json", None, ())
    result = scratch / f"{stack}.{kind}.json"
    profile = scratch / f"{stack}.{kind}.prof"
    _worker(kind, project, stack, render_dir, result, profile, extra)
    sample = json.loads(result.read_text())
    if sample.get("error"):
        raise SystemExit(f"{kind} {stack} failed:\n{sample['error']}")
    return pstats.Stats(str(profile)), float(sample["seconds"]), float(sample["gc_seconds"])


def _profile_pack(project: Path, stack: str, scratch: Path) -> tuple[pstats.Stats, float, float]:
    """(stats, seconds, 0) of the real pack's process analysing the stack's resources."""
    from bench import pack_profiler
    from gpushare.offline import policy_driver
    from gpushare.offline.check import POLICY_PACK_DIR, analyzed_resources
    from gpushare.offline.render import run_stack

    wrapper = scratch / "pack-python"
    if not wrapper.exists():
        # The driver runs `<python> -u -m pulumi.policy ENGINE DIR`: drop the first three, keep ENGINE DIR.
        script = Path(pack_profiler.__file__).resolve()
        wrapper.write_text(f'#!/bin/sh\nshift 3\nexec "{sys.executable}" -u "{script}" "$@"\n')
        wrapper.chmod(0o755)
    stack_run = run_stack(project, stack)
    output = scratch / f"{stack}.pack.prof"
    os.environ[pack_profiler.OUTPUT_VARIABLE] = str(output)
    started = time.perf_counter()
    policy_driver.run_policy_pack(
        project / POLICY_PACK_DIR,
        analyzed_resources(stack_run),
        stack=stack,
        project=PROJECT,
        config=stack_run.raw_config,
        secret_keys=stack_run.secret_keys,
        python=str(wrapper),
        timeout=1800,
    )
    seconds = time.perf_counter() - started
    return pstats.Stats(str(output)), seconds, 0.0


def _worker(
    kind: str, project: Path, stack: str, out: Path, result: Path, profile: Path | None, extra: Sequence[str]
) -> None:
    command = [sys.executable, "-m", "bench.worker", kind, "--project", str(project), "--stack", stack]
    command += ["--out", str(out), "--render-dir", str(out), "--result", str(result), *extra]
    if profile is not None:
        command += ["--profile", str(profile)]
    subprocess.run(command, cwd=REPO_ROOT, check=False, capture_output=True)


def compare(small: pstats.Stats, large: pstats.Stats) -> list[Row]:
    small_stats = small.stats  # type: ignore[attr-defined]  # pstats keeps its table in an untyped attribute
    large_stats = large.stats  # type: ignore[attr-defined]
    rows = []
    for key, (_, large_calls, large_tottime, _, _) in large_stats.items():
        label = _label(key)
        if any(wait in label for wait in _WAITS):
            continue
        _, small_calls, small_tottime, _, _ = small_stats.get(key, (0, 0, 0.0, 0.0, {}))
        rows.append(Row(label, small_tottime, large_tottime, small_calls, large_calls))
    return sorted(rows, key=lambda row: row.large_seconds, reverse=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profiling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kind", choices=("render", "floor", "check", "pack"), default="render")
    parser.add_argument("--mode", choices=PLUGIN_MODES, default="daemonsets")
    parser.add_argument("--sizes", default="50,500", help="small,large pool counts (default 50,500)")
    parser.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    parser.add_argument(
        "--disable-gc",
        action="store_true",
        help="turn the cyclic GC off in the workers (to tell its pauses apart)",
    )
    args = parser.parse_args(argv)
    small_pools, large_pools = sorted(int(part) for part in args.sizes.split(","))
    scale = large_pools / small_pools
    with tempfile.TemporaryDirectory(prefix="gpushare-profile-") as scratch_name:
        scratch = Path(scratch_name)
        project = synthetic.make_project(scratch / "project")
        runs = []
        for pools in (small_pools, large_pools):
            stack = synthetic.write_stack(project, pools, args.mode)
            print(f"profiling {args.kind} of {stack.name} ...", file=sys.stderr, flush=True)
            extra = ["--disable-gc"] if args.disable_gc else []
            if args.kind == "pack":
                runs.append(_profile_pack(project, stack.name, scratch))
            else:
                runs.append(_profile(args.kind, project, stack.name, scratch, extra))
    (small, small_seconds, small_gc), (large, large_seconds, large_gc) = runs
    gc_note = (
        f", of which cyclic GC {small_gc:.1f} -> {large_gc:.1f} s ({large_gc / max(small_gc, 1e-3):.1f}x)"
        if args.kind != "pack"
        else " (the pack's process; GC not measured)"
    )
    print(
        f"{args.kind}, {args.mode}: {small_pools} -> {large_pools} pools ({scale:g}x); wall time under cProfile "
        f"{small_seconds:.1f} -> {large_seconds:.1f} s ({large_seconds / small_seconds:.1f}x){gc_note}"
    )
    print(
        f"\nTop {args.top} functions by own time at {large_pools} pools ('!' = time or calls grew over "
        f"{SUPERLINEAR:g}x faster than the pools)"
    )
    print(f"  {'own s':>7} {'growth':>7} {'calls':>17}  function")
    for row in compare(small, large)[: args.top]:
        print(_line(row, scale))
    mine = [row for row in compare_cumulative(small, large) if _is_repo_code(row.function)]
    print(f"\nThe repository's own functions by cumulative time at {large_pools} pools")
    print(f"  {'cum s':>7} {'growth':>7} {'calls':>17}  function")
    for row in mine[: args.top]:
        print(_line(row, scale))
    return 0


def _line(row: Row, scale: float) -> str:
    call_growth = row.large_calls / max(row.small_calls, 1)
    superlinear = row.growth > SUPERLINEAR * scale or call_growth > SUPERLINEAR * scale
    mark = "!" if superlinear and row.large_seconds > 0.05 else " "
    calls = f"{row.small_calls}->{row.large_calls}"
    return f"{mark} {row.large_seconds:7.2f} {row.growth:6.1f}x {calls:>17}  {row.function}"


def _is_repo_code(label: str) -> bool:
    return label.split("/", 1)[0] in ("gpushare", "components", "policies") or "/project/" in label


def compare_cumulative(small: pstats.Stats, large: pstats.Stats) -> list[Row]:
    small_stats = small.stats  # type: ignore[attr-defined]
    large_stats = large.stats  # type: ignore[attr-defined]
    rows = []
    for key, (_, large_calls, _, large_cumtime, _) in large_stats.items():
        _, small_calls, _, small_cumtime, _ = small_stats.get(key, (0, 0, 0.0, 0.0, {}))
        rows.append(Row(_label(key), small_cumtime, large_cumtime, small_calls, large_calls))
    return sorted(rows, key=lambda row: row.large_seconds, reverse=True)


if __name__ == "__main__":
    sys.exit(main())
