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


def find_project(start: Path) -> Path | None:
    """The nearest of `start` and its parents that holds a Pulumi project file, or None."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / name).is_file() for name in PROJECT_FILES):
            return directory
    return None


def project_dir(given: str | None, cwd: Path | None = None) -> Path:
    """`given` (the `--dir` option) as it is, else the project found from `cwd` (default: the working
    directory); raises NoProjectError, one line, when there is none."""
    if given is not None:
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
