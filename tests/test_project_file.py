"""`render` and `check` run the project's `__main__.py` under Python: a Pulumi.yaml whose program is
another (another runtime, or `main:` elsewhere) is refused in one line, exit 2, before anything runs; a
directory without Pulumi.yaml is exit 2, the same line, for every command that takes --dir (issue 34). The __main__.py here would fail loudly if run.
"""

from __future__ import annotations

import argparse
import io
import shutil
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.cli import main as cli_main
from gpushare.offline.render import ProjectFileError, check_project_file

PROGRAM = 'raise SystemExit("this program must not run")\n'


def project(tmp_path: Path, pulumi_yaml: str | None) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", tmp_path / "Pulumi.prod.yaml")
    (tmp_path / "__main__.py").write_text(PROGRAM)
    if pulumi_yaml is not None:
        (tmp_path / "Pulumi.yaml").write_text(pulumi_yaml)
    return tmp_path


def run(command: str, directory: Path, tmp_path: Path) -> int:
    args = [command, "--stack", "prod", "--dir", str(directory)]
    if command == "render":
        args += ["--out", str(tmp_path / "out")]
    return cli_main.main(args, out=io.StringIO())


@pytest.mark.parametrize("command", ["render", "check"])
@pytest.mark.parametrize(
    ("pulumi_yaml", "said"),
    [
        ("name: gpushare\nruntime: nodejs\n", "Pulumi.yaml: runtime 'nodejs' is not python: "),
        ("name: gpushare\nruntime: {name: go}\n", "Pulumi.yaml: runtime 'go' is not python: "),
        ("name: gpushare\n", "Pulumi.yaml: runtime 'None' is not python: "),
        (
            "name: gpushare\nruntime: python\nmain: src/\n",
            "Pulumi.yaml: main: 'src/' names another program than ",
        ),
        (
            "name: gpushare\nruntime: python\nmain: app.py\n",
            "Pulumi.yaml: main: 'app.py' names another program",
        ),
    ],
)
def test_another_program_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, pulumi_yaml: str, said: str
) -> None:
    (tmp_path / "p").mkdir()
    directory = project(tmp_path / "p", pulumi_yaml)
    assert run(command, directory, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(said)
    assert not (tmp_path / "out").exists()


def project_commands() -> list[str]:
    """Every subcommand with a --dir (the ones that work on a Pulumi project), read from the parser, so a
    new command is held to the same refusal without editing this list."""
    commands = next(a for a in cli_main.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(
        name for name, sub in commands.choices.items() if any(a.dest == "dir" for a in sub._actions)
    )


def test_the_project_commands_are_the_five_that_read_a_stack() -> None:
    assert project_commands() == ["check", "measure", "plan", "render", "verify"]


@pytest.mark.parametrize("command", project_commands())
def test_no_pulumi_yaml_is_exit_2_and_one_line_for_every_project_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Issue 34: a directory with only stack files is refused alike by every command, before any reads the
    stack or a cluster (verify and measure would otherwise try the kubeconfig), and writes nothing."""
    (tmp_path / "p").mkdir()
    directory = project(tmp_path / "p", None)
    assert run(command, directory, tmp_path) == 2
    assert capsys.readouterr() == (
        "",
        f"{directory}: no Pulumi.yaml (the Pulumi project file) in the --dir directory; give --dir the "
        "project's directory, or start a project there with python -m gpushare init\n",
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("main", [".", "./", None])
def test_main_naming_the_project_directory_is_this_program(tmp_path: Path, main: str | None) -> None:
    text = "name: gpushare\nruntime:\n  name: python\n" + (f"main: {main}\n" if main else "")
    (tmp_path / "Pulumi.yaml").write_text(text)
    check_project_file(tmp_path)  # no refusal


def test_the_repositorys_project_file_is_this_program() -> None:
    check_project_file(PROJECT_DIR)
    with pytest.raises(ProjectFileError):
        check_project_file(PROJECT_DIR / "docs")
