"""Every file input but the stack (validate and tune inputs, fleet, policy config) read by the one bounded
reader (#27): a FIFO is not waited on, a device is not read, deep nesting and non-JSON tags are one line,
NaN is no number, and a measurement below the plausibility floor is refused by tune, advise and fleet alike.

FIFOs run as real subprocesses (a regression would hang the command, not fail it); the rest in-process
through the CLI's own entry point.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli.main import main

PROJECT_DIR = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # a guard against a hang, far above what a refusal takes
FLOOR = (
    "MiB is below 256 MiB, less than a CUDA context alone takes: a misreading (MiB for GiB?); measure the "
    "largest process with nvidia-smi --query-compute-apps=used_memory"
)
TAG_RULE = "is not allowed here (only strings, numbers, booleans, null, lists and mappings)"
# (argv before the file, exit code for an unreadable file)
FILE_COMMANDS = {
    "validate-device-plugin": (["validate", "device-plugin-config"], 2),
    "validate-mig": (["validate", "mig-config"], 2),
    "tune": (["tune", "--gpu", "L20", "--from-nvidia-smi"], 2),
    # An input that cannot be read at all is exit 2 in every command (the CLI's convention).
    "fleet": (["advise", "--fleet"], 2),
    "policy-config": (["check", "--stack", "prod", "--policy-config"], 2),
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv, io.StringIO())
    return code, capsys.readouterr().err


@pytest.mark.e2e
def test_a_fifo_is_refused_by_every_command_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes to it: open() for reading would wait forever
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-m", "gpushare", *argv, str(fifo)],
            cwd=PROJECT_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (argv, _) in FILE_COMMANDS.items()
    }
    for name, process in processes.items():
        _, err = process.communicate(timeout=TIMEOUT)
        assert (process.returncode, err) == (
            FILE_COMMANDS[name][1],
            f"{fifo}: is a FIFO (named pipe), not a regular file; not read\n",
        ), name


@pytest.mark.parametrize("name", sorted(FILE_COMMANDS))
def test_a_device_is_not_read(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, code = FILE_COMMANDS[name]
    assert run([*argv, "/dev/zero"], capsys) == (
        code,
        "/dev/zero: is a character device, not a regular file; not read\n",
    )


def test_fleet_nesting_tags_and_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        # 200 000 `[` took a minute of CPU in the scanner, then a RecursionError traceback.
        "[" * 200_000 + "]" * 200_000: "not valid YAML: nested more than 16 levels deep",
        "services: !!binary c2VydmljZXM=\ncandidates: [L20]\n": f"not valid YAML: line 1, column 11: the tag !!binary {TAG_RULE}",
        "services: [{name: a, measuredMiB: 4621, replicas: 1, measuredAt: !!timestamp 2025-06-01}]\n"
        "candidates: [L20]\n": f"not valid YAML: line 1, column 66: the tag !!timestamp {TAG_RULE}",
        "services: [{name: a, measuredMiB: 4621, replicas: 1}]\ncandidates: [L20]\nceiling: .nan\n": "ceiling: must be a number, not NaN or infinity",
        "services: [{name: a, measuredMiB: 1, replicas: 1}]\ncandidates: [L20]\n": f"services[0].measuredMiB: 1 {FLOOR}",
    }
    for index, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f"fleet-{index}.yaml"
        path.write_text(text)
        assert run(["advise", "--fleet", str(path)], capsys) == (1, f"{path}: {expected}\n"), expected


def test_policy_config_nesting_and_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        '{"all": "advisory", "time-slicing-replicas-tuned": {"utilizationCeiling": NaN}}': "NaN is not a JSON value (a number must be finite)",
        '{"all": "advisory", "x": {"y": Infinity}}': "Infinity is not a JSON value (a number must be finite)",
        '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}": "nested too deeply to be a policy config",
    }
    for index, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f"policy-{index}.json"
        path.write_text(text)
        assert run(["check", "--stack", "prod", "--policy-config", str(path)], capsys) == (
            1,
            f"{path}: {expected}\n",
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["tune", "--gpu", "L20", "--measured-mib", "1"],
        ["tune", "--gpu", "H20", "--mig-profile", "1g.12gb", "--measured-mib", "255"],
        ["advise", "--gpu", "H20", "--measured-mib", "1"],
    ],
    ids=["tune", "tune-mig", "advise"],
)
def test_the_floor_applies_to_tune_and_advise(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    measured = argv[-1]
    assert run(argv, capsys) == (1, f"measured memory: {measured} {FLOOR}\n")


def test_a_nan_ceiling_is_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    # A flag's value is a usage error: argparse names the flag and exits 2.
    with pytest.raises(SystemExit) as exited:
        main(["tune", "--gpu", "L20", "--measured-mib", "4621", "--ceiling", "nan"], io.StringIO())
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m gpushare tune: error: argument --ceiling: 'nan' is not a number"
    )


def test_replicas_stop_at_the_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert main(["tune", "--gpu", "H20", "--measured-mib", "300"], out) == 0
    # floor(0.9 x 97871 / 300) = 293 by memory; 110 (the kubelet's default max pods) is the ceiling.
    # 110 x 300 / 97871 = 33.7 %; 97871 / 110 - 300 = 589.7 MiB.
    assert out.getvalue() == (
        "H20: 97871 MiB, largest process 300 MiB, ceiling 0.9\n"
        "replicas: 110  utilization 33.7 %  headroom ~589 MiB per slot (at most 110 per GPU: the kubelet's "
        "default max pods per node)\n"
    )
