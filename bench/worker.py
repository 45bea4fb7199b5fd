"""One measurement in a fresh interpreter: `python -m bench.worker KIND --project DIR --stack NAME ...`.

Every sample of the benchmark runs in its own process, so no sample inherits another's caches, heap or
garbage, and the process's peak RSS belongs to that sample alone. Before the clock starts the worker
imports what every kind shares: the Pulumi SDK, the two provider SDKs with the submodules the program's
typed classes come from (`SDK_MODULES`) and gpushare's `offline` package. Import time is therefore in no measurement; what the
operation itself loads (the program's own modules, which `run_program` imports afresh from the project
directory, the Kubernetes schemas, the policy pack in its subprocess) is in it.

Kinds:
* `render`: `gpushare.offline.render.render_stack` into `--out` (what `make render` does after start-up).
* `floor`: `bench.floor.run_floor` over `--render-dir` (a render of the same stack; read before the clock).
* `check`: `gpushare.offline.check.check_stack` with the real pack (`<project>/policies`).
* `check-floor`: the same `check_stack` with the do-nothing pack (`<project>/empty_pack`).

Memory is RSS from /proc: `VmHWM` (the high-water mark of this process's resident memory) and `VmRSS` just
before the operation, so the difference is what the operation added; for the check kinds also the pack
process's `VmHWM`, read just before the driver stops it. Not `getrusage(...).ru_maxrss`: on Linux a
process's (and a child's) ru_maxrss starts from its parent's high-water mark at exec, so a small child
of a big parent reports the parent's size (measured here: a pack with a VmHWM of 67 MB came back from
RUSAGE_CHILDREN as 106 MB, the worker's own size). The result is one JSON object written to `--result`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import gc
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final, TypeVar

KINDS: Final = ("render", "floor", "check", "check-floor")
PHASE_PROGRAM: Final = "program (SDK + gpushare)"
PHASE_PACK: Final = "policy pack (start, RPCs, stop)"
PHASE_MANIFESTS: Final = "manifest schema validation"
PHASE_STACK_RUN: Final = "stack file + program"
_T = TypeVar("_T")


# The provider-SDK modules the program's typed classes come from (components/). Both SDKs load a submodule
# on first use, and its package imports every kind in it: what a render pays before gpushare's own work.
SDK_MODULES: Final = (
    "pulumi_kubernetes",
    "pulumi_kubernetes.apps.v1",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.helm.v3",
    "tencentcloud_iac_pulumi",
    "tencentcloud_iac_pulumi.kubernetes",
)


def prelude() -> None:
    """Import everything the kinds share, untimed (see the module docstring)."""
    import importlib

    for module_name in SDK_MODULES:
        importlib.import_module(module_name)
    import bench.floor  # noqa: F401  (loaded, not used here)
    import gpushare.offline.check
    import gpushare.offline.render  # noqa: F401


@dataclass
class Sample:
    """One measurement; `seconds` is wall time of the operation only."""

    kind: str
    stack: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    gc_seconds: float = 0.0
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    children_rss_peak_kib: int = 0
    """Peak RSS of the policy pack process (check kinds), 0 when there was none or it could not be read."""
    resources: int = 0
    files: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds spent in named steps of the operation (`_render_phases`, `_check_phases`)."""
    diagnostics: dict[str, int] = field(default_factory=dict)
    policies: int = 0
    error: str | None = None

    @property
    def rss_added_kib(self) -> int:
        return max(self.rss_peak_kib - self.rss_before_kib, 0)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["rss_added_kib"] = self.rss_added_kib
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sample:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


