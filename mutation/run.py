"""`python -m mutation` (`make mutation`): sample single-token mutants of the decision logic, run the tests
each one affects, and write what survives to out/mutation/.

The mutants are made in a copy of the project (out/mutation/work/tree-N, one per job), never in the
working tree: each is written, its affected test files run with `pytest -x` (stop at the first failure)
under a per-mutant timeout, and the original is put back. A baseline run in the copy first proves the
suite green there and times each test file, so that the affected files run fastest first and the timeout
follows what they cost. docs/mutation-testing.md says how to read the results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import Queue
from typing import Any

import yaml

from mutation import forked
from mutation.sites import Site, find_sites, parses
from mutation.test_map import ENGINE_MARK, UNTIMED, TestMap, build_test_map, module_name

PROJECT = Path(__file__).resolve().parent.parent
# The decision logic: the tool, the program's components and the policy pack.
TARGETS = ("gpushare", "components", "policies")
EQUIVALENTS = PROJECT / "mutation" / "equivalents.yaml"
DEFAULT_OUT = PROJECT / "out" / "mutation"
# Test files run on their own before the rest of a mutant's affected files.
FIRST_STAGE = 2


@dataclass(frozen=True)
class Outcome:
    key: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    original: str
    replacement: str
    kind: str
    before: str  # the source line
    after: str  # the mutated line
    status: str  # killed | survived | timeout | equivalent
    seconds: float
    tests: tuple[str, ...]  # the test files run, in order
    killed_by: str | None  # the first failing test (pytest's node id), when known
    why: str | None = None  # for `equivalent`: the reason mutation/equivalents.yaml gives


# --------------------------------------------------------------------------------------------------------
# Sites and the sample


def target_files(project: Path) -> list[str]:
    files = []
    for package in TARGETS:
        for path in sorted((project / package).rglob("*.py")):
            if "venv" not in path.parts:
                files.append(path.relative_to(project).as_posix())
    return files


def sample_sites(project: Path, count: int, seed: int, only: Sequence[str] = ()) -> list[Site]:
    """`count` distinct mutants drawn uniformly from every site of the targets (or of `only`)."""
    files = [f for f in target_files(project) if not only or any(f.startswith(o) for o in only)]
    sites = [site for relative in files for site in find_sites(project, relative)]
    random.Random(seed).shuffle(sites)
    sources = {relative: (project / relative).read_text(encoding="utf-8") for relative in files}
    chosen: list[Site] = []
    for site in sites:
        if len(chosen) == count:
            break
        if parses(site, sources[site.path]):
            chosen.append(site)
    return chosen


def _site_of(outcome: Outcome) -> Site:
    return Site(
        outcome.path,
        outcome.line,
        outcome.col,
        outcome.end_line,
        outcome.end_col,
        outcome.original,
        outcome.replacement,
        outcome.kind,
    )


Equivalents = dict[tuple[str, str, str, str, int | None], str]


def load_equivalents(path: Path = EQUIVALENTS) -> Equivalents:
    """(path, stripped source line, original, replacement, column) -> why the mutant changes nothing a user
    sees. `column` is None for an entry without one (every occurrence of the token on that line); with
    one, the entry covers only the mutant at that column (the `col` of its `path:line:col` key), so a line
    holding two `or`s can excuse one and leave the other to the tests."""
    if not path.is_file():
        return {}
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    return {
        (e["path"], e["line"].strip(), str(e["original"]), str(e["replacement"]), e.get("column")): e["why"]
        for e in entries
    }


def equivalence(equivalents: Equivalents, site: Site, line: str) -> str | None:
    """Why `site` (on source `line`) is equivalent, from the entry for its column or else the line's."""
    token = (site.path, line.strip(), site.original, site.replacement)
    return equivalents.get((*token, site.col)) or equivalents.get((*token, None))


def _line(source: str, number: int) -> str:
    return source.splitlines()[number - 1]


# --------------------------------------------------------------------------------------------------------
# The copies


def _project_listing(project: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=project,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (project / name).is_file()]


def make_tree(project: Path, work: Path, index: int, shared: Path | None) -> Path:
    """A copy of the project's files (tracked and new, not ignored) at work/tree-<index>, with the
    reference tree linked beside it as ../shared, where the tests look for the pinned charts."""
    holder = work / f"job-{index}"
    tree = holder / "tree"
    if holder.exists():
        shutil.rmtree(holder)
    tree.mkdir(parents=True)
    for name in _project_listing(project):
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project / name, target)
    if shared is not None:
        (holder / "shared").symlink_to(shared)
    return tree


def _pytest(
    tree: Path, python: str, args: Sequence[str], timeout: float, bytecode: bool, fork: bool = False
) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Not the engine tests: they need `make engine`'s tools, which the project's copy has not (test_map).
    options = ["-p", "no:cacheprovider", "-o", "addopts=", "-m", f"not {ENGINE_MARK}", "-q", "-rf", *args]
    if fork:
        return forked.run_pytest(tree, options, timeout, env)
    command = [python, "-m", "pytest", *options]
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout if isinstance(expired.stdout, str) else ""
        return None, output
    return done.returncode, done.stdout + done.stderr


