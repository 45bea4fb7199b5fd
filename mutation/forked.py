"""Running pytest in a forked child of a process that has already imported the heavy libraries.

Every mutant's test run starts the same way: import pytest, Pulumi's SDKs, pydantic, the Kubernetes
client (seconds of CPU on a busy machine) before the first test. Imported once here and forked per run,
a run pays only for the project's own modules, which the child imports fresh from the mutated copy
(nothing of the project is imported in this process). Helm's Go library is not preloaded: a Go runtime
does not survive fork. `python -m mutation --no-fork` runs each mutant in a fresh interpreter instead.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

# Third-party modules the tests import (by `grep ^import` over the project): loaded before any fork.
PRELOADED = (
    "pytest",
    "yaml",
    "pydantic",
    "jsonschema",
    "referencing",
    "google.protobuf.struct_pb2",
    "grpc",
    "pulumi",
    "pulumi.runtime",
    "pulumi.runtime.mocks",
    "pulumi.runtime.stack",
    "pulumi.runtime.config",
    "pulumi_policy",
    "pulumi_policy.proxy",
    "pulumi_policy.deserialize",
    "pulumi_kubernetes",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.apps.v1",
    "pulumi_kubernetes.helm.v3",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.node.v1",
    "tencentcloud_iac_pulumi",
    "tencentcloud_iac_pulumi.kubernetes",
    "kubernetes",
    "kubernetes.client",
    "kubernetes.config",
    "kubernetes_validate",
    "urllib3",
)


def preload() -> None:
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def run_pytest(
    tree: Path, args: Sequence[str], timeout: float, env: dict[str, str]
) -> tuple[int | None, str]:
    """`pytest args` in `tree` in a forked child: (exit code or None on timeout, its output)."""
    with tempfile.TemporaryFile(mode="w+b") as capture:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 3
            try:
                os.setpgid(0, 0)  # its own process group: a timeout ends what it started too
                os.dup2(capture.fileno(), 1)
                os.dup2(capture.fileno(), 2)
                sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
                sys.stderr = sys.stdout
                os.environ.clear()
                os.environ.update(env)
                sys.dont_write_bytecode = env.get("PYTHONDONTWRITEBYTECODE") == "1"
                os.chdir(tree)
                project = str(Path(__file__).resolve().parent.parent)
                sys.path[:] = [str(tree), *(p for p in sys.path if p not in ("", ".", project))]
                import pytest

                code = int(pytest.main(list(args)))
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        status: int | None = None
        while time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            time.sleep(0.1)
        if status is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        capture.seek(0)
        output = capture.read().decode("utf-8", errors="replace")
    return status, output
