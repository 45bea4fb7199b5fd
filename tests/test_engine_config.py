"""The offline runner hands the program and the pack the config the real CLI would (make test-engine):
for every stack, `pulumi config --json` of the CLI built by make engine against
`gpushare.offline.stack_files.load_stack_config`, value for value (objects as the same compact JSON
string), and the same secret keys once the CLI itself has stored a secret."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import PROJECT_DIR, STACKS
from test_engine_cli import pulumi

from gpushare.offline.stack_files import load_stack_config

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a copy of the project's Pulumi files with each stack created on a file backend, PULUMI_HOME).
    The stacks are created while their files are away: `pulumi stack init` rewrites a stack file."""
    root = tmp_path_factory.mktemp("engine-config")
    home, state, copy = root / "home", root / "state", root / "project"
    state.mkdir()
    copy.mkdir()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", copy)
    assert pulumi(home, "login", f"file://{state}").returncode == 0
    for stack in STACKS:
        created = pulumi(home, "stack", "init", stack, "--secrets-provider", "passphrase", "--cwd", str(copy))
        assert created.returncode == 0, created.stderr
        shutil.copy(PROJECT_DIR / f"Pulumi.{stack}.yaml", copy)
    return copy, home


def cli_config(project: tuple[Path, Path], stack: str) -> dict[str, dict[str, object]]:
    copy, home = project
    shown = pulumi(home, "config", "--json", "--stack", stack, "--cwd", str(copy))
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


@pytest.mark.parametrize("stack", STACKS)
def test_the_offline_config_is_the_clis(project: tuple[Path, Path], stack: str) -> None:
    values, secret_keys = load_stack_config(project[0], stack)
    cli = cli_config(project, stack)
    assert values == {key: entry["value"] for key, entry in cli.items()}
    assert sorted(secret_keys) == sorted(key for key, entry in cli.items() if entry["secret"]) == []


def test_a_secret_the_cli_stored_is_a_secret_offline(project: tuple[Path, Path]) -> None:
    copy, home = project
    try:
        stored = pulumi(
            home,
            "config",
            "set",
            "--secret",
            "gpushare:kubeconfig",
            "apiVersion: v1",
            "--stack",
            "prod",
            "--cwd",
            str(copy),
        )
        assert stored.returncode == 0, stored.stderr
        values, secret_keys = load_stack_config(copy, "prod")
        cli = cli_config(project, "prod")
    finally:
        shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", copy)  # as the other tests expect it
    assert (
        sorted(secret_keys)
        == [key for key, entry in cli.items() if entry["secret"]]
        == ["gpushare:kubeconfig"]
    )
    # The CLI re-saved the file (quoting `protectPools`): the other values still agree.
    assert {k: v for k, v in values.items() if k not in secret_keys} == {
        key: entry["value"] for key, entry in cli.items() if not entry["secret"]
    }