def baseline(tree: Path, python: str, out: Path, jobs: int) -> dict[str, float]:
    """Run the whole suite once in the copy: it must pass; returns each test file's seconds."""
    report = out / "baseline.xml"
    workers = ["-n", str(jobs), "--dist", "loadfile"] if jobs > 1 else ["-p", "no:xdist"]
    code, output = _pytest(tree, python, [*workers, f"--junitxml={report}"], timeout=3600, bytecode=True)
    if code != 0:
        tail = "\n".join(output.splitlines()[-30:])
        raise SystemExit(f"mutation: the suite does not pass unmutated in {tree} (exit {code}):\n{tail}")
    durations: dict[str, float] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        parts = (case.get("classname") or "").split(".")  # tests.test_fleet[.Class]
        if len(parts) >= 2:
            file = f"{parts[0]}/{parts[1]}.py"
            durations[file] = durations.get(file, 0.0) + float(case.get("time") or 0)
    (out / "baseline.json").write_text(json.dumps(dict(sorted(durations.items())), indent=2) + "\n")
    return dict(durations)


# --------------------------------------------------------------------------------------------------------
# One mutant


def _first_failure(output: str) -> str | None:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ")[0]
    return None


def run_mutant(
    site: Site,
    tree: Path,
    python: str,
    test_map: TestMap,
    durations: dict[str, float],
    equivalents: Equivalents,
    timeout_factor: float,
    min_timeout: float,
    budget: float,
    fork: bool,
) -> Outcome:
    path = tree / site.path
    original = path.read_text(encoding="utf-8")
    mutated = site.apply(original)
    tests = test_map.affected(module_name(site.path), durations, budget)
    before, after = _line(original, site.line), _line(mutated, site.line)
    if (
        site.line == site.end_line
        and before.encode()[site.col : site.end_col].decode(errors="replace") != site.original
    ):
        raise SystemExit(f"mutation: {site.key} no longer matches {site.path} (changed since the run?)")
    why = equivalence(equivalents, site, before)

    def outcome(
        status: str, seconds: float, killed_by: str | None = None, reason: str | None = None
    ) -> Outcome:
        return Outcome(
            site.key,
            site.path,
            site.line,
            site.col,
            site.end_line,
            site.end_col,
            site.original,
            site.replacement,
            site.kind,
            before,
            after,
            status,
            seconds,
            tuple(tests),
            killed_by,
            reason,
        )

    if not tests:
        return outcome("survived", 0.0, reason="no test reaches it")
    cache = path.parent / "__pycache__"
    started = time.monotonic()
    code: int | None = 0
    output = ""
    try:
        path.write_text(mutated, encoding="utf-8")
        for stale in cache.glob(f"{path.stem}.*.pyc"):
            stale.unlink()  # a same-size change within the same second would reuse it
        # The nearest files alone first: most mutants die there, without collecting the rest.
        for stage in (tests[:FIRST_STAGE], tests[FIRST_STAGE:]):
            if not stage:
                continue
            timeout = max(min_timeout, timeout_factor * sum(durations.get(t, UNTIMED) for t in stage))
            code, output = _pytest(tree, python, ["-x", "-p", "no:xdist", *stage], timeout, False, fork)
            if code != 0:
                break
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = round(time.monotonic() - started, 1)
    if code is None:
        return outcome("timeout", seconds)
    if code == 0:
        return outcome("equivalent" if why else "survived", seconds, reason=why)
    return outcome("killed", seconds, _first_failure(output) or f"exit {code}")


# --------------------------------------------------------------------------------------------------------
# The run


def _shared_dir(project: Path, given: str | None) -> Path | None:
    for candidate in (given, os.environ.get("GPUSHARE_SHARED_DIR"), str(project.parent / "shared")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate).resolve()
    return None


