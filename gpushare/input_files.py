"""Reading every file a user names (stack, fleet, policy config, kubeconfig, `validate`/`tune` inputs),
within bounds: one reader, so that every command refuses the same files the same way.

Every failure is one `InputFileError` line naming the file: missing, a directory, not a regular file (a
FIFO would block `open()` forever, `/dev/zero` never ends: the file is opened with O_NONBLOCK and
checked with fstat before a byte is read), unreadable, larger than the bound (read no further than the
bound, so a 10 GB file costs the same as a small one), binary (a NUL byte) or not UTF-8.
"""

from __future__ import annotations

import os
import stat

from gpushare.errors import UnreadableInputError

# A ConfigMap holds at most 1 MiB (etcd's object limit), so no config file a cluster reads is bigger;
# nvidia-smi outputs of a full node are tens of KiB.
MAX_INPUT_BYTES = 1024 * 1024
_CHUNK = 64 * 1024


class InputFileError(UnreadableInputError):
    """A named input that cannot be read as text; `source` is the path."""


def size_text(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size} bytes"


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` (more is refused, not truncated)."""
    try:
        # O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer; O_NOCTTY: a terminal
        # device named here must not become the controlling terminal.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise InputFileError("is a directory, not a file", source=str(path)) from None
    except FileNotFoundError:
        raise InputFileError("no such file", source=str(path)) from None
    except OSError as err:
        raise InputFileError(f"cannot read: {err.strerror or err}", source=str(path)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise InputFileError("is a directory, not a file", source=str(path))
        if not stat.S_ISREG(mode):
            raise InputFileError(f"is {_file_kind(mode)}, not a regular file; not read", source=str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(descriptor, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise InputFileError(f"cannot read: {err.strerror or err}", source=str(path)) from None
    finally:
        os.close(descriptor)
    if size > max_bytes:
        raise InputFileError(f"larger than {size_text(max_bytes)}; not read", source=str(path))
    return b"".join(chunks)


def decode_text(data: bytes, path: str | os.PathLike[str]) -> str:
    """UTF-8 (a BOM is dropped); a NUL byte means a binary file."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"a binary file (NUL byte at offset {nul}), not text", source=str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFileError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})", source=str(path)
        ) from None


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_INPUT_BYTES) -> str:
    return decode_text(read_bytes(path, max_bytes), path)
