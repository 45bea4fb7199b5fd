"""Starting and stopping a policy pack as the CLI's Python language host does: the pack directory
(PulumiPolicy.yaml, its virtualenv's python), the minimal fake `pulumirpc.Engine` whose address the pack is
given, and the pack's subprocess (port line, output readers, SIGINT then kill after 5 s).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import grpc  # type: ignore[import-untyped]
import yaml
from google.protobuf import empty_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc

from gpushare.offline.policy_model import PolicyPackStartError

SHUTDOWN_GRACE_SECONDS: Final = 5.0  # the CLI interrupts a plugin, then kills it after 5 s
_MAX_MESSAGE_BYTES: Final = 400 * 1024 * 1024  # what pulumi_policy allows, far above the 4 MB default
GRPC_OPTIONS: Final = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
]


# --------------------------------------------------------------------------------------------------
# The pack directory


@dataclass(frozen=True)
class _PackProject:
    version: str
    virtualenv: str | None


def load_pack_project(pack_dir: Path) -> _PackProject:
    """Read PulumiPolicy.yaml as `workspace.LoadPolicyPack` does: a `runtime` is required."""
    project_file = pack_dir / "PulumiPolicy.yaml"
    try:
        document = yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise PolicyPackStartError(
            f"failed to load Pulumi policy project located at {str(pack_dir)!r}: {err}"
        ) from err
    runtime = document.get("runtime") if isinstance(document, dict) else None
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if not runtime_name:
        raise PolicyPackStartError(f"{project_file}: a `runtime` is required")
    if runtime_name != "python":
        raise PolicyPackStartError(f"{project_file}: runtime {runtime_name!r} is not supported; only python")
    options = (runtime.get("options") or {}) if isinstance(runtime, dict) else {}
    return _PackProject(
        version=str(document.get("version") or ""),
        virtualenv=str(options["virtualenv"]) if options.get("virtualenv") else None,
    )


def pack_python(pack_dir: Path, default: str = sys.executable) -> str:
    """The interpreter the CLI would use: `runtime.options.virtualenv` in PulumiPolicy.yaml, else `default`.

    The CLI does not default `virtualenv` for policy packs; without one it runs `python3` from PATH.
    """
    virtualenv = load_pack_project(Path(pack_dir)).virtualenv
    if virtualenv is None:
        return default
    venv = Path(pack_dir) / virtualenv
    candidate = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not candidate.exists():
        raise PolicyPackStartError(
            f"the pack's virtualenv {venv} has no interpreter; run `pulumi install` in it"
        )
    return str(candidate)


# --------------------------------------------------------------------------------------------------
# The fake engine the pack is given the address of


class _FakeEngine(engine_pb2_grpc.EngineServicer):
    """Just enough of `pulumirpc.Engine` for a policy pack; pulumi.policy does not dial it today."""

    def __init__(self) -> None:
        self.logs: list[str] = []
        self._root_urn = ""
        self._lock = threading.Lock()

    def Log(self, request: Any, context: Any) -> Any:
        severity = engine_pb2.LogSeverity.Name(request.severity).lower()
        suffix = f" ({request.urn})" if request.urn else ""
        with self._lock:
            self.logs.append(f"{severity}: {request.message}{suffix}")
        return empty_pb2.Empty()

    def GetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.GetRootResourceResponse(urn=self._root_urn)

    def SetRootResource(self, request: Any, context: Any) -> Any:
        self._root_urn = request.urn
        return engine_pb2.SetRootResourceResponse()

    def StartDebugging(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    def RequirePulumiVersion(self, request: Any, context: Any) -> Any:
        return engine_pb2.RequirePulumiVersionResponse()  # no CLI here, so any range is satisfied


@contextlib.contextmanager
def _serve_engine() -> Iterator[tuple[str, _FakeEngine]]:
    engine = _FakeEngine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=GRPC_OPTIONS)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", engine
    finally:
        server.stop(grace=None)


# --------------------------------------------------------------------------------------------------
# The pack process


def _sigint_ignored() -> bool:
    return os.name != "nt" and signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def _interruptible() -> None:
    """In the child before exec: SIGINT back to its default (the fallback of `sigint_for_children` off
    the main thread)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _swallow_sigint(signum: int, frame: object) -> None:
    """SIGINT in the parent while it starts the pack: ignored, as the parent's disposition was."""


