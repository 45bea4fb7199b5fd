"""The run loop: run a Pulumi Python program (or one function) offline under the recording monitor.

`run_program` reproduces what `pulumi-language-python-exec` does for `pulumi preview/up`
(config via `set_all_config`, `Settings`, a fresh event loop, `run_in_stack(runpy.run_path(DIR))`,
cwd = the project directory), but the resource monitor is a `RecordingMonitor`
(`gpushare.offline.recording_monitor`), so the result is a `ProgramRun` (`gpushare.offline.recorded`) of everything the
engine would have seen. This module owns the process-wide set-up and tear-down around a run (lock, cwd,
environment, the program's modules, the SDK's context defaults), the event loop, the timeout and cancelling.
Stack files are read by `gpushare.offline.stack_files`; the mocks are `gpushare.offline.echo_mocks`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import runpy
import sys
import threading
import types
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import pulumi
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_in_stack

from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.recorded import ProgramRun
from gpushare.offline.recording_monitor import RecordingEngine, RecordingMonitor
from gpushare.offline.stack_files import config_string, namespaced_key, read_project_name

_T = TypeVar("_T")


class _InlineExecutor(ThreadPoolExecutor):
    """Runs each submitted call at once, on the event-loop thread.

    The SDK sends every monitor RPC through `loop.run_in_executor(None, ...)`. With a thread pool
    the RPCs race, so registration order (e.g. a component's children vs. a resource waiting on the
    provider) varied between runs; inline calls make it a function of the program alone. It also
    leaves no worker threads or per-thread event loops behind ("Invalid file descriptor: -1").
    """

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # delivered to the awaiting coroutine, like a pool would
            future.set_exception(error)
        return future


@dataclass
class _RunState:
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None
    error: BaseException | None = None


_RUN_LOCK = threading.Lock()  # cwd, sys.modules and os.environ are process-wide
_CANCEL_GRACE_SECONDS: Final = 2.0
_DEFAULT_ATTR: Final = "_ContextProperty__default"


def run_program(
    program_dir: Path,
    *,
    stack: str,
    config: Mapping[str, str],
    secret_keys: Sequence[str] = (),
    project: str | None = None,
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    organization: str = "organization",
    timeout: float = 120.0,
) -> ProgramRun:
    """Run the Pulumi program in `program_dir` against a `RecordingMonitor` and return what it saw.

    `config` keys without a namespace get the project's (`name:` in Pulumi.yaml unless `project`
    is given); values are strings as in `PULUMI_CONFIG` (dicts/lists/bools/numbers are JSON-encoded
    like the CLI does). Exceptions raised by the program propagate unchanged; a run that takes longer
    than `timeout` seconds raises `TimeoutError`.
    """
    program_dir = Path(program_dir).resolve()
    if not (program_dir / "__main__.py").is_file():
        raise FileNotFoundError(f"{program_dir}: no __main__.py (run_program runs a program directory)")
    project_name = project or read_project_name(program_dir)
    full_config, full_secret_keys = _namespaced_config(config, secret_keys, project_name)
    with _RUN_LOCK, _program_environment(program_dir, full_config, full_secret_keys):
        return _execute(
            lambda: runpy.run_path(str(program_dir), run_name="__main__"),
            project=project_name,
            stack=stack,
            config=full_config,
            secret_keys=full_secret_keys,
            preview=preview,
            mocks=mocks,
            organization=organization,
            root_directory=program_dir,
            timeout=timeout,
        )


def run_function(
    body: Callable[[], Any],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    organization: str = "organization",
    timeout: float = 60.0,
) -> ProgramRun:
    """Run `body` as if it were a program's `__main__` (inside a root Stack, under the recording
    monitor): for testing one component in isolation without a program directory."""
    full_config, full_secret_keys = _namespaced_config(config or {}, secret_keys, project)
    with _RUN_LOCK:
        return _execute(
            body,
            project=project,
            stack=stack,
            config=full_config,
            secret_keys=full_secret_keys,
            preview=preview,
            mocks=mocks,
            organization=organization,
            root_directory=Path.cwd(),
            timeout=timeout,
        )


def _namespaced_config(
    config: Mapping[str, Any], secret_keys: Sequence[str], project: str
) -> tuple[dict[str, str], list[str]]:
    """Config and secret keys as the language host gets them: `namespace:key`, values as strings."""
    config_strings = {namespaced_key(key, project): config_string(value) for key, value in config.items()}
    return config_strings, sorted({namespaced_key(key, project) for key in secret_keys})


def _execute(
    body: Callable[[], Any],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: Sequence[str],
    preview: bool,
    mocks: pulumi.runtime.Mocks | None,
    organization: str,
    root_directory: Path,
    timeout: float,
) -> ProgramRun:
    monitor = RecordingMonitor(mocks if mocks is not None else Mocks(), project=project, stack=stack)
    engine = RecordingEngine()

    def configure_and_run(state: _RunState) -> None:
        # Runs inside a copied context: everything below is ContextVar state of the SDK.
        pulumi_settings.ROOT.set(None)  # otherwise a leftover root Stack would parent everything
        set_all_config(dict(config), list(secret_keys))
        # Constructing Settings *is* the configuration: its attributes are ContextVar descriptors.
        pulumi_settings.Settings(
            project=project,
            stack=stack,
            monitor=monitor,
            engine=engine,
            dry_run=preview,
            organization=organization,
            root_directory=str(root_directory),
        )
        _run_on_fresh_loop(body, state)

    _run_in_thread(configure_and_run, timeout)
    return monitor.program_run(engine.logs)


def _run_on_fresh_loop(program: Callable[[], Any], state: _RunState) -> None:
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_InlineExecutor())
    asyncio.set_event_loop(loop)  # this thread only: it exists for this run
    state.loop = loop
    try:
        state.task = loop.create_task(run_in_stack(program))
        loop.run_until_complete(state.task)
    finally:
        try:
            _cancel_pending_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_pending_tasks(loop: asyncio.AbstractEventLoop) -> None:
    # Outputs of a failed program may never resolve; cancel them like asyncio.run() does.
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _run_in_thread(body: Callable[[_RunState], None], timeout: float) -> None:
    """Run `body` in a copy of the caller's context on a worker thread, bounded by `timeout`.

    A thread (not the caller's) so that a hang can be turned into TimeoutError, the caller may
    itself be inside an event loop, and the caller's thread-local event loop is never touched.
    """
    state = _RunState()
    context = contextvars.copy_context()
    saved_defaults = _context_property_defaults()

    def work() -> None:
        try:
            context.run(body, state)
        except BaseException as error:  # handed to the caller's thread
            state.error = error

    worker = threading.Thread(target=work, name="pulumi-offline-program", daemon=True)
    worker.start()
    try:
        worker.join(timeout)
        if worker.is_alive():
            _request_cancel(state)
            worker.join(_CANCEL_GRACE_SECONDS)
            still = " and its thread is still running (abandoned)" if worker.is_alive() else ""
            raise TimeoutError(f"the Pulumi program did not finish within {timeout:g}s{still}")
    finally:
        _restore_context_property_defaults(saved_defaults)
    if state.error is not None:
        raise state.error


def _request_cancel(state: _RunState) -> None:
    loop, task = state.loop, state.task
    if loop is None or task is None:
        return
    with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
        loop.call_soon_threadsafe(task.cancel)


def _context_property_defaults() -> dict[str, tuple[object, Any]]:
    """The fallback values of the SDK's `ContextProperty` descriptors.

    `ContextProperty.fset` overwrites its process-wide fallback whenever the current value is None,
    so configuring a run would leak its monitor/dry_run to every thread that has no value of its
    own. These are saved before and restored after each run.
    """
    saved: dict[str, tuple[object, Any]] = {}
    for klass in type(pulumi_settings.SETTINGS).__mro__:
        for attribute, descriptor in vars(klass).items():
            if hasattr(descriptor, _DEFAULT_ATTR):
                saved.setdefault(attribute, (descriptor, getattr(descriptor, _DEFAULT_ATTR)))
    return saved


def _restore_context_property_defaults(saved: Mapping[str, tuple[object, Any]]) -> None:
    for descriptor, default in saved.values():
        setattr(descriptor, _DEFAULT_ATTR, default)


def _is_config_variable(name: str) -> bool:
    # PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS and PULUMI_CONFIG_<KEY>; not the CLI's passphrase.
    return (name == "PULUMI_CONFIG" or name.startswith("PULUMI_CONFIG_")) and not name.startswith(
        "PULUMI_CONFIG_PASSPHRASE"
    )


@contextlib.contextmanager
def _program_environment(
    program_dir: Path, config: Mapping[str, str], secret_keys: Sequence[str]
) -> Iterator[None]:
    """What a fresh language-host process would give the program, undone afterwards: cwd = the
    project directory, `PULUMI_CONFIG*` = this run's config only, its own modules imported afresh."""
    previous_cwd = os.getcwd()
    previous_path = list(sys.path)
    shadowing = _pop_shadowing_modules(program_dir)
    modules_before = set(sys.modules)
    saved_env = {name: value for name, value in os.environ.items() if _is_config_variable(name)}
    for name in saved_env:
        del os.environ[name]
    # The language host passes the config in the environment too; get_config falls back to it.
    os.environ["PULUMI_CONFIG"] = json.dumps(dict(config))
    os.environ["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(secret_keys))
    os.chdir(program_dir)
    try:
        yield
    finally:
        os.chdir(previous_cwd)
        sys.path[:] = previous_path
        for name in [name for name in os.environ if _is_config_variable(name)]:
            del os.environ[name]
        os.environ.update(saved_env)
        _drop_program_modules(set(sys.modules) - modules_before, program_dir)
        sys.modules.update(shadowing)


def _drop_program_modules(names: Collection[str], program_dir: Path) -> None:
    for name in sorted(names, reverse=True):  # submodules before their packages
        module = sys.modules.get(name)
        if module is None or not _is_program_module(name, module, program_dir):
            continue
        del sys.modules[name]
        # A package that stays cached would still hand out the stale submodule as an attribute.
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        if parent is not None and getattr(parent, child, None) is module:
            delattr(parent, child)


def _program_top_level_names(program_dir: Path) -> set[str]:
    names = set()
    for entry in program_dir.iterdir():
        if entry.suffix == ".py" and entry.stem != "__main__" and entry.stem.isidentifier():
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and any(entry.glob("*.py")):
            names.add(entry.name)
    return names


def _pop_shadowing_modules(program_dir: Path) -> dict[str, types.ModuleType]:
    """Remove cached modules that share a top-level name with the program's own modules but come
    from elsewhere (say the caller's `components` package), so the program imports its own; they are
    put back after the run."""
    names = _program_top_level_names(program_dir)
    popped: dict[str, types.ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in names and not _is_program_module(name, module, program_dir):
            popped[name] = sys.modules.pop(name)
    return popped


def _is_program_module(name: str, module: types.ModuleType, program_dir: Path) -> bool:
    """Was `module` imported through the program directory's own sys.path entry?

    Being somewhere below the directory is not enough: a project's `venv/.../site-packages` is
    below it too, and dropping (then re-importing) pulumi_kubernetes breaks its one-time package
    registration ("Cannot re-register package kubernetes@...").
    """
    top = name.partition(".")[0]
    locations = (
        [module.__file__] if getattr(module, "__file__", None) else list(getattr(module, "__path__", []))
    )
    root = str(program_dir)
    for location in locations:
        if not isinstance(location, str):
            continue
        # The path it was imported by, and the file it is: a package the directory links to (a project
        # copy with `gpushare -> the repo's gpushare`) is imported through the directory, under the link's
        # path, and must be dropped after the run like the rest, or the caller is left with two
        # generations of the same modules (classes that fail each other's isinstance checks).
        for path in (os.path.abspath(location), os.path.realpath(location)):
            relative = os.path.relpath(path, root)
            if relative.split(os.sep, 1)[0] in (top, f"{top}.py"):
                return True
    return False
