"""The policy pack's environment is lean: a fresh virtualenv built from `policies/requirements.txt` alone
(and the wheel this repository builds, through `--find-links`) takes at most 150 MB on disk.

Before the core/extras split the same venv took 817 MB (issue 33: Helm's Go SDK 244 MB, the TencentCloud
SDK 147 MB, the Kubernetes client and validators); pulumi, pulumi-policy, pydantic and PyYAML with pip
itself measured 96 MB here. Needs the packages from PyPI (or pip's cache): e2e."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

pytestmark = pytest.mark.e2e

LIMIT_MB = 150


def _size_mb(directory: Path) -> float:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            path = Path(root, name)
            if not path.is_symlink():
                total += path.stat().st_blocks * 512  # on disk, as `du` counts it
    return total / 2**20


def _run(*command: str | Path, cwd: Path) -> None:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_venv_from_the_packs_requirements_alone_is_at_most_150_mb(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--wheel-dir",
        wheels,
        PROJECT_DIR,
        cwd=tmp_path,
    )
    pack_venv = tmp_path / "venv"
    venv.create(pack_venv, with_pip=True)
    python = pack_venv / "bin" / "python"
    requirements = PROJECT_DIR / "policies" / "requirements.txt"
    _run(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
        requirements,
        "--find-links",
        wheels,
        cwd=tmp_path,
    )
    # What it holds: gpushare's core and the pack's own pins, nothing of the extras.
    _run(python, "-c", "import gpushare.stack.loading, pulumi_policy", cwd=tmp_path)
    for heavy in ("helm", "tencentcloud_iac_pulumi", "kubernetes", "pulumi_kubernetes"):
        done = subprocess.run([python, "-c", f"import {heavy}"], capture_output=True, timeout=60)
        assert done.returncode != 0, heavy
    size = _size_mb(pack_venv)
    assert size <= LIMIT_MB, f"the pack's venv takes {size:.0f} MB"
