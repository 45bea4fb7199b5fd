"""Stack files as YAML types them, through the stack model, the real program and the policy pack.

tests/fixtures/stacks/Pulumi.yaml-types.yaml is written the way people write YAML: an unquoted
`measuredAt: 2025-06-01`, the GPU Operator left to its defaults, a pool at TKE's 2000-node limit. The
refusals are the same stack with one value typed the other ways YAML allows: a number in quotes, `yes` for
a boolean, an empty string, one past a bound. Expected values by hand: L20 floor(0.9 x 46068 / 4621) = 8.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURE_STACKS, PROJECT_DIR, write_project_file

from gpushare import kube_names
from gpushare.cli.main import main
from gpushare.errors import ConfigError
from gpushare.offline.recorded import ProgramRun
from gpushare.offline.render import run_stack
from gpushare.offline.stack_files import load_stack_config
from gpushare.stack import reader as stack_reader
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import TimeSlicing

STACK = "yaml-types"
FIXTURE = FIXTURE_STACKS / f"Pulumi.{STACK}.yaml"
TEXT = FIXTURE.read_text()
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program (Pulumi.yaml, __main__.py, components/) beside the fixture stack."""
    directory = tmp_path_factory.mktemp("yaml-types")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_DIR / name, directory / name)
    (directory / "components").symlink_to(PROJECT_DIR / "components")
    shutil.copy(FIXTURE, directory / FIXTURE.name)
    return directory


@pytest.fixture(scope="module")
def program_run(project: Path) -> ProgramRun:
    return run_stack(project, STACK).run


def test_the_stack_loads_with_the_defaults_it_leaves_out() -> None:
    stack = load_stack_file(FIXTURE)
    operator = stack.plugin.gpu_operator
    # TKE installs the driver and the runtime (README, GPU Operator): the operator's stay off unless asked.
    assert (operator.driver_enabled, operator.toolkit_enabled, operator.cdi_enabled) == (False, False, False)
    assert (operator.runtime_class, operator.namespace) == ("runc", "gpu-operator")
    assert stack.plugin.managed_plugin.action == "optOut"  # the default outside daemonsets mode
    pool, h20 = stack.pools
    assert (pool.nodes.min, pool.nodes.max, pool.nodes.desired) == (0, 2000, 1)
    assert isinstance(h20.sharing, TimeSlicing) and h20.sharing.measured_at == "2025-06-01"
    assert isinstance(pool.sharing, TimeSlicing)
    assert pool.sharing.measured_at == "2025-06-01"  # a string, as the Pulumi CLI hands it over
    assert stack.sharing.utilization_ceiling == 0.9


def test_the_operator_release_leaves_nvidias_driver_and_toolkit_off(program_run: ProgramRun) -> None:
    values = program_run.resource(RELEASE, "gpushare-gpu-operator-release").inputs["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["operator"] == {"runtimeClass": "runc"}


def test_the_unquoted_date_reaches_the_tuning_annotation(program_run: ProgramRun) -> None:
    config_map = next(
        r for r in program_run.resources if r.type == CONFIG_MAP and "device-plugin-config" in r.name
    )
    provenance = json.loads(
        config_map.inputs["metadata"]["annotations"][f"{kube_names.ANNOTATION_TUNING_PREFIX}l20"]
    )
    assert (provenance["measuredAt"], provenance["measuredMiB"]) == ("2025-06-01", 4621)
    assert provenance["resources"][0]["replicas"] == 8


def test_the_pack_counts_the_unquoted_dates_age(
    project: Path,
    program_run: ProgramRun,
    monkeypatch: pytest.MonkeyPatch,
    fixed_today: Callable[[date], None],
) -> None:
    """The stack config as `check` hands it to the pack (PULUMI_CONFIG), the date still a date to it:
    2025-06-01 to 2026-01-15 is 30 + 31 + 31 + 30 + 31 + 30 + 31 + 14 = 228 days, older than 180."""
    from test_policies import Res, all_messages, engine_value, mandatory, messages_of, resource_messages

    from gpushare_policies import rules

    fixed_today(date(2026, 1, 15))
    values, _ = load_stack_config(project, STACK)
    monkeypatch.setenv("PULUMI_STACK", STACK)
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(values))
    resources = [
        Res(r.type, r.name, engine_value(r.inputs), STACK)
        for r in program_run.resources
        if r.custom and r.type
    ]
    config_map = next(r for r in resources if r.type == CONFIG_MAP and "device-plugin-config" in r.name)
    stale = messages_of("time-slicing-measurement-fresh", [config_map])
    assert len(stale) == 2 and all(
        "2025-06-01" in m and "228 days ago, older than 180 days" in m for m in stale
    )
    assert 'key "l20"' in stale[0] + stale[1] and 'key "h20"' in stale[0] + stale[1]
    # The whole H20 is tuned against its 97871 MiB, not a MIG instance's: its 19 replicas pass.
    tuned = rules.POLICIES_BY_NAME["time-slicing-replicas-tuned"]
    assert resource_messages(tuned, config_map) == []  # type: ignore[arg-type]
    assert mandatory(all_messages(resources)) == {}


# --------------------------------------------------------------------------------------------------------
# The same stack, one value typed another way


def _edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    document = yaml.safe_load(TEXT.replace("measuredAt: 2025-06-01", 'measuredAt: "2025-06-01"'))
    edit(document["config"])
    path = tmp_path / "Pulumi.typed.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _pool(config: dict[str, Any]) -> dict[str, Any]:
    pool: dict[str, Any] = config["gpushare:pools"][0]
    return pool


def _operator(config: dict[str, Any]) -> dict[str, Any]:
    plugin = config["gpushare:sharing"]["devicePlugin"]
    operator: dict[str, Any] = plugin.setdefault("gpuOperator", {})
    return operator


