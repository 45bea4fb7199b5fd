from __future__ import annotations

import copy
import os
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare import stack_config

PROJECT_DIR = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT_DIR / "tests" / "fixtures"
# Stacks that exist only for tests: HELM_MIG is the device-plugin chart with a time-sliced H20 MIG pool
# (pre-start script), the mode combination no repo stack uses since staging moved to the GPU Operator.
FIXTURE_STACKS = FIXTURES / "stacks"
HELM_MIG = "helm-mig"


def stack_file(stack: str) -> Path:
    """`Pulumi.<stack>.yaml` of the project, else of the test fixtures."""
    path = PROJECT_DIR / f"Pulumi.{stack}.yaml"
    return path if path.is_file() else FIXTURE_STACKS / f"Pulumi.{stack}.yaml"


# Every stack file of the project, by stack name (what `make ci-stacks` renders and checks).
STACKS = sorted(
    path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in PROJECT_DIR.glob("Pulumi.*.yaml")
)


@pytest.fixture
def project_dir() -> Path:
    return PROJECT_DIR


@pytest.fixture
def stack_document() -> Callable[[str], dict[str, Any]]:
    """A deep copy of a stack file in the repo, to break on purpose."""

    def load(stack: str) -> dict[str, Any]:
        document: dict[str, Any] = yaml.safe_load(stack_file(stack).read_text())
        return copy.deepcopy(document)

    return load


@pytest.fixture
def write_stack(tmp_path: Path) -> Callable[[dict[str, Any], str], Path]:
    def write(document: dict[str, Any], stack: str = "test") -> Path:
        path = tmp_path / f"Pulumi.{stack}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    return write


@pytest.fixture
def fixed_today(monkeypatch: pytest.MonkeyPatch) -> Callable[[date], None]:
    """Fix "today" for the stack loader and the policy pack alike: both ask
    `gpushare.stack_config.latest_date_on_earth` (the calendar day in UTC+14)."""

    def fix(day: date) -> None:
        monkeypatch.setattr(stack_config, "latest_date_on_earth", lambda: day)

    return fix


# --------------------------------------------------------------------------------------------------------
# The team's reference tree (../shared): parity tests compare against NVIDIA's own files kept there.

SHARED_DIR = Path(os.environ.get("GPUSHARE_SHARED_DIR") or PROJECT_DIR.parent / "shared")
# Set where the reference tree is absent by design (the GitHub workflow: it is not part of the repo).
NO_SHARED_VARIABLE = "GPUSHARE_NO_SHARED"


def shared_file(relative: str) -> Path:
    """`relative` inside the reference tree ($GPUSHARE_SHARED_DIR, default ../shared), for a parity test.

    Missing: in CI (CI=true) the test fails, since a parity test that silently skips proves nothing,
    unless GPUSHARE_NO_SHARED=1 says the CI has no reference tree by design; outside CI it is skipped,
    naming the path."""
    path = SHARED_DIR / relative
    if path.exists():
        return path
    if os.environ.get(NO_SHARED_VARIABLE) == "1":
        pytest.skip(f"{path} is absent and {NO_SHARED_VARIABLE}=1 says so (no reference tree here)")
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(
            f"{path} is missing: this parity test needs the reference tree in CI (set GPUSHARE_SHARED_DIR "
            f"to where it is, or {NO_SHARED_VARIABLE}=1 where it is absent by design)",
            pytrace=False,
        )
    pytest.skip(f"{path} is missing (the reference tree; GPUSHARE_SHARED_DIR says where it is)")
