"""Reading the files a user names on the command line (`validate`, `tune`), within bounds.

Every failure is one `InputFileError` line naming the file: missing, a directory, unreadable, larger than
the bound (read no further than the bound, so `/dev/zero` or a 10 GB file cost the same as a small one),
binary (a NUL byte) or not UTF-8.
"""

from __future__ import annotations

from gpushare.errors import UnreadableInputError

# A ConfigMap holds at most 1 MiB (etcd's object limit), so no config file a cluster reads is bigger;
# nvidia-smi outputs of a full node are tens of KiB.
MAX_INPUT_BYTES = 1024 * 1024


class InputFileError(UnreadableInputError):
    """A named input that cannot be read as text; `source` is the path."""


def _size_text(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size} bytes"


def read_bytes(path: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except IsADirectoryError:
        raise InputFileError("is a directory, not a file", source=path) from None
    except FileNotFoundError:
        raise InputFileError("no such file", source=path) from None
    except OSError as err:
        raise InputFileError(f"cannot read: {err.strerror or err}", source=path) from None
    if len(data) > max_bytes:
        raise InputFileError(f"larger than {_size_text(max_bytes)}; not read", source=path)
    return data


def decode_text(data: bytes, path: str) -> str:
    """UTF-8 (a BOM is dropped); a NUL byte means a binary file."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"a binary file (NUL byte at offset {nul}), not text", source=path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFileError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})", source=path
        ) from None


def read_text(path: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    return decode_text(read_bytes(path, max_bytes), path)
