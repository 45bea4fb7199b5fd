"""`gpushare init` from the built wheel alone (e2e): a team's project, started outside this repository with
nothing of it but the wheel, renders. Apart from tests/test_project_template.py so that the unit tests
there stay a few seconds (the mutation runner skips a test file slower than its budget)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import PROJECT_DIR
from test_project_template import FLAGS


@pytest.mark.e2e
def test_a_project_started_from_the_wheel_alone_renders(tmp_path: Path) -> None:
    """Build the wheel, install it with its `all` extra in a fresh venv outside the repository, `init`,
    `render`: nothing of the repository but the wheel is used."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(wheels),
            str(PROJECT_DIR),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [wheel] = wheels.glob("gpushare-*.whl")
    tool = tmp_path / "tool"
    venv.create(tool, with_pip=True)
    subprocess.run(
        [tool / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[all]"],
        check=True,
        capture_output=True,
        timeout=900,
    )
    project = tmp_path / "team-gpus"
    project.mkdir()
    gpushare = str(tool / "bin" / "gpushare")
    done = subprocess.run(
        [gpushare, "init", "--gpu", "T4", "--measured-mib", "4401", *FLAGS],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shutil.rmtree(wheels)  # nothing but the installed distribution from here on
    done = subprocess.run(
        [gpushare, "render", "--stack", "dev", "--out", "out/dev"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 schedulable GPU slots against 1 before sharing." in done.stdout
    assert (project / "out" / "dev" / "tke" / "gpushare-t4.yaml").is_file()
