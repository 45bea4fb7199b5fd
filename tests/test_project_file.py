"""`render` and `check` run the project's `__main__.py` under Python: a Pulumi.yaml whose program is
another (another runtime, or `main:` elsewhere) is refused in one line, exit 2, before anything runs; a
directory without Pulumi.yaml is exit 2 for both (issue 34). The __main__.py here would fail loudly if run.
"""

from __future__ import annotations

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


@pytest.mark.parametrize("command", ["render", "check"])
def test_no_pulumi_yaml_is_exit_2_for_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "p").mkdir()
    directory = project(tmp_path / "p", None)
    assert run(command, directory, tmp_path) == 2
    assert capsys.readouterr().err == f"{directory}: no Pulumi.yaml\n"


@pytest.mark.parametrize("main", [".", "./", None])
def test_main_naming_the_project_directory_is_this_program(tmp_path: Path, main: str | None) -> None:
    text = "name: gpushare\nruntime:\n  name: python\n" + (f"main: {main}\n" if main else "")
    (tmp_path / "Pulumi.yaml").write_text(text)
    check_project_file(tmp_path)  # no refusal


def test_the_repositorys_project_file_is_this_program() -> None:
    check_project_file(PROJECT_DIR)
    with pytest.raises(ProjectFileError):
        check_project_file(PROJECT_DIR / "docs")