def proc_status_kib(field_name: str, pid: int | str = "self") -> int:
    """A memory field of /proc/<pid>/status (VmRSS, VmHWM, ...) in KiB; 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name == field_name:
                    return int(value.split()[0])
    except (OSError, ValueError):
        pass
    return 0


def current_rss_kib() -> int:
    return proc_status_kib("VmRSS")


@contextlib.contextmanager
def _pack_peak_recorder(peaks: list[int]) -> Iterator[None]:
    """Record the pack process's VmHWM as the driver stops it (its work is done by then).

    Hooks `gpushare.offline.pack_process.PackProcess.stop`: if it is ever renamed the hook is
    skipped and the pack's memory reads 0 ("not measured"), the timings are unaffected.
    """
    import gpushare.offline.pack_process as pack_processes

    pack_process = getattr(pack_processes, "PackProcess", None)
    original = getattr(pack_process, "stop", None)
    if pack_process is None or original is None:
        yield
        return

    def stop(self: Any) -> None:
        process = getattr(self, "_proc", None)
        if process is not None and process.poll() is None:
            peaks.append(proc_status_kib("VmHWM", process.pid))
        original(self)

    pack_process.stop = stop
    try:
        yield
    finally:
        pack_process.stop = original


class _GcClock:
    """Wall time spent in the cyclic garbage collector while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        gc.callbacks.append(self)
        try:
            yield
        finally:
            gc.callbacks.remove(self)


@contextlib.contextmanager
def _timed_attributes(
    targets: Sequence[tuple[ModuleType, str, str]], phases: dict[str, float]
) -> Iterator[None]:
    """Wrap `module.attribute` so the seconds spent in it add up in `phases[label]`; undone on exit.

    Only for attributes the code under test looks up through its module at call time (module globals
    and `module.function` calls), which is how `gpushare.offline.render` and `gpushare.offline.check` call these steps.
    """
    saved: list[tuple[ModuleType, str, Any]] = []

    def timed(label: str, function: Callable[..., _T]) -> Callable[..., _T]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> _T:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phases[label] = phases.get(label, 0.0) + time.perf_counter() - started

        return wrapper

    try:
        for module, attribute, label in targets:
            original = getattr(module, attribute)
            saved.append((module, attribute, original))
            setattr(module, attribute, timed(label, original))
        yield
    finally:
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)


def _render_phases() -> list[tuple[ModuleType, str, str]]:
    import gpushare.offline.render as render

    return [
        (render, "validated_stack", "validate stack file"),
        (render, "load_stack_config", "load stack config"),
        (render, "run_program", PHASE_PROGRAM),
        (render, "validate_manifests", PHASE_MANIFESTS),
        (render, "dump_yaml", "YAML output"),
        (render, "_publish", "write files"),
    ]


def _check_phases() -> list[tuple[ModuleType, str, str]]:
    import gpushare.offline.check as check
    import gpushare.offline.policy_driver as policy_driver

    return [
        (check, "run_stack", PHASE_STACK_RUN),
        (check, "analyzed_resources", "engine view of resources"),
        (policy_driver, "run_policy_pack", PHASE_PACK),
    ]


@contextlib.contextmanager
def _profiled(path: Path | None) -> Iterator[None]:
    """cProfile the operation into `path` (pstats format): this thread and every thread it starts,
    such as the one `gpushare.offline.mock_run` runs the Pulumi program on. The pack's own process is not in it."""
    if path is None:
        yield
        return
    import cProfile
    import pstats
    import threading

    thread_profilers: list[cProfile.Profile] = []

    def start_in_new_thread(frame: Any, event: str, arg: Any) -> None:
        profiler = cProfile.Profile()
        thread_profilers.append(profiler)
        profiler.enable()  # replaces this hook for the rest of the thread

    profiler = cProfile.Profile()
    threading.setprofile(start_in_new_thread)
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        threading.setprofile(None)  # None removes the hook
        stats = pstats.Stats(profiler)
        for thread_profiler in thread_profilers:
            stats.add(thread_profiler)
        stats.dump_stats(path)


