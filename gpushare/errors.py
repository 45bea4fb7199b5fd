"""The error types the user sees (each names the file, the key path and what is wrong) and the one
exit-code convention every command follows."""

from __future__ import annotations

# Every command: 0 ok; 1 findings or bad content (an invalid file, a stack or fleet that does not validate,
# a policy violation, verify's errors); 2 usage or unreadable input (a bad or missing flag, a file that is
# missing, a directory, too big or not text; verify also when it cannot check at all).
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

EXIT_CODES_HELP = """exit status (every command):
  0  ok
  1  findings or bad content: an invalid file, a stack or fleet that does not validate,
     a policy violation, verify's errors
  2  usage or unreadable input: a bad or missing flag, a file that is missing, a directory,
     too big or not text; verify: the cluster cannot be checked (bad stack, no kubeconfig, unreachable)"""


class GpushareError(Exception):
    """A user-facing error. The CLI prints `str(err)` and exits non-zero, never a traceback."""

    exit_code = EXIT_FINDINGS

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.message = message
        self.source = source
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.key) if p]
        return ": ".join([*parts, self.message])


class UsageError(GpushareError):
    """Arguments that do not go together or name nothing usable (exit 2, like argparse's own errors)."""

    exit_code = EXIT_USAGE


class UnreadableInputError(GpushareError):
    """A named file that cannot be read at all: missing, a directory, too big, not text (exit 2)."""

    exit_code = EXIT_USAGE


class ConfigError(GpushareError):
    """A stack file or config value that does not validate."""


class UnreadableConfigError(ConfigError, UnreadableInputError):
    """A stack or fleet file that cannot be read (exit 2); its content was never judged."""

    exit_code = EXIT_USAGE
