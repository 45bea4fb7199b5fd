"""Running worker samples (each in a fresh interpreter) and summarising repeated ones by their medians."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.synthetic import REPO_ROOT
from bench.worker import Sample

SAMPLE_TIMEOUT_SECONDS: Final = 900.0
# Kinds in the order one repetition runs them; odd repetitions run them backwards, so each kind
# sits before and after the others equally often (the first repetition must render before the floor).
RATIO_KINDS: Final = ("render", "floor", "check", "check-floor")


@dataclass(frozen=True)
class Job:
    kind: str
    project: Path
    stack: str
    out: Path
    """The stack's render directory: `render` writes it, `floor` reads it."""


def run_job(job: Job, result_dir: Path, *, timeout: float = SAMPLE_TIMEOUT_SECONDS) -> Sample:
    """One sample in a fresh `python -m bench.worker` (see bench/worker.py)."""
    result_dir.mkdir(parents=True, exist_ok=True)
    result = result_dir / f"{job.stack}.{job.kind}.{time.monotonic_ns()}.json"
    command = [
        sys.executable,
        "-m",
        "bench.worker",
        job.kind,
        "--project",
        str(job.project),
        "--stack",
        job.stack,
        "--out",
        str(job.out),
        "--render-dir",
        str(job.out),
        "--result",
        str(result),
    ]
    try:
        completed = subprocess.run(
            command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Sample(kind=job.kind, stack=job.stack, error=f"timed out after {timeout:.0f} s")
    if not result.exists():
        tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
        return Sample(kind=job.kind, stack=job.stack, error=f"worker exited {completed.returncode}: {tail}")
    sample = Sample.from_json(json.loads(result.read_text()))
    result.unlink()
    return sample


def run_process(
    kind: str, label: str, command: Sequence[str], *, timeout: float = SAMPLE_TIMEOUT_SECONDS
) -> Sample:
    """One sample of a whole command as a user runs it (interpreter start and imports included): its wall
    time, and its user + system CPU from RUSAGE_CHILDREN. No memory figure: a child's ru_maxrss starts
    from its parent's high-water mark (bench/worker.py). A non-zero exit is a failed sample."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            list(command), cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Sample(kind=kind, stack=label, error=f"timed out after {timeout:.0f} s")
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-15:])
        return Sample(kind=kind, stack=label, error=f"exited {completed.returncode}: {tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(kind=kind, stack=label, seconds=seconds, cpu_seconds=cpu)


def alternating(kinds: Sequence[str], repetition: int) -> list[str]:
    return list(kinds) if repetition % 2 == 0 else list(reversed(kinds))


def median(values: Iterable[float]) -> float | None:
    data = list(values)
    return statistics.median(data) if data else None


@dataclass
class Series:
    """Every sample of one kind for one stack, and their medians."""

    kind: str
    stack: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.error is None]

    @property
    def errors(self) -> list[str]:
        return [s.error for s in self.samples if s.error is not None]

    def _median(self, value: Callable[[Sample], float]) -> float | None:
        return median(value(s) for s in self.ok)

    @property
    def seconds(self) -> float | None:
        return self._median(lambda s: s.seconds)

    @property
    def cpu_seconds(self) -> float | None:
        return self._median(lambda s: s.cpu_seconds)

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the wall times: how much repetitions disagree."""
        times = [s.seconds for s in self.ok]
        middle = median(times)
        if not times or not middle:
            return None
        return (max(times) - min(times)) / middle

    @property
    def rss_peak_mib(self) -> float | None:
        value = self._median(lambda s: s.rss_peak_kib)
        return None if value is None else value / 1024

    @property
    def rss_added_mib(self) -> float | None:
        value = self._median(lambda s: s.rss_added_kib)
        return None if value is None else value / 1024

    @property
    def children_rss_peak_mib(self) -> float | None:
        value = self._median(lambda s: s.children_rss_peak_kib)
        return None if value is None else value / 1024

    @property
    def gc_seconds(self) -> float | None:
        return self._median(lambda s: s.gc_seconds)

    def phase(self, name: str) -> float | None:
        return median(s.phases[name] for s in self.ok if name in s.phases)

    @property
    def phase_names(self) -> list[str]:
        names: dict[str, None] = {}
        for sample in self.ok:
            names.update(dict.fromkeys(sample.phases))
        return list(names)

    @property
    def resources(self) -> int | None:
        return self.ok[0].resources if self.ok else None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "stack": self.stack,
            "repetitions": len(self.samples),
            "failed": len(self.errors),
            "errors": self.errors,
            "median": {
                "seconds": self.seconds,
                "rssPeakMiB": self.rss_peak_mib,
                "rssAddedMiB": self.rss_added_mib,
                "childRssPeakMiB": self.children_rss_peak_mib,
                "gcSeconds": self.gc_seconds,
                "phases": {name: self.phase(name) for name in self.phase_names},
            },
            "spread": self.spread,
            "resources": self.resources,
            "samples": [s.to_json() for s in self.samples],
        }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


# The committed figures (`make bench-update` copies a run's out/bench/ over them): a change there says
# nothing about the code measured.
BENCH_OUTPUTS: Final = ("bench/results.json", "bench/scaling.png", "bench/process_cpu.json")


def git_revision() -> str:
    """The checkout's short commit, marked when it has uncommitted changes (other than BENCH_OUTPUTS)."""
    excluded = [f":(exclude){path}" for path in BENCH_OUTPUTS]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", ".", *excluded],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' (with uncommitted changes)' if dirty else ''}"