def _measure(
    sample: Sample,
    operation: Callable[[], None],
    phases: Sequence[tuple[ModuleType, str, str]],
    profile: Path | None = None,
) -> None:
    clock = _GcClock()
    pack_peaks: list[int] = []
    gc.collect()
    sample.rss_before_kib = current_rss_kib()
    cpu = time.process_time()
    with (
        _timed_attributes(phases, sample.phases),
        clock.installed(),
        _pack_peak_recorder(pack_peaks),
        _profiled(profile),
    ):
        started = time.perf_counter()
        operation()
        sample.seconds = time.perf_counter() - started
    sample.cpu_seconds = time.process_time() - cpu
    sample.gc_seconds = clock.seconds
    sample.rss_peak_kib = proc_status_kib("VmHWM")
    sample.children_rss_peak_kib = max(pack_peaks, default=0)


def run_kind(
    kind: str,
    *,
    project: Path,
    stack: str,
    out: Path | None = None,
    render_dir: Path | None = None,
    profile: Path | None = None,
) -> Sample:
    """Measure one operation (see the module docstring); `profile` also cProfiles it into that file."""
    from bench import floor, synthetic
    from gpushare.offline.check import CheckResult, check_stack
    from gpushare.offline.render import RenderResult, render_stack
    from gpushare.offline.stack_files import load_stack_config, read_project_name

    sample = Sample(kind=kind, stack=stack)
    if kind == "render":
        if out is None:
            raise ValueError("render needs --out")
        rendered: list[RenderResult] = []
        _measure(
            sample, lambda: rendered.append(render_stack(project, stack, out)), _render_phases(), profile
        )
        sample.resources = len(rendered[0].resources)
        sample.files = len(rendered[0].files)
    elif kind == "floor":
        if render_dir is None:
            raise ValueError("floor needs --render-dir")
        floor_input = floor.load_floor_input(render_dir)
        config, secret_keys = load_stack_config(project, stack)
        project_name = read_project_name(project)
        runs: list[int] = []

        def run() -> None:
            result = floor.run_floor(
                floor_input, project=project_name, stack=stack, config=config, secret_keys=secret_keys
            )
            runs.append(len(result.resources))

        _measure(sample, run, [], profile)
        sample.resources = runs[0]
    elif kind in ("check", "check-floor"):
        import gpushare.offline.check as check_module

        pack = project / (synthetic.POLICY_DIR if kind == "check" else synthetic.EMPTY_PACK_DIR)
        checked: list[CheckResult] = []
        analyzed: list[int] = []
        engine_view = check_module.analyzed_resources

        def counted(stack_run: Any, releases: Any = ()) -> Any:
            resources = engine_view(stack_run, releases)
            analyzed.append(len(resources))
            return resources

        check_module.analyzed_resources = counted  # the phase timer below wraps this one
        try:
            _measure(
                sample, lambda: checked.append(check_stack(project, stack, pack_dir=pack)), _check_phases()
            )
        finally:
            check_module.analyzed_resources = engine_view
        report = checked[0].report
        sample.diagnostics = {"mandatory": len(report.mandatory), "advisory": len(report.advisory)}
        sample.policies = len(report.policies)
        sample.resources = analyzed[0]
    else:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return sample


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker", description=__doc__)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--out", type=Path, help="render: the output directory")
    parser.add_argument("--render-dir", type=Path, help="floor: a render of the same stack")
    parser.add_argument("--result", type=Path, required=True, help="where to write the JSON result")
    parser.add_argument("--profile", type=Path, help="also cProfile the operation into this file (slower)")
    parser.add_argument(
        "--disable-gc", action="store_true", help="run the operation with the cyclic GC off (for diagnosis)"
    )
    args = parser.parse_args(argv)
    prelude()
    if args.disable_gc:
        gc.collect()
        gc.disable()
    try:
        sample = run_kind(
            args.kind,
            project=args.project,
            stack=args.stack,
            out=args.out,
            render_dir=args.render_dir,
            profile=args.profile,
        )
    except Exception:  # reported to the parent in the result, which decides what to do
        sample = Sample(kind=args.kind, stack=args.stack, error=traceback.format_exc())
    args.result.write_text(json.dumps(sample.to_json(), indent=2, sort_keys=True) + "\n")
    return 0 if sample.error is None else 1


if __name__ == "__main__":
    sys.exit(main())
