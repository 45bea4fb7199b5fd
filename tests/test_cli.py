"""`python -m gpushare`: output, JSON shape and exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli.main import main


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, out)
    return code, out.getvalue()


@pytest.mark.e2e
def test_plan_through_the_real_entry_point(project_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "plan", "--stack", "prod", "--json"],
        cwd=project_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    capacity = json.loads(done.stdout)
    assert [(p["name"], p["slots"]) for p in capacity["pools"]] == [("l20", 8), ("t4", 3)]
    assert (capacity["totalSlots"], capacity["slotsBefore"]) == (11, 2)


@pytest.mark.parametrize("command", [["render", "--out", "{dir}/out"], ["check"]])
def test_render_and_check_of_a_directory_without_the_program_are_one_line_and_exit_1(
    command: list[str], project_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml"):  # a valid stack, but no __main__.py beside it
        (tmp_path / name).write_text((project_dir / name).read_text())
    argv = [part.replace("{dir}", str(tmp_path)) for part in command]
    code, _ = run([argv[0], "--stack", "prod", "--dir", str(tmp_path), *argv[1:]])
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"{tmp_path}: no __main__.py: not the Pulumi program's directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.prod.yaml", "Pulumi.yaml"]


def test_plan_of_a_missing_stack_is_one_line_exit_2_listing_the_stacks(
    project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run(["plan", "--stack", "nope"])
    assert code == 2  # unreadable input, as a missing file is for every command
    assert capsys.readouterr().err == (
        f"Pulumi.nope.yaml: no such stack file ({project_dir}/Pulumi.nope.yaml) "
        f"(stacks in {project_dir}: dev, prod, qgpu, staging)\n"
    )


def test_catalog_json_is_camel_case() -> None:
    code, text = run(["catalog", "--json"])
    assert code == 0
    models = {m["model"]: m for m in json.loads(text)}
    assert models["L20"]["memoryMiB"] == 46068 and not models["L20"]["migCapable"]
    profile = models["H20"]["migProfiles"][0]
    assert set(profile) >= {
        "name",
        "id",
        "computeSlices",
        "memorySlices",
        "maxInstances",
        "placementStarts",
        "placementSize",
        "memoryMiB",
    }


def test_catalog_json_is_indented_by_two_like_every_commands_json() -> None:
    """The L20 entry as printed: the seed's 46068 MiB (nvidia-smi -q on PNV5b.8XLARGE96), no MIG."""
    code, text = run(["catalog", "--json"])
    assert code == 0
    assert text.startswith(
        "[\n"
        "  {\n"
        '    "model": "L20",\n'
        '    "product": "NVIDIA L20",\n'
        '    "architecture": "Ada Lovelace",\n'
        '    "computeCapability": "8.9",\n'
        '    "memoryMiB": 46068,\n'
        '    "memorySource": "seed: nvidia-smi -q on PNV5b.8XLARGE96",\n'
        '    "migCapable": false,\n'
        '    "migProfiles": [],\n'
        '    "qgpu": {\n'
        '      "allocatableGiB": 44,\n'
        '      "confidence": "third-party",\n'
        '      "source": "camushoilingma/qgpu-demo @ 22fa0d7: an L20 native node (PNV5b.8XLARGE96) showed 44"\n'
        "    }\n"
        "  },\n"
    )
    assert text.endswith("]\n")


def test_catalog_table_lists_every_model() -> None:
    code, text = run(["catalog"])
    assert code == 0
    for key in ("L20", "T4", "H20", "A100-80GB", "H100-94GB", "V100"):
        assert key in text


def test_tune_json() -> None:
    code, text = run(["tune", "--gpu", "L20", "--measured-mib", "4621", "--json"])
    assert code == 0
    # The seed's L20: floor(0.9 x 46068 / 4621) = floor(8.97) = 8 replicas; 8 x 4621 / 46068 = 0.8025 of the
    # memory; each slot's share 46068 / 8 = 5758.5 MiB, 1137.5 above the measured 4621. Printed as the other
    # --json outputs are: two-space indents, keys in this order, one newline at the end.
    expected = {
        "gpu": "L20",
        "migProfile": None,
        "memoryMiB": 46068,
        "measuredMiB": 4621,
        "ceiling": 0.9,
        "replicas": 8,
        "shared": True,
        "utilization": 0.8025,
        "headroomMiBPerSlot": 1137.5,
    }
    assert text == json.dumps(expected, indent=2) + "\n"


def test_tune_from_nvidia_smi_output(project_dir: Path) -> None:
    fixtures = project_dir / "tests" / "fixtures" / "nvidia_smi"
    code, text = run(
        [
            "tune",
            "--gpu",
            "L20",
            "--from-nvidia-smi",
            str(fixtures / "compute_apps_l20.csv"),
            "--gpu-total-from",
            str(fixtures / "q_l20.txt"),
        ]
    )
    assert code == 0
    assert "replicas: 8" in text


def test_tune_reports_sharing_off() -> None:
    code, text = run(["tune", "--gpu", "T4", "--measured-mib", "9000"])
    assert code == 0
    assert "sharing off" in text


def test_tune_flag_errors_exit_2_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, line in [
        (["--gpu", "T4", "--measured-mib", "0"], "argument --measured-mib: must be > 0 MiB, got 0"),
        (
            ["--gpu", "X1", "--measured-mib", "10"],
            "argument --gpu: unknown GPU model 'X1': not in the catalog; known: ",
        ),
        (
            ["--gpu", "T4", "--measured-mib", "10", "--ceiling", "1.5"],
            "argument --ceiling: must be in (0, 1], got 1.5",
        ),
    ]:
        with pytest.raises(SystemExit) as exited:
            run(["tune", *argv])
        assert exited.value.code == 2
        assert f"python -m gpushare tune: error: {line}" in capsys.readouterr().err


def test_tune_unreadable_file_exits_2(tmp_path: Path) -> None:
    assert run(["tune", "--gpu", "T4", "--from-nvidia-smi", str(tmp_path / "none.csv")])[0] == 2


def test_validate_device_plugin_config_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "l20.yaml"
    good.write_text(
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n"
    )
    code, text = run(["validate", "device-plugin-config", str(good)])
    assert (code, text) == (0, f"{good}: valid\n")
    code, text = run(["validate", "device-plugin-config", str(good), str(bad), "--plugin-version", "0.17.1"])
    assert code == 1
    assert f"{bad}: invalid: " in text and "replicas must be >= 2" in text
    assert run(["validate", "device-plugin-config", str(tmp_path / "missing.yaml")])[0] == 2


def test_validate_mig_config_against_a_gpu(project_dir: Path) -> None:
    fixtures = project_dir / "tests" / "fixtures" / "mig_parted"
    h20 = str(fixtures / "h20-mixed.yaml")
    wrong_names = str(fixtures / "h20-with-h100-94gb-names.yaml")
    assert run(["validate", "mig-config", h20, "--gpu", "H20"]) == (0, f"{h20}: valid\n")
    assert run(["validate", "mig-config", wrong_names])[0] == 0  # well-formed without a GPU to fit
    code, text = run(["validate", "mig-config", wrong_names, "--gpu", "H20"])
    assert code == 1
    assert "3g.48gb" in text
