"""`gpushare init`: a team's own project, started with one command, runs the program this repository
tests. Unit tests here; tests/test_init_from_wheel.py starts one from the built wheel alone (e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare import project_template
from gpushare.cli.main import main
from gpushare.errors import ConfigError
from gpushare.stack.loading import load_stack

FLAGS = [
    "--measured-at",
    "2025-06-01",
    "--source",
    "nvidia-smi on a t4 node",
    "--cluster-id",
    "cls-team0001",
    "--vpc-id",
    "vpc-team0001",
    "--subnet-id",
    "subnet-team0001",
]


def test_the_template_is_the_repositorys_program() -> None:
    assert (PROJECT_DIR / "Pulumi.yaml").read_text() == project_template.PULUMI_YAML
    assert (PROJECT_DIR / "__main__.py").read_text() == project_template.MAIN_PY
    assert project_template.REQUIREMENTS_TXT == "gpushare[program]==0.1.0\n"


def test_init_writes_a_project_whose_stack_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["init", "--gpu", "T4", "--measured-mib", "4401", "--dir", str(tmp_path), *FLAGS])
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "Pulumi.dev.yaml",
        "Pulumi.yaml",
        "__main__.py",
        "requirements.txt",
    ]
    stack = load_stack(tmp_path, "dev")
    [pool] = stack.pools
    # floor(0.9 x 15360 / 4401) = 3 replicas on the catalog's T4 type
    assert (pool.name, pool.gpu, pool.instance_type, pool.sharing.mode) == (
        "t4",
        "T4",
        "GN7.2XLARGE32",
        "time-slicing",
    )
    # One fixed node to start with (min = desired = max = 1): no autoscaling until the team chooses it.
    assert (pool.nodes.min, pool.nodes.desired, pool.nodes.max) == (1, 1, 1)
    assert stack.cluster.id == "cls-team0001" and stack.cluster.subnet_ids == ("subnet-team0001",)
    assert stack.sharing.device_plugin.managed_plugin.action == "optOut"
    assert capsys.readouterr().out == (
        f"wrote Pulumi.yaml, __main__.py, requirements.txt, Pulumi.dev.yaml in {tmp_path}\n"
        "then: gpushare render --stack dev (offline), or pulumi install && pulumi preview\n"
    )


def test_values_no_flag_gives_are_placeholders_the_loader_refuses(tmp_path: Path) -> None:
    assert main(["init", "--gpu", "T4", "--measured-mib", "4401", "--dir", str(tmp_path)]) == 0
    with pytest.raises(ConfigError) as refused:
        load_stack(tmp_path, "dev")
    keys = [line.split(": ")[1] for line in str(refused.value).splitlines()]
    assert keys == [
        "gpushare:cluster.id",
        "gpushare:cluster.vpcId",
        "gpushare:cluster.subnetIds[0]",
        "gpushare:pools[0].sharing.measuredAt",
        "gpushare:pools[0].sharing.source",
    ]


def test_init_writes_nothing_where_a_project_file_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "__main__.py").write_text("# mine\n")
    assert main(["init", "--gpu", "T4", "--measured-mib", "4401", "--dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path}: __main__.py already there; init writes a new project only (nothing was written)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__main__.py"]
    assert (tmp_path / "__main__.py").read_text() == "# mine\n"
