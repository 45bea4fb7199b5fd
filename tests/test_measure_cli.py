"""gpushare.cli.measure's own formatting: the peaks table and the `source:` line `--write` records.
tests/test_measure.py runs `measure` against the fake API server; these pin the text without one.

The table: each column as wide as its widest cell (header included), two spaces between columns, the
last column (`how`) not padded; a dash where there is no number; a refused pool's reason after
`REFUSED: `. A peak of 5938.2 MiB is recorded rounded up, 5939 (a measurement below the peak would
over-share the GPU).
"""

from __future__ import annotations

import pytest

from gpushare.cli.measure import _source_text, _table
from gpushare.verify.memory_peaks import Candidate, PoolPeak

HOW = "one pod per GPU on node 10.0.1.11"
L20 = PoolPeak("l20", "L20", 4621, "8", Candidate("10.0.1.11", 5938.2, HOW), "6", HOW, True)
T4 = PoolPeak("t4", "T4", None, "3", None, None, "no node carries gpushare.io/pool=t4", False)


def test_the_table_pads_each_column_to_its_widest_cell() -> None:
    # widths: pool 4, gpu 3, measured MiB 12, peak MiB 8, replicas now 12, with peak 9
    assert _table([L20, T4]).splitlines() == [
        "pool  gpu  measured MiB  peak MiB  replicas now  with peak  how",
        "----  ---  ------------  --------  ------------  ---------  ---",
        "l20   L20  4621          5939      8             6          one pod per GPU on node 10.0.1.11",
        "t4    T4   -             -         3             -          REFUSED: no node carries gpushare.io/pool=t4",
    ]


def test_a_cell_wider_than_its_header_widens_the_column() -> None:
    wide = PoolPeak("l20-inference-east", "L20", 4621, "8", None, None, "why", False)
    assert _table([wide]).splitlines()[:3] == [
        "pool                gpu  measured MiB  peak MiB  replicas now  with peak  how",
        "------------------  ---  ------------  --------  ------------  ---------  ---",
        "l20-inference-east  L20  4621          -         8             -          REFUSED: why",
    ]


def test_the_source_line_says_how_the_peak_was_read() -> None:
    via = "Prometheus at http://10.0.0.1:9090"
    assert _source_text(L20, "dcgm-exporter", via, "max over 7d, 2016 samples") == (
        f"gpushare measure, peak 5939 MiB ({HOW}), dcgm-exporter via {via}, max over 7d, 2016 samples"
    )
    assert _source_text(L20, "nvidia_gpu_exporter", "the pod proxy", "max of 5 scrapes 60 s apart") == (
        f"gpushare measure, peak 5939 MiB ({HOW}), nvidia_gpu_exporter via the pod proxy, max of 5 scrapes 60 s apart"
    )


@pytest.mark.parametrize(
    ("pod", "shown"),
    [
        # A pod name with a colon-space and a comment mark would end the plain scalar early.
        ("nlp/a: b #c", "nlp/a? b ?c"),
        # Terminal escapes and line breaks from an exporter's label become `?`.
        ("nlp/\x1b[31mred\nX", "nlp/?[31mred?X"),
        ("nlp/\u202ebidi", "nlp/?bidi"),
    ],
)
def test_the_source_line_is_one_plain_line_of_printable_ascii(pod: str, shown: str) -> None:
    how = f"pod {pod}'s own series on node n1"
    peak = PoolPeak("l20", "L20", 4621, "8", Candidate("n1", 5000, how), "8", how, True)
    assert _source_text(peak, "dcgm-exporter", "the pod proxy", "max of 5 scrapes 60 s apart") == (
        f"gpushare measure, peak 5000 MiB (pod {shown}'s own series on node n1), dcgm-exporter via the pod "
        "proxy, max of 5 scrapes 60 s apart"
    )


@pytest.mark.parametrize("length", [241, 200_000])
def test_the_source_line_is_bounded(length: int) -> None:
    how = "pod nlp/" + "x" * length
    peak = PoolPeak("l20", "L20", 4621, "8", Candidate("n1", 5000, how), "8", how, True)
    text = _source_text(peak, "dcgm-exporter", "the pod proxy", "one instant reading")
    # MAX_SOURCE_CHARS = 240: 237 characters of the text and "...".
    assert (len(text), text[:46], text[-3:]) == (240, "gpushare measure, peak 5000 MiB (pod nlp/xxxxx", "...")
