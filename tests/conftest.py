from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

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
