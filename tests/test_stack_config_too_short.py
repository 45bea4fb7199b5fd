"""The stack model's "needs at least 1 item(s)": said of an empty list, and only of an empty one.

pydantic counts only the valid items of a list, so a list whose every item is invalid is also "too short";
the loader drops that line when an error sits inside the list (`errors_below`), never when the list itself
is what is empty. Through `gpushare plan`, as a user meets it; the stack is prod's with one edit.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR, write_project_file

from gpushare.cli.main import main

PROD = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
F = "Pulumi.bad.yaml"


def plan_errors(tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> list[str]:
    write_project_file(tmp_path)
    (tmp_path / F).write_text(yaml.safe_dump(document))
    assert main(["plan", "--stack", "bad", "--dir", str(tmp_path)], io.StringIO()) == 1
    return capsys.readouterr().err.splitlines()


def test_an_empty_list_needs_at_least_one_item(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = copy.deepcopy(PROD)
    document["config"]["gpushare:pools"] = []
    assert plan_errors(tmp_path, document, capsys) == [f"{F}: gpushare:pools: needs at least 1 item(s)"]


def test_an_empty_nested_list_is_reported_at_its_own_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(PROD)
    document["config"]["gpushare:cluster"]["subnetIds"] = []
    assert plan_errors(tmp_path, document, capsys) == [
        f"{F}: gpushare:cluster.subnetIds: needs at least 1 item(s)"
    ]


def test_a_list_of_one_invalid_item_is_not_called_too_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(PROD)
    pools = document["config"]["gpushare:pools"]
    del pools[1:]
    pools[0]["nodes"]["min"] = -1
    assert plan_errors(tmp_path, document, capsys) == [f"{F}: gpushare:pools[0].nodes.min: must be >= 0"]
