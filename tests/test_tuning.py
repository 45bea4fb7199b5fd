"""The tuning rule against the seed's numbers and its edge cases."""

from pathlib import Path

import pytest

from gpushare import catalog
from gpushare.cli.main import main
from gpushare.errors import GpushareError
from gpushare.tuning import largest_process_mib, max_replicas, total_memory_mib, tune

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia_smi"


def test_seed_l20_gets_8_replicas_at_80_percent() -> None:
    result = tune(catalog.gpu("L20"), 4621)
    assert result.replicas == 8
    assert result.shared
    assert round(result.utilization * 100, 1) == 80.2
    assert int(result.headroom_mib_per_slot) == 1137


def test_seed_t4_gets_3_replicas_and_the_arithmetic_headroom() -> None:
    result = tune(catalog.gpu("T4"), 4401)
    assert result.replicas == 3
    assert round(result.utilization * 100, 1) == 86.0
    # The seed's table says ~759 MiB; 15360 / 3 - 4401 is 719.
    assert result.headroom_mib_per_slot == 15360 / 3 - 4401


def test_below_two_replicas_sharing_is_off() -> None:
    result = tune(catalog.gpu("T4"), 9000)
    assert result.replicas == 1
    assert not result.shared
    assert result.slots == 1


def test_ceiling_changes_the_result_exactly_at_the_boundary() -> None:
    # 0.9 x 15360 = 13824 = 4 x 3456: exactly 4 replicas at 3456 MiB, 3 at one MiB more.
    assert max_replicas(15360, 3456, 0.9) == 4
    assert max_replicas(15360, 3457, 0.9) == 3
    # 0.5 x 46068 = 23034 = 3 x 7678: exactly 3.
    assert max_replicas(46068, 7678, 0.5) == 3
    assert max_replicas(46068, 7679, 0.5) == 2
    assert max_replicas(10000, 1000, 1.0) == 10
    assert max_replicas(10000, 1001, 1.0) == 9
    # 0.7 x 1290 = 903 = 3 x 301 exactly, but in binary floating point 0.7 x 1290 / 301 is
    # 2.9999999999999996: exact arithmetic must not round it down to 2.
    assert max_replicas(1290, 301, 0.7) == 3


@pytest.mark.parametrize("ceiling", [0, -0.1, 1.01])
def test_ceiling_outside_0_1_is_rejected(ceiling: float) -> None:
    with pytest.raises(GpushareError, match="ceiling"):
        tune(catalog.gpu("L20"), 4621, ceiling)


@pytest.mark.parametrize("measured", [0, -5, 1, 255])
def test_measured_must_be_plausible(measured: int) -> None:
    # Below 256 MiB, less than a CUDA context alone takes: a misreading, not a process.
    with pytest.raises(
        GpushareError, match=f"^measured memory: {measured} MiB is below 256 MiB, less than a CUDA"
    ):
        tune(catalog.gpu("L20"), measured)


def test_the_floor_itself_is_a_measurement_and_replicas_stop_at_110() -> None:
    # floor(0.9 x 46068 / 256) = floor(161.96) = 161 replicas by memory; the kubelet's 110 pods per node
    # is the ceiling.
    assert tune(catalog.gpu("L20"), 256).replicas == 110
    # floor(0.9 x 46068 / 376) = floor(110.27) = 110; floor(0.9 x 46068 / 378) = floor(109.69) = 109.
    assert tune(catalog.gpu("L20"), 376).replicas == 110
    assert tune(catalog.gpu("L20"), 378).replicas == 109


def test_measured_above_gpu_memory_is_rejected() -> None:
    with pytest.raises(GpushareError, match="does not fit L20"):
        tune(catalog.gpu("L20"), 46069)


def test_mig_profile_uses_the_instance_memory() -> None:
    h20 = catalog.gpu("H20")
    result = tune(h20, 4621, mig_profile="1g.12gb")
    assert result.memory_mib == 11264  # GH200 96GB's -lgip for 1g.12gb (H20 has no capture)
    assert result.replicas == 2  # floor(0.9 x 11264 / 4621) = floor(2.19); the whole GPU would give 19
    with pytest.raises(GpushareError, match="does not fit H20 MIG 1g.12gb"):
        tune(h20, 11265, mig_profile="1g.12gb")


