"""The one error type the user sees: it names the file, the key path and what is wrong."""

from __future__ import annotations


class GpushareError(Exception):
    """A user-facing error. The CLI prints `str(err)` and exits non-zero, never a traceback."""

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.message = message
        self.source = source
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.key) if p]
        return ": ".join([*parts, self.message])


class ConfigError(GpushareError):
    """A stack file or config value that does not validate."""