@contextlib.contextmanager
def sigint_for_children() -> Iterator[Callable[[], None] | None]:
    """Children started inside get SIGINT at its default, even when this process ignores it; yields the
    `preexec_fn` to pass (None when none is needed).

    A parent started in the background by a non-interactive shell (`cmd &`: CI runners, nohup) ignores
    SIGINT and children inherit that, so the pack would never see the interrupt the CLI stops it with and
    every run would wait out the grace before the kill. A pre-exec hook would fix that in the child, but
    it makes `subprocess` fork instead of vfork, and a plain fork of a process with gRPC running runs
    gRPC's fork handlers, which can abort the child before exec (epoll_wait: Bad file descriptor; grpc
    issue 43055). Instead, for the moment of the spawn, SIGINT gets a Python handler that swallows it:
    exec resets a handled signal to its default, so the child starts with SIGINT at SIG_DFL, and the
    parent still ignores it. `signal.signal` works on the main thread only; elsewhere the hook remains."""
    if not _sigint_ignored():
        yield None
        return
    if threading.current_thread() is not threading.main_thread():
        yield _interruptible
        return
    signal.signal(signal.SIGINT, _swallow_sigint)
    try:
        yield None
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class PackProcess:
    """The pack subprocess: its port line, its drained stdout/stderr, and a CLI-like shutdown."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        try:
            with sigint_for_children() as preexec_fn:
                self._proc = subprocess.Popen(
                    self.argv,
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    preexec_fn=preexec_fn,
                )
        except OSError as err:
            raise PolicyPackStartError(f"could not start {self.argv[0]!r}: {err}") from err
        self.stdout_lines: list[str] = []
        self._stderr_chunks: list[bytes] = []
        self._first_line: queue.Queue[bytes | None] = queue.Queue(maxsize=1)
        # Drain both pipes on threads so a chatty pack can never block on a full pipe.
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self._proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self._proc.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self, stream: IO[bytes]) -> None:
        first = stream.readline()  # the CLI reads exactly the first line; later lines are logs
        self._first_line.put(first if first.endswith(b"\n") else None)
        if not first.endswith(b"\n"):
            if first:
                self.stdout_lines.append(first.decode("utf-8", "replace"))
            return
        for line in stream:
            self.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._stderr_chunks.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    def read_port(self, timeout: float) -> int:
        try:
            line = self._first_line.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            self.stop()
            raise PolicyPackStartError(
                f"policy pack [{' '.join(self.argv)}] printed no port within {timeout:.0f} s",
                stderr=self.stderr,
            ) from None
        if line is None:
            # EOF before a port: let the pack finish dying on its own (as the CLI waits), so that
            # its stderr is complete and no SIGINT lands in the middle of its traceback.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=SHUTDOWN_GRACE_SECONDS)
            self.stop()
            raise PolicyPackStartError(
                f"could not read plugin [{' '.join(self.argv)}]: exit status {self._proc.returncode}",
                stderr=self.stderr,
            )
        text = line.decode("utf-8", "replace")
        for escape in ("\x1b]9;4;3;\x1b\\", "\x1b]9;4;0;\x1b\\"):  # parsePort strips .NET progress escapes
            text = text.replace(escape, "")
        text = text.strip()
        port = int(text) if text.isdigit() else 0
        if not 1 <= port <= 65535:
            self.stop()
            raise PolicyPackStartError(
                f"policy pack [{' '.join(self.argv)}] wrote an invalid port to stdout: {text!r}",
                stderr=self.stderr,
            )
        return port

    def stop(self) -> None:
        """Interrupt, wait up to 5 s, then kill; idempotent. Collects the rest of both pipes."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if os.name == "nt":
                    self._proc.terminate()
                else:  # pulumi_policy stops its server on KeyboardInterrupt and exits 0
                    self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=SHUTDOWN_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for reader in self._readers:
            reader.join(timeout=SHUTDOWN_GRACE_SECONDS)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
