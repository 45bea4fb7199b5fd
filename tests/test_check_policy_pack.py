"""`gpushare check --policy-pack DIR`: a pack that lives outside the project (an organisation's copy),
run offline as `pulumi preview --policy-pack DIR` would run it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, PROJECT_DIR

from gpushare.cli.main import main


def test_a_missing_pack_directory_is_refused_before_anything_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["check", "--stack", "prod", "--dir", str(PROJECT_DIR), "--policy-pack", str(tmp_path / "none")]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        f"--policy-pack {tmp_path / 'none'}: no such directory (a policy pack's directory holds "
        "PulumiPolicy.yaml)\n"
    )


def test_a_directory_without_pulumipolicy_yaml_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", "--stack", "prod", "--dir", str(PROJECT_DIR), "--policy-pack", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"--policy-pack {tmp_path}: no PulumiPolicy.yaml in it (a policy pack's directory holds "
        "PulumiPolicy.yaml)\n"
    )


@pytest.mark.e2e
def test_check_runs_the_pack_it_is_given(tmp_path: Path) -> None:
    pack = tmp_path / "org-policies" / "sample"
    shutil.copytree(FIXTURES / "sample_pack", pack)
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "check", "--stack", "prod", "--policy-pack", str(pack)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The sample pack's one policy, not gpushare's.
    assert "stack-inventory" in done.stdout and "time-slicing-replicas-tuned" not in done.stdout
    assert "sample-pack@v0.1.0 (local: " in done.stdout
    assert "Stack prod: 0 mandatory and 1 advisory violation(s) from 4 policies." in done.stdout
