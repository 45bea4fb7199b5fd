"""`largest_process_mib` (the reader behind `tune --from-nvidia-smi`): rows that hold nothing are not rows.

`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv` output pasted from a terminal
or a log often ends in a line of spaces, or keeps the separators of a blank line (`, ,`); neither is a
process. The seed's L20 process used 4621 MiB.
"""

from __future__ import annotations

import pytest

from gpushare.tuning import largest_process_mib

HEADER = "pid, process_name, used_gpu_memory [MiB]\n"


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("   \n", id="spaces"),
        pytest.param(" , , \n", id="blank-cells"),
        pytest.param("\t\n\n", id="tab-and-empty-line"),
    ],
)
def test_a_line_of_blank_cells_is_skipped(tail: str) -> None:
    assert largest_process_mib(HEADER + "3121, python, 4621 MiB\n" + tail) == 4621
    # Without the header, too (`--format=csv,noheader`).
    assert largest_process_mib("3121, python, 4621 MiB\n" + tail) == 4621