F = "Pulumi.typed.yaml"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # TKE's limit is 2000 nodes per pool; each of the three counts has it.
        (lambda c: _pool(c)["nodes"].update(max=2001), f"{F}: gpushare:pools[0].nodes.max: must be <= 2000"),
        (
            lambda c: _pool(c)["nodes"].update(min=2001, max=2001, desired=2001),
            f"{F}: gpushare:pools[0].nodes.min: must be <= 2000\n"
            f"{F}: gpushare:pools[0].nodes.max: must be <= 2000\n"
            f"{F}: gpushare:pools[0].nodes.desired: must be <= 2000",
        ),
        (
            lambda c: _pool(c)["nodes"].update(desired=2001),
            f"{F}: gpushare:pools[0].nodes.desired: must be <= 2000",
        ),
        # A number in quotes is a string: never coerced.
        (
            lambda c: _pool(c).update(gpusPerNode="1"),
            f"{F}: gpushare:pools[0].gpusPerNode: must be an integer",
        ),
        (
            lambda c: _pool(c)["sharing"].update(measuredMiB="4621"),
            f"{F}: gpushare:pools[0].sharing.measuredMiB: must be an integer",
        ),
        # YAML 1.2 (the CLI's yaml.v3): `yes` is the string "yes", not a boolean.
        (
            lambda c: _operator(c).update(driverEnabled="yes"),
            f"{F}: gpushare:sharing.devicePlugin.gpuOperator.driverEnabled: must be true or false",
        ),
        # TKE's provider needs both name and version of a driver (ValidateTkeGpuDriverVersion).
        (
            lambda c: _pool(c).update(driver={"name": "", "version": "535.161.07"}),
            f"{F}: gpushare:pools[0].driver.name: String should have at least 1 character",
        ),
        (
            lambda c: _pool(c).update(driver={"name": "NVIDIA-Linux-x86_64-535.161.07.run", "version": ""}),
            f"{F}: gpushare:pools[0].driver.version: String should have at least 1 character",
        ),
    ],
)
def test_values_typed_the_other_way_are_refused_naming_the_key(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack_file(_edited(tmp_path, edit))
    assert str(caught.value) == expected


def test_the_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    def edit(config: dict[str, Any]) -> None:
        _pool(config)["nodes"] = {"min": 2000, "max": 2000, "desired": 2000}
        _pool(config)["driver"] = {"name": "x", "version": "5"}  # one character each: not empty
        _operator(config)["driverEnabled"] = True

    stack = load_stack_file(_edited(tmp_path, edit))
    pool = stack.pools[0]
    assert (pool.nodes.min, pool.nodes.desired, pool.nodes.max) == (2000, 2000, 2000)
    assert pool.driver is not None and (pool.driver.name, pool.driver.version) == ("x", "5")
    assert stack.plugin.gpu_operator.driver_enabled is True


def test_a_stack_file_that_cannot_be_read_is_one_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stack file the user may not read (`chmod 000`; root reads it anyway, so the refusal is the
    kernel's answer, EACCES, made by hand): one line naming the file, no traceback."""
    write_project_file(tmp_path)
    path = tmp_path / "Pulumi.locked.yaml"
    path.write_text(TEXT)
    real_open = os.open

    def refuse(name: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(name).name == path.name:  # every file input is opened by the one bounded reader
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert str(caught.value) == "Pulumi.locked.yaml: cannot read: Permission denied"
    code = main(["plan", "--stack", "locked", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "Pulumi.locked.yaml: cannot read: Permission denied" in err
    assert "Traceback" not in err


def test_a_label_gpushare_sets_itself_is_refused_in_the_pools_labels(tmp_path: Path) -> None:
    def edit(config: dict[str, Any]) -> None:
        _pool(config)["labels"] = {"gpushare.io/pool": "other"}

    with pytest.raises(ConfigError) as caught:
        load_stack_file(_edited(tmp_path, edit))
    assert str(caught.value) == (
        f'{F}: gpushare:pools[0].labels["gpushare.io/pool"]: gpushare sets gpushare.io/pool on this pool\'s '
        "nodes itself; a value here would be overwritten"
    )


def test_a_stack_file_one_byte_over_the_bound_is_refused_not_cut_and_parsed(tmp_path: Path) -> None:
    """The fixture, then a comment up to the bound + 1 byte: read to the bound only, it would parse."""
    path = tmp_path / "Pulumi.big.yaml"
    head = TEXT + "#"
    path.write_text(head + "x" * (stack_reader.MAX_STACK_FILE_BYTES + 1 - len(head.encode())))
    assert path.stat().st_size == stack_reader.MAX_STACK_FILE_BYTES + 1
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert str(caught.value) == "Pulumi.big.yaml: larger than 4 MiB; not a stack file"
    exact = tmp_path / "Pulumi.exact.yaml"
    exact.write_text(head + "x" * (stack_reader.MAX_STACK_FILE_BYTES - len(head.encode())))
    assert load_stack_file(exact).pools[0].name == "l20"


def test_a_process_as_large_as_the_gpu_is_accepted_and_one_mib_more_refused(tmp_path: Path) -> None:
    # L20 46068 MiB (catalog): measured 46068 fits (0 replicas: floor(0.9 x 46068 / 46068) = 0, exclusive).
    def measured(mib: int) -> Callable[[dict[str, Any]], None]:
        return lambda config: _pool(config)["sharing"].update(measuredMiB=mib)

    assert load_stack_file(_edited(tmp_path, measured(46068))).pools[0].name == "l20"
    with pytest.raises(ConfigError, match=r"gpushare:pools\[0\]\.sharing\.measuredMiB: 46069 MiB"):
        load_stack_file(_edited(tmp_path, measured(46069)))
