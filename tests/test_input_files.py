"""gpushare/input_files.py: the files a user names on the command line (`validate`, `tune`), read within a
bound; every failure one `InputFileError` naming the file. The bound is 1 MiB = 1048576 bytes (etcd's
object limit: no ConfigMap a cluster reads is bigger)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.input_files import MAX_INPUT_BYTES, InputFileError, read_bytes, read_text


def refusal(path: Path | str, **kwargs: int) -> str:
    with pytest.raises(InputFileError) as caught:
        read_text(str(path), **kwargs)
    assert caught.value.source == str(path)
    return caught.value.message


def test_the_bound_is_one_mebibyte_read_exactly_and_refused_one_byte_over(tmp_path: Path) -> None:
    assert MAX_INPUT_BYTES == 1048576
    exact = tmp_path / "exact.txt"
    exact.write_bytes(b"x" * 1048576)
    assert len(read_bytes(str(exact))) == 1048576
    over = tmp_path / "over.txt"
    over.write_bytes(b"x" * 1048577)
    assert refusal(over) == "larger than 1 MiB; not read"


def test_a_bound_that_is_no_whole_mebibyte_is_said_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_bytes(b"abcdef")
    assert refusal(path, max_bytes=5) == "larger than 5 bytes; not read"
    assert read_text(str(path), max_bytes=6) == "abcdef"


def test_dev_zero_is_refused_before_a_byte_is_read() -> None:
    # A device never ends (and a FIFO may never answer): only regular files are read.
    assert refusal("/dev/zero") == "is a character device, not a regular file; not read"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"version: v1\n\x00\x01", "a binary file (NUL byte at offset 12), not text"),
        (b"caf\xe9\n", "not UTF-8 text (byte 0xe9 at offset 3)"),
    ],
)
def test_binary_and_non_utf8_files_are_named(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    assert refusal(path) == message


def test_a_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfversion: v1\n")
    assert read_text(str(path)) == "version: v1\n"


def test_missing_directories_and_unreadable(tmp_path: Path) -> None:
    assert refusal(tmp_path / "absent.yaml") == "no such file"
    assert refusal(tmp_path) == "is a directory, not a file"
    # A path through a regular file: ENOTDIR, one of the other OSErrors, with the system's words.
    (tmp_path / "file").write_text("x")
    assert refusal(tmp_path / "file" / "below.yaml") == "cannot read: Not a directory"


# A process in a session of its own (setsid: no controlling terminal, as a daemon or a container's first
# process) that is handed a terminal device as its input file: open(2) without O_NOCTTY would make that
# terminal its controlling one (POSIX open(), O_NOCTTY), and /dev/tty would then open.
_TERMINAL_AS_INPUT = """
import os
from gpushare.input_files import InputFileError, read_bytes
master, slave = os.openpty()
try:
    read_bytes(os.ttyname(slave))
except InputFileError as err:
    print(err.message)
try:
    os.close(os.open("/dev/tty", os.O_RDONLY))
    print("a controlling terminal")
except OSError:
    print("no controlling terminal")
"""


def test_a_terminal_named_as_input_is_refused_and_never_becomes_the_controlling_terminal() -> None:
    child = subprocess.run(
        [sys.executable, "-c", _TERMINAL_AS_INPUT],
        cwd=PROJECT_DIR,  # `-c` imports gpushare from the working directory: this tree's, not an installed one
        start_new_session=True,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if "openpty" in child.stderr:
        pytest.skip("no pseudo-terminals here")
    assert (child.returncode, child.stderr) == (0, "")
    assert child.stdout.splitlines() == [
        "is a character device, not a regular file; not read",
        "no controlling terminal",
    ]
