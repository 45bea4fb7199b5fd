"""`advise`'s count of MIG layouts left out because an instance is too small for the process
(`AdviceReport.idle_layouts`, printed on the table's first line), worked out by hand on the A30.

The A30 (catalog: NVIDIA's A30 MIG table) has 4 compute and 4 memory slices and five profiles, each
taking as many memory slices as compute slices: 1g.6gb (max 4), 1g.6gb+me (max 1), 2g.12gb (max 2, at
slice 0 or 2), 2g.12gb+me (max 1) and 4g.24gb (max 1); at most one `+me` instance per GPU. Writing a, b,
c, d, e for the counts of those five, a layout is a + b + 2c + 2d + 4e <= 4 slices with b + d <= 1:
- e = 1: {4g} alone                                                        1
- c + d = 2: {2g x2}, {2g, 2g+me}                                          2
- c = 1, d = 0, two slices left: (a, b) in (0,0) (1,0) (2,0) (0,1) (1,1)   5
- c = 0, d = 1, two slices left, b = 0: a in 0, 1, 2                       3
- c = d = e = 0: b = 0, a in 1..4 (4); b = 1, a in 0..3 (4)                8
19 layouts; the placements are aligned halves and quarters, so every one of them fits.

A process of 8000 MiB does not fit a 1g instance (6 GB = 6e9 / 2^20 = 5722 MiB) but fits 2g (11444
MiB) and 4g (22888 MiB): every layout with a 1g instance (a + b > 0) is left out, 4 + 2 + 8 = 14 of
them, and 19 - 14 = 5 remain: {4g}, {2g x2}, {2g, 2g+me}, {2g}, {2g+me}. The whole GPU adds time-slicing
(floor(0.9 x 24576 / 8000) = floor(2.76) = 2 slots) and exclusive: 7 options.
"""

from __future__ import annotations

import io

from gpushare import catalog
from gpushare.advise.layout_options import advise
from gpushare.cli.main import main


def test_the_a30_leaves_out_the_14_layouts_with_a_1g_instance_for_8000_mib() -> None:
    report = advise(catalog.gpu("A30"), 8000)
    assert report.idle_layouts == 14
    assert sorted(tuple(sorted(o.mig_layout.items())) for o in report.options if o.mig_layout) == [
        (("2g.12gb", 1),),
        (("2g.12gb", 1), ("2g.12gb+me", 1)),
        (("2g.12gb", 2),),
        (("2g.12gb+me", 1),),
        (("4g.24gb", 1),),
    ]


def test_the_advise_table_says_how_many_layouts_it_left_out() -> None:
    out = io.StringIO()
    assert main(["advise", "--gpu", "A30", "--measured-mib", "8000"], out) == 0
    assert out.getvalue().splitlines()[0] == (
        "A30 (24576 MiB), largest process 8000 MiB, ceiling 0.9: 7 options, 5 MIG layouts "
        "(14 more leave an instance too small for the process)"
    )


def test_nothing_is_left_out_when_the_process_fits_the_smallest_instance() -> None:
    # 5000 MiB fits 1g.6gb (5722 MiB): all 19 layouts are options, none idle.
    report = advise(catalog.gpu("A30"), 5000)
    assert (report.idle_layouts, sum(o.mode == "mig" for o in report.options)) == (0, 19)
