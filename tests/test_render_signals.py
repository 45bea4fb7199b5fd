"""`render` under signals and faults: one line, a non-zero exit, no temporary folder left behind.

Signals are real (`os.kill` of the rendering process itself, at a chosen point while it writes the
render), so the handlers, `finally` blocks and signal masks are the real ones. A SIGKILLed render
cannot clean up; the next render of the same DIR sweeps what it left, and nothing else.
"""

from __future__ import annotations

import fcntl
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpushare.cli.main import main
from gpushare.offline import render

PROJECT_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _interrupts_as_at_a_terminal() -> Iterator[None]:
    """SIGINT as an interactive shell leaves it. A job started in the background by a non-interactive
    shell (`cmd &`, as CI runners and `make mutation` under nohup do) inherits SIGINT *ignored*, and
    Python then installs no KeyboardInterrupt handler: these tests would see no interrupt at all."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _leftovers(parent: Path) -> list[str]:
    return sorted(entry.name for entry in parent.iterdir() if ".render-" in entry.name)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


def _previous_render(parent: Path) -> Path:
    out = parent / "prod"
    out.mkdir(parents=True)
    (out / "resources.json").write_text("[]\n")  # a previous render, to be left as it was
    return out


@pytest.mark.parametrize(("which", "word"), [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_during_render_is_one_line_and_leaves_nothing(
    which: str, word: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process through the CLI's entry point (its own handlers: SIGTERM's is installed by `render`
    itself): the signal arrives while the third file of the render is written."""
    out = _previous_render(tmp_path)
    signum = getattr(signal, which)
    original = Path.write_bytes
    written: list[Path] = []

    def write_bytes(self: Path, data: bytes) -> int:
        written.append(self)
        if len(written) == 3:
            os.kill(os.getpid(), signum)
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    code = main(["render", "--stack", "prod", "--out", str(out)], io.StringIO())
    assert len(written) >= 3  # the signal did arrive while writing
    assert code == 128 + signum
    assert capsys.readouterr().err.splitlines() == [f"render: {word} ({which}); nothing was written"]
    assert _leftovers(tmp_path) == []
    assert _snapshot(out) == {"resources.json": b"[]\n"}
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # render put the default back


@pytest.mark.e2e
def test_a_sigkilled_render_is_swept_by_the_next_one(tmp_path: Path) -> None:
    out = tmp_path / "prod"
    killed = subprocess.run(
        [sys.executable, "-c", _SIGKILL_WHILE_PUBLISHING, str(out)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (left,) = _leftovers(tmp_path)
    assert left.startswith(".prod.render-")
    # Look-alikes that are not this DIR's, or not mkdtemp's names, are not ours to remove.
    others = [
        tmp_path / ".staging.render-abcd1234",
        tmp_path / ".prod.render-keep",
        tmp_path / "prod.render-x",
    ]
    for other in others:
        other.mkdir()
    render._publish({"resources.json": "[]\n"}, out)
    assert _leftovers(tmp_path) == sorted(o.name for o in others if ".render-" in o.name)
    assert (tmp_path / "prod.render-x").is_dir()
    assert (out / "resources.json").read_text() == "[]\n"


_SIGKILL_WHILE_PUBLISHING = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from gpushare.offline import render
    original = Path.write_bytes
    def write_bytes(self, data):
        original(self, data)
        os.kill(os.getpid(), signal.SIGKILL)
    Path.write_bytes = write_bytes
    render._publish({"resources.json": "[]\\n", "manifests/a.yaml": "a: 1\\n"}, Path(sys.argv[1]))
    """
)


def test_a_render_in_progress_is_not_swept(tmp_path: Path) -> None:
    """While another render holds the lock on DIR's parent, a second one waits instead of sweeping the
    first one's temporary directory."""
    out = tmp_path / "prod"
    live = tmp_path / ".prod.render-live1234"
    live.mkdir()
    descriptor = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(descriptor, fcntl.LOCK_EX)  # as a live render holds it
    second = threading.Thread(target=render._publish, args=({"resources.json": "[]\n"}, out))
    second.start()
    time.sleep(0.3)
    assert live.is_dir() and not out.exists()  # waiting, and the live render's folder is still there
    live.rmdir()  # the live render finishes and removes its own folder
    os.close(descriptor)
    second.join(timeout=30)
    assert (out / "resources.json").is_file()
    assert _leftovers(tmp_path) == []


def test_an_interrupt_while_writing_removes_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Path.write_bytes

    def write_bytes(self: Path, data: bytes) -> int:
        os.kill(os.getpid(), signal.SIGINT)  # the default handler: KeyboardInterrupt at the next bytecode
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    with pytest.raises(KeyboardInterrupt):
        render._publish({"resources.json": "[]\n", "capacity.json": "{}\n"}, tmp_path / "prod")
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "prod").exists()


def test_an_unwritable_out_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "--stack", "prod", "--out", "/proc/gpushare-render"], io.StringIO())
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("/proc/gpushare-render: cannot write the render: ")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not Path("/proc/gpushare-render").exists()