def write_report(out: Path, seed: int, outcomes: list[Outcome], elapsed: float) -> dict[str, Any]:
    counts = Counter(o.status for o in outcomes)
    decided = counts["killed"] + counts["timeout"] + counts["survived"]
    score = (counts["killed"] + counts["timeout"]) / decided if decided else 1.0
    summary: dict[str, Any] = {
        "seed": seed,
        "mutants": len(outcomes),
        "killed": counts["killed"],
        "timeout": counts["timeout"],
        "survived": counts["survived"],
        "equivalent": counts["equivalent"],
        "score": round(score, 4),
        "seconds": round(elapsed),
        "byPackage": {
            package: {
                status: sum(1 for o in outcomes if o.path.startswith(package) and o.status == status)
                for status in ("killed", "timeout", "survived", "equivalent")
            }
            for package in TARGETS
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({**summary, "outcomes": [asdict(o) for o in outcomes]}, indent=2) + "\n"
    )
    lines = [f"# Survivors of `make mutation` (seed {seed}): {counts['survived']} of {len(outcomes)}", ""]
    for outcome in sorted(outcomes, key=lambda o: o.key):
        if outcome.status not in ("survived", "equivalent"):
            continue
        label = "SURVIVED" if outcome.status == "survived" else "equivalent"
        lines += [
            f"## {label}: {outcome.key}",
            f"-    {outcome.before.strip()}",
            f"+    {outcome.after.strip()}",
            f"ran: {', '.join(outcome.tests) or 'no test reaches it'}",
        ]
        if outcome.why:
            lines.append(f"why: {outcome.why}")
        lines.append("")
    (out / "survivors.md").write_text("\n".join(lines))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=200, help="how many mutants (default 200)")
    parser.add_argument("--seed", type=int, help="the sample's seed (default: a new one, printed)")
    parser.add_argument(
        "--only", action="append", default=[], help="mutate only files under this path prefix"
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy")
    parser.add_argument(
        "--timeout-factor", type=float, default=3.0, help="x the affected tests' baseline time"
    )
    parser.add_argument("--min-timeout", type=float, default=60.0, help="seconds at least per mutant")
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="baseline seconds of affected test files to run per mutant, nearest first (default 60)",
    )
    parser.add_argument(
        "--shared", help="the reference tree (pinned charts); default $GPUSHARE_SHARED_DIR, ../shared"
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where results go (default out/mutation)")
    parser.add_argument("--list", action="store_true", help="print the sample and stop")
    parser.add_argument(
        "--rerun",
        metavar="RESULTS",
        help="run again only the survivors and timeouts of a results.json (same seed), keeping the kills",
    )
    parser.add_argument(
        "--no-fork",
        action="store_true",
        help="a fresh interpreter per mutant (slower; see mutation/forked.py)",
    )
    parser.add_argument(
        "--reuse-baseline", action="store_true", help="take the test files' times from the last baseline.json"
    )
    args = parser.parse_args(argv)

    kept: list[Outcome] = []
    if args.rerun:
        previous_run = json.loads(Path(args.rerun).read_text())
        seed = int(previous_run["seed"])
        earlier = [Outcome(**{**o, "tests": tuple(o["tests"])}) for o in previous_run["outcomes"]]
        again = ("survived", "equivalent", "timeout")  # a timeout may be a slow machine, not a kill
        kept = [o for o in earlier if o.status not in again]
        sites = [_site_of(o) for o in earlier if o.status in again]
        print(f"mutation: seed {seed}: running the {len(sites)} survivors of {args.rerun} again", flush=True)
    else:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
        print(f"mutation: seed {seed} (repeat with --seed {seed})", flush=True)
        sites = sample_sites(PROJECT, args.sample, seed, args.only)
    if args.list:
        for site in sites:
            print(site.key)
        return 0
    out = Path(args.out)
    work = out / "work"
    shared = _shared_dir(PROJECT, args.shared)
    python = sys.executable
    trees = [make_tree(PROJECT, work, index, shared) for index in range(max(1, args.jobs))]
    print(f"mutation: {len(sites)} mutants, in copies of the project under {work}", flush=True)
    started = time.monotonic()
    previous = out / "baseline.json"
    if args.reuse_baseline and previous.is_file():
        durations = json.loads(previous.read_text())
    else:
        durations = baseline(trees[0], python, out, max(1, args.jobs))
    test_map = build_test_map(trees[0])
    equivalents = load_equivalents()
    if not args.no_fork:
        forked.preload()
    free: Queue[Path] = Queue()
    for tree in trees:
        free.put(tree)
    outcomes: list[Outcome] = list(kept)

    def one(site: Site) -> Outcome:
        tree = free.get()
        try:
            return run_mutant(
                site,
                tree,
                python,
                test_map,
                durations,
                equivalents,
                args.timeout_factor,
                args.min_timeout,
                args.budget,
                not args.no_fork,
            )
        finally:
            free.put(tree)

    with ThreadPoolExecutor(max_workers=len(trees)) as pool:
        for number, outcome in enumerate(pool.map(one, sites), start=1):
            outcomes.append(outcome)
            print(
                f"[{number}/{len(sites)}] {outcome.status:10} {outcome.seconds:6.1f}s {outcome.key}",
                flush=True,
            )
            write_report(out, seed, outcomes, time.monotonic() - started)
    summary = write_report(out, seed, outcomes, time.monotonic() - started)
    print(
        f"mutation: seed {seed}: {summary['killed']} killed, {summary['timeout']} timed out, "
        f"{summary['survived']} survived, {summary['equivalent']} argued equivalent "
        f"(mutation/equivalents.yaml) of {summary['mutants']}; score {float(summary['score']):.1%} of the "
        f"non-equivalent; survivors in {out / 'survivors.md'}",
        flush=True,
    )
    return 0
