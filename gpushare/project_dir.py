"""Which Pulumi project a command works on: `--dir`, else the nearest directory holding a `Pulumi.yaml`
from the working directory up, the way `pulumi` finds its project (`workspace.DetectProjectPathFrom`)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gpushare.errors import GpushareError

# The names `pulumi` accepts for a project file (workspace.ProjectFile with its encodings).
PROJECT_FILES: Final = ("Pulumi.yaml", "Pulumi.yml", "Pulumi.json")


class NoProjectError(GpushareError):
    """No `--dir` and no Pulumi project in the working directory or above it."""


def _holds_project(directory: Path) -> bool:
    try:
        return any((directory / name).is_file() for name in PROJECT_FILES)
    except OSError:  # a name too long, a directory not searchable: no project to be read there either
        return False


def find_project(start: Path) -> Path | None:
    """The nearest of `start` and its parents that holds a Pulumi project file, or None."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if _holds_project(directory):
            return directory
    return None


def project_dir(given: str | None, cwd: Path | None = None) -> Path:
    """`given` (the `--dir` option) when it holds a project file, else the project found from `cwd`
    (default: the working directory); raises NoProjectError, one line, when there is none. Every command
    that works on a project comes through here, so a directory without Pulumi.yaml is the same refusal
    (exit 2) for all of them, before any of them reads a stack file or a cluster."""
    if given is not None:
        if not _holds_project(Path(given)):
            raise NoProjectError(
                f"{given}: no Pulumi.yaml (the Pulumi project file) in the --dir directory; give --dir the "
                "project's directory, or start a project there with python -m gpushare init"
            )
        return Path(given)
    try:
        here = Path.cwd() if cwd is None else cwd
        found = find_project(here)
    except OSError:
        # os.getcwd() of a directory removed under the shell (FileNotFoundError).
        raise NoProjectError(
            "no Pulumi project here: the working directory no longer exists (removed?); cd into the project "
            "or give --dir DIR"
        ) from None
    if found is None:
        raise NoProjectError(
            f"no Pulumi project here: no Pulumi.yaml in {here.resolve()} or any directory above it; "
            "run from inside the project or give --dir DIR"
        )
    return found
