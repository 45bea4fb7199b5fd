"""`largest_process_mib` and the header nvidia-smi really prints.

`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv` accepts `used_memory` as the
query name but heads the column `used_gpu_memory [MiB]` (public terminal captures of drivers 535-610
all show `pid, process_name, used_gpu_memory [MiB]`). The column is found by either name, wherever it
stands; a header that names neither is refused in one line rather than read from its last column (which
would take a pid, or a process name, for MiB). The seed's L20 process used 4621 MiB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare.cli.main import main
from gpushare.errors import GpushareError
from gpushare.tuning import largest_process_mib


@pytest.mark.parametrize(
    ("text", "largest"),
    [
        # As nvidia-smi prints it for --query-compute-apps=pid,process_name,used_memory: 4621 > 1203.
        (
            "pid, process_name, used_gpu_memory [MiB]\n21873, python3, 4621 MiB\n21904, python3, 1203 MiB\n",
            4621,
        ),
        # The memory column first (--query-compute-apps=used_memory,pid): 4621 of column 0, not pid 21904.
        ("used_gpu_memory [MiB], pid\n4621 MiB, 21873\n1203 MiB, 21904\n", 4621),
        # With the GPU's UUID in front and nounits: 4401 (the seed's T4 process) > 812.
        ("gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-1, 7, a, 4401\nGPU-1, 8, b, 812\n", 4401),
    ],
)
def test_the_memory_column_is_found_by_the_name_nvidia_smi_prints(text: str, largest: int) -> None:
    assert largest_process_mib(text) == largest


@pytest.mark.parametrize(
    "header",
    [
        "pid, process_name",  # no memory column at all: the last column is a process name
        "used_memory_total [MiB], pid",  # a prefix of the name is no name: the last column is a pid
        "pid, memory.used [MiB]",  # --query-gpu's column, not a process's
    ],
)
def test_a_header_without_a_used_memory_column_is_refused(header: str) -> None:
    with pytest.raises(GpushareError) as caught:
        largest_process_mib(f"{header}\n21873, 4621 MiB\n")
    assert caught.value.message == (
        f"no used_memory column in the nvidia-smi header {header!r}: "
        "run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
    )


def test_tune_names_the_file_and_exits_1_on_a_header_without_used_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "apps.csv"
    path.write_text("pid, process_name\n21873, python3\n")
    assert main(["tune", "--gpu", "L20", "--from-nvidia-smi", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"{path}: no used_memory column in the nvidia-smi header 'pid, process_name': "
        "run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv\n"
    )
