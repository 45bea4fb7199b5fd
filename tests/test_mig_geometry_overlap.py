"""`fit_layout`'s placement search refuses a placement that overlaps used memory slices only in part.

On every GPU in the catalog the placements are aligned blocks (halves, quarters, eighths of the memory
slices; NVIDIA's `nvidia-smi mig -lgipp` tables) and larger profiles are placed first, so a later
placement either lies inside an earlier one or misses it: no catalog layout meets a partial overlap.
The search is not written for aligned blocks only, though, and a GPU whose placements straddle (as a
future catalog entry's might) must not get two instances on one slice. This GPU is made up for that:
4 memory and 4 compute slices; profile `2g.a` at slices 1-2 only, profile `2g.b` at 0-1 or 2-3.
"""

from __future__ import annotations

import pytest

from gpushare.catalog import GpuModel, MigProfile
from gpushare.mig.geometry import MigLayoutError, Placement, fit_layout


def _profile(name: str, profile_id: int, starts: tuple[int, ...]) -> MigProfile:
    return MigProfile(
        name=name,
        id=profile_id,
        compute_slices=2,
        memory_slices=2,
        max_instances=2,
        placement_starts=starts,
        placement_size=2,
        memory_mib=10000,
    )


STRADDLING = GpuModel(
    "X4",
    "made-up 4-slice GPU",
    "none",
    "0.0",
    40000,
    "made up: placements that straddle",
    (_profile("2g.a", 1, (1,)), _profile("2g.b", 2, (0, 2))),
    4,
    4,
)


def test_a_placement_half_over_a_used_slice_is_not_free() -> None:
    # 2g.a takes slices 1-2; 2g.b at 0 would share slice 1 with it, at 2 slice 2: neither is free,
    # though the budgets (2 + 2 = 4 compute and memory slices) allow both.
    with pytest.raises(MigLayoutError, match=r"^X4: placements overlap: no free memory slices for 2g\.b "):
        fit_layout(STRADDLING, {"2g.a": 1, "2g.b": 1})


def test_each_straddling_profile_alone_and_2g_b_twice_fit() -> None:
    assert fit_layout(STRADDLING, {"2g.a": 1}).placements == (Placement("2g.a", 1, 2),)
    assert fit_layout(STRADDLING, {"2g.b": 2}).placements == (
        Placement("2g.b", 0, 2),
        Placement("2g.b", 2, 2),
    )