def test_mig_profile_on_a_non_mig_gpu_is_rejected() -> None:
    with pytest.raises(GpushareError, match="does not support MIG"):
        tune(catalog.gpu("T4"), 1000, mig_profile="1g.5gb")


def test_largest_process_wins_in_compute_apps_csv() -> None:
    assert largest_process_mib((FIXTURES / "compute_apps_l20.csv").read_text()) == 4621


def test_compute_apps_csv_without_header_and_units() -> None:
    assert largest_process_mib("1, a, 300\n2, b, 1200\n") == 1200


def test_compute_apps_csv_with_no_process_is_an_error() -> None:
    with pytest.raises(GpushareError, match="no compute processes"):
        largest_process_mib("pid, process_name, used_memory [MiB]\n")


def test_total_memory_from_nvidia_smi_q() -> None:
    assert total_memory_mib((FIXTURES / "q_l20.txt").read_text()) == 46068


def test_json_keys() -> None:
    data = tune(catalog.gpu("L20"), 4621).as_json()
    assert {
        "gpu",
        "memoryMiB",
        "measuredMiB",
        "ceiling",
        "replicas",
        "shared",
        "utilization",
        "headroomMiBPerSlot",
    } <= set(data)
    assert data["replicas"] == 8
    # 46068 / 8 - 4621 = 5758.5 - 4621 = 1137.5 MiB a slot, kept to one decimal (not rounded to 1138).
    assert data["headroomMiBPerSlot"] == 1137.5


@pytest.mark.parametrize(
    ("csv_text", "row"),
    [
        # The header names used_memory as the third column (index 2); a row of two cells has none.
        (
            "pid, process_name, used_memory [MiB]\n21873, python3, 4621 MiB\n21904, python3\n",
            "21904, python3",
        ),
        # used_memory second (index 1) and a row of one cell: the bound is exactly the row's length.
        ("pid, used_memory [MiB]\n21873\n", "21873"),
    ],
)
def test_a_row_one_cell_short_is_one_error_through_tune(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], csv_text: str, row: str
) -> None:
    """`tune --from-nvidia-smi` on a CSV whose row lacks the used_memory cell (a truncated paste)."""
    path = tmp_path / "apps.csv"
    path.write_text(csv_text)
    with pytest.raises(GpushareError) as caught:
        largest_process_mib(csv_text)
    assert caught.value.message == f"a row without a used_memory column in nvidia-smi output: {row!r}"
    code = main(["tune", "--gpu", "L20", "--from-nvidia-smi", str(path)])
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "a row without a used_memory column" in err


def test_the_used_memory_column_is_found_by_name_anywhere_in_the_header() -> None:
    # used_memory first: 4621 is column 0 of each row, the largest of 4621 and 1203.
    text = "used_memory [MiB], pid\n4621 MiB, 21873\n1203 MiB, 21904\n"
    assert largest_process_mib(text) == 4621
    # nounits: bare numbers; without a header the last cell is the value.
    assert largest_process_mib("21873, python3, 4621\n21904, python3, 1203\n") == 4621


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        # `--format=csv,nounits` gives bare numbers. Up to 15 digits is a number (then judged: 15 nines of
        # MiB do not fit a 46068 MiB L20); a 16th digit is no reading at all, named as such.
        ("999999999999999", "measured 999999999999999 MiB does not fit L20 (46068 MiB)"),
        ("9999999999999999", "{csv}: unreadable used_memory value '9999999999999999' in nvidia-smi output"),
    ],
)
def test_tune_reads_a_bare_used_memory_cell_of_at_most_15_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cell: str, message: str
) -> None:
    from gpushare.cli.main import main

    csv = tmp_path / "compute_apps.csv"
    csv.write_text(f"pid, process_name, used_memory [MiB]\n3121, python, {cell}\n")
    assert main(["tune", "--gpu", "L20", "--from-nvidia-smi", str(csv)]) == 1
    assert capsys.readouterr().err == message.format(csv=csv) + "\n"
