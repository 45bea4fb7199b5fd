"""`pulumi package add ./package` installs the component package before it starts it: the CLI's pip
toolchain (pulumi/pulumi `sdk/python/toolchain/pip.go`, `InstallDependencies`) creates the plugin's
virtualenv, runs `<venv>/bin/python -m pip install --upgrade pip setuptools wheel`, then
`<venv>/bin/python -m pip install -r requirements.txt` with the plugin's folder as working directory and
the virtualenv activated. The component tests start the host with the test's interpreter, so only this
test runs that install. It needs PyPI (or the pip cache)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.offline.component_host import start_component_provider

# Creates a virtualenv and installs the program's requirements into it: make test-e2e.
pytestmark = pytest.mark.e2e

PACKAGE_DIR = PROJECT_DIR / "package"
# A cold pip cache downloads the providers' SDKs (tencentcloud-iac-pulumi alone is large).
INSTALL_TIMEOUT_SECONDS = 900


def _pip_as_the_cli_runs_it(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONHOME", None)
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", *args],
        cwd=PACKAGE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
        check=False,
    )


def test_the_package_installs_from_its_folder_as_the_cli_installs_it_and_its_host_starts(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    upgrade = _pip_as_the_cli_runs_it(venv, "--upgrade", "pip", "setuptools", "wheel")
    assert upgrade.returncode == 0, upgrade.stderr[-3000:]
    install = _pip_as_the_cli_runs_it(venv, "-r", "requirements.txt")
    assert install.returncode == 0, install.stderr[-3000:]
    # The installed virtualenv runs the host as the CLI starts it (`<venv>/bin/python <package dir> <engine>`).
    with start_component_provider(PACKAGE_DIR, python=str(venv / "bin" / "python")) as provider:
        schema = provider.schema()
    assert list(schema["resources"]) == ["gpushare:index:GpuSharingCluster"]
