"""gpushare.project_dir: `--dir`, else the nearest Pulumi project from the working directory up, as
`pulumi` finds it; and the commands using it from any directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.project_dir import NoProjectError, find_project, project_dir

# Whole processes (the pack, the CLI): make test-e2e, which CI runs after make test.
pytestmark = pytest.mark.e2e


def test_the_nearest_project_file_wins(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: outer\n")
    inner = tmp_path / "infra" / "gpu"
    (inner / "deep" / "er").mkdir(parents=True)
    (inner / "Pulumi.yml").write_text("name: inner\n")
    assert find_project(inner / "deep" / "er") == inner.resolve()
    assert find_project(tmp_path / "infra") == tmp_path.resolve()
    assert find_project(tmp_path) == tmp_path.resolve()


def test_a_directory_named_like_a_project_file_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").mkdir()
    assert find_project(tmp_path) != tmp_path.resolve()


def test_dir_is_taken_as_given_when_it_holds_a_project_file(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yml").write_text("name: gpushare\nruntime: python\n")
    assert project_dir(str(tmp_path), cwd=Path("/")) == tmp_path


def test_dir_without_a_project_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").mkdir()  # a directory of that name is no project file
    with pytest.raises(NoProjectError) as raised:
        project_dir(str(tmp_path), cwd=PROJECT_DIR)
    assert str(raised.value) == (
        f"{tmp_path}: no Pulumi.yaml (the Pulumi project file) in the --dir directory; give --dir the "
        "project's directory, or start a project there with python -m gpushare init"
    )


def test_no_project_is_one_line_naming_where_it_looked(tmp_path: Path) -> None:
    if find_project(tmp_path) is not None:
        pytest.skip("the temporary directory sits inside a Pulumi project")
    with pytest.raises(NoProjectError) as raised:
        project_dir(None, cwd=tmp_path)
    assert str(raised.value) == (
        f"no Pulumi project here: no Pulumi.yaml in {tmp_path.resolve()} or any directory above it; run "
        "from inside the project or give --dir DIR"
    )


def gpushare(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # The console script of the editable install (make: venv/bin/gpushare), else `python -m gpushare`.
    script = Path(sys.executable).parent / "gpushare"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpushare"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_plan_from_a_subdirectory_finds_the_project() -> None:
    done = gpushare(["plan", "--stack", "prod"], cwd=PROJECT_DIR / "docs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Capacity plan for stack prod (Pulumi.prod.yaml)\n")


def test_plan_from_elsewhere_with_dir(tmp_path: Path) -> None:
    done = gpushare(["plan", "--stack", "prod", "--dir", str(PROJECT_DIR), "--json"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"totalSlots": 11' in done.stdout  # L20 8 + T4 3, the seed's end state


@pytest.mark.parametrize("command", [["plan"], ["check"], ["render", "--out", "out"], ["verify"]])
def test_without_a_project_every_project_command_says_so_and_exits_2(
    command: list[str], tmp_path: Path
) -> None:
    if find_project(tmp_path) is not None:
        pytest.skip("the temporary directory sits inside a Pulumi project")
    done = gpushare([command[0], "--stack", "prod", *command[1:]], cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"no Pulumi project here: no Pulumi.yaml in {tmp_path.resolve()} or any directory above it; run "
        "from inside the project or give --dir DIR\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written
