"""MIG layout feasibility and the nvidia-smi command (reference section C)."""

from __future__ import annotations

import itertools

import pytest

from gpushare.catalog import GPUS, GpuModel, MigProfile, gpu
from gpushare.errors import GpushareError
from gpushare.mig.geometry import (
    MigLayout,
    MigLayoutError,
    Placement,
    creation_order,
    creation_orders,
    fit_layout,
)

H20 = gpu("H20")
A30 = gpu("A30")
A100_40 = gpu("A100-40GB")

H20_PROFILES = "1g.12gb, 1g.12gb+me, 1g.24gb, 2g.24gb, 3g.48gb, 4g.48gb, 7g.96gb"


def starts(layout: MigLayout) -> list[tuple[str, int]]:
    return [(p.profile, p.start) for p in layout.placements]


# --- catalog facts the geometry relies on ----------------------------------------------------------------


@pytest.mark.parametrize("model", [m for m in GPUS.values() if m.mig_capable], ids=lambda m: m.key)
def test_catalog_profile_names_start_with_their_compute_slices(model: GpuModel) -> None:
    for profile in model.mig_profiles:
        assert profile.name.startswith(f"{profile.compute_slices}g."), profile.name
        assert max(profile.placement_starts) + profile.placement_size <= model.memory_slices


@pytest.mark.parametrize("model", [m for m in GPUS.values() if m.mig_capable], ids=lambda m: m.key)
def test_every_profile_fits_alone_at_its_max_count(model: GpuModel) -> None:
    for profile in model.mig_profiles:
        layout = fit_layout(model, {profile.name: profile.max_instances})
        assert layout.instances == profile.max_instances


# --- H20 (the seed's GPU) ------------------------------------------------------------------------------


def test_h20_seven_1g_12gb_fit_and_give_the_seed_command() -> None:
    layout = fit_layout(H20, {"1g.12gb": 7})

    assert layout.gpu == "H20"
    assert starts(layout) == [("1g.12gb", s) for s in range(7)]
    assert layout.counts() == {"1g.12gb": 7}
    assert (layout.instances, layout.used_compute_slices, layout.used_memory_slices) == (7, 7, 7)
    assert creation_order(H20, {"1g.12gb": 7}) == ["1g.12gb"] * 7


def test_h20_balanced_layout_needs_backtracking_and_uses_every_slice() -> None:
    # Greedy (3g@0, 2g@4, 1g@6) strands the last 1g.12gb: 1g starts stop at 6.
    layout = fit_layout(H20, {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1})

    assert starts(layout) == [("2g.24gb", 0), ("1g.12gb", 2), ("1g.12gb", 3), ("3g.48gb", 4)]
    assert layout.counts() == {"3g.48gb": 1, "2g.24gb": 1, "1g.12gb": 2}
    assert (layout.used_compute_slices, layout.used_memory_slices) == (7, 8)


def test_h20_one_1g_24gb_and_six_1g_12gb_put_the_big_one_last() -> None:
    layout = fit_layout(H20, {"1g.24gb": 1, "1g.12gb": 6})

    assert ("1g.24gb", 6) in starts(layout)
    assert layout.used_memory_slices == 8


def test_4g_and_3g_fit_on_a_7_slice_gpu_using_all_8_memory_slices() -> None:
    layout = fit_layout(H20, {"4g.48gb": 1, "3g.48gb": 1})

    assert starts(layout) == [("4g.48gb", 0), ("3g.48gb", 4)]
    assert (layout.used_compute_slices, layout.used_memory_slices) == (7, 8)


def test_two_4g_do_not_fit() -> None:
    with pytest.raises(MigLayoutError, match=r"^4g\.48gb x2: at most 1 per GPU$"):
        fit_layout(H20, {"4g.48gb": 2})


def test_three_3g_exceed_the_profile_limit() -> None:
    with pytest.raises(MigLayoutError, match=r"^3g\.48gb x3: at most 2 per GPU$"):
        fit_layout(H20, {"3g.48gb": 3})


def test_compute_slices_run_out() -> None:
    with pytest.raises(MigLayoutError, match=r"^2g\.24gb x2: needs 4 compute slices, only 3 of 7 left$"):
        fit_layout(H20, {"4g.48gb": 1, "2g.24gb": 2})
    with pytest.raises(MigLayoutError, match=r"^1g\.12gb: needs 1 compute slice, only 0 of 7 left$"):
        fit_layout(H20, {"7g.96gb": 1, "1g.12gb": 1})


def test_four_1g_24gb_plus_one_1g_12gb_run_out_of_memory_slices() -> None:
    # 5 compute slices is fine; 4x2 + 1 = 9 memory slices is not.
    with pytest.raises(MigLayoutError, match=r"^1g\.12gb: needs 1 memory slice, only 0 of 8 left$"):
        fit_layout(H20, {"1g.24gb": 4, "1g.12gb": 1})


def test_two_media_extension_instances_fail() -> None:
    with pytest.raises(MigLayoutError, match=r"^1g\.12gb\+me x2: at most 1 per GPU$"):
        fit_layout(H20, {"1g.12gb+me": 2})
    with pytest.raises(
        MigLayoutError, match=r"A30: at most one \+me profile per GPU .*2g\.12gb\+me, 1g\.6gb\+me"
    ):
        fit_layout(A30, {"1g.6gb+me": 1, "2g.12gb+me": 1})


def test_one_media_extension_instance_mixes_with_plain_ones() -> None:
    layout = fit_layout(H20, {"1g.12gb+me": 1, "1g.12gb": 6})
    assert layout.counts() == {"1g.12gb": 6, "1g.12gb+me": 1}


@pytest.mark.parametrize(
    ("wrong", "suggested"),
    [("3g.47gb", "3g.48gb"), ("4g.47gb", "4g.48gb"), ("7g.94gb", "7g.96gb")],
)
def test_h100_94gb_names_on_h20_are_rejected_with_the_real_names(wrong: str, suggested: str) -> None:
    with pytest.raises(MigLayoutError) as caught:
        fit_layout(H20, {wrong: 1})

    message = str(caught.value)
    assert message.startswith(f"unknown profile {wrong} for H20 (known: {H20_PROFILES})")
    assert f"did you mean {suggested}?" in message
    assert f"{wrong} is a profile of H100-94GB" in message


def test_unknown_profile_without_a_close_match_still_lists_the_known_names() -> None:
    with pytest.raises(MigLayoutError, match=r"^unknown profile 5g\.60gb for H20 \(known: 1g\.12gb, .*\)$"):
        fit_layout(H20, {"5g.60gb": 1})


def test_t4_does_not_support_mig() -> None:
    with pytest.raises(MigLayoutError, match=r"^T4 does not support MIG$"):
        fit_layout(gpu("T4"), {"1g.5gb": 1})
    with pytest.raises(MigLayoutError, match=r"^T4 does not support MIG$"):
        creation_order(gpu("T4"), {"1g.5gb": 1})


def test_empty_layout_is_an_error() -> None:
    with pytest.raises(MigLayoutError, match="empty MIG layout"):
        fit_layout(H20, {})


@pytest.mark.parametrize("count", [0, -1, True, 1.5, "2", None])
def test_counts_must_be_positive_integers(count: object) -> None:
    with pytest.raises(MigLayoutError, match=r"^1g\.12gb: count must be a positive integer, got "):
        fit_layout(H20, {"1g.12gb": count})  # type: ignore[dict-item]


def test_layout_errors_are_gpushare_errors() -> None:
    assert issubclass(MigLayoutError, GpushareError)


# --- other GPUs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts",
    [
        {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1},
        {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2},
        {"3g.20gb": 1, "2g.10gb": 2},
        {"3g.20gb": 2},
        {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1},
        {"2g.10gb": 3, "1g.5gb": 1},
        {"1g.10gb": 2, "1g.5gb": 3},
    ],
)
def test_a100_40gb_mixes_fit(counts: dict[str, int]) -> None:
    layout = fit_layout(A100_40, counts)

    assert layout.counts() == counts
    assert layout.used_compute_slices <= 7
    assert layout.used_memory_slices <= 8
    spans = sorted((p.start, p.end) for p in layout.placements)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_a100_40gb_mixed_command_creates_3g_first_then_larger_before_smaller() -> None:
    counts = {"1g.5gb": 1, "2g.10gb": 1, "3g.20gb": 1}
    # Names, not IDs (`-cgi` takes both; H20's IDs are inferred). The ID order was 9,14,19 / 9,5 / 5,14,19 /
    # 14,14,14,19 / 15,19,19 (ID 9 = 3g, 5 = 4g, 14 = 2g, 15 = 1g.24gb, 19 = the smallest 1g).
    assert creation_order(A100_40, counts) == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert creation_order(H20, {"4g.48gb": 1, "3g.48gb": 1}) == ["3g.48gb", "4g.48gb"]
    assert creation_order(H20, {"1g.12gb": 1, "2g.24gb": 1, "4g.48gb": 1}) == [
        "4g.48gb",
        "2g.24gb",
        "1g.12gb",
    ]
    assert creation_order(H20, {"1g.12gb": 1, "2g.24gb": 3}) == ["2g.24gb", "2g.24gb", "2g.24gb", "1g.12gb"]
    assert creation_order(H20, {"1g.12gb": 2, "1g.24gb": 1}) == ["1g.24gb", "1g.12gb", "1g.12gb"]


def test_creation_orders_add_the_layouts_own_placements_from_slice_0_up() -> None:
    # H20 1g.12gb starts at slices 0-6, 1g.24gb (2 slices) at 0, 2, 4, 6: six 1g.12gb leave only 6-7 for
    # the 1g.24gb, so a driver that takes the lowest free slice needs the six created first.
    assert creation_orders(H20, {"1g.12gb": 6, "1g.24gb": 1}) == [
        ["1g.24gb"] + ["1g.12gb"] * 6,
        ["1g.12gb"] * 6 + ["1g.24gb"],
    ]
    # A100-40GB: 4g.20gb only at slice 0, 3g.20gb at 0 or 4: the guide's 3g-first order, then 4g at 0.
    assert creation_orders(A100_40, {"3g.20gb": 1, "4g.20gb": 1}) == [
        ["3g.20gb", "4g.20gb"],
        ["4g.20gb", "3g.20gb"],
    ]
    # One profile: one order, never the same order twice.
    assert creation_orders(H20, {"1g.12gb": 7}) == [["1g.12gb"] * 7]


def test_a30_4g_24gb_alone_fits_and_nothing_fits_next_to_it() -> None:
    layout = fit_layout(A30, {"4g.24gb": 1})

    assert starts(layout) == [("4g.24gb", 0)]
    assert (layout.used_compute_slices, layout.used_memory_slices) == (4, 4)
    assert creation_order(A30, {"4g.24gb": 1}) == ["4g.24gb"]
    with pytest.raises(MigLayoutError, match=r"^1g\.6gb: needs 1 compute slice, only 0 of 4 left$"):
        fit_layout(A30, {"4g.24gb": 1, "1g.6gb": 1})


def test_a30_2g_and_two_1g_fit() -> None:
    layout = fit_layout(A30, {"2g.12gb": 1, "1g.6gb": 2})
    assert starts(layout) == [("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3)]


# --- the placement search itself -------------------------------------------------------------------------


def _toy_gpu() -> GpuModel:
    """4 slices; 2g only in the middle and 1g never on the last slice, like 1g on 7-slice GPUs."""

    def profile(name: str, slices: int, max_instances: int, placement_starts: tuple[int, ...]) -> MigProfile:
        return MigProfile(name, 99, slices, slices, max_instances, placement_starts, slices, 1024)

    return GpuModel(
        "TOY",
        "toy",
        "test",
        "0.0",
        4096,
        "test",
        (profile("2g.2gb", 2, 1, (1,)), profile("1g.1gb", 1, 3, (0, 1, 2))),
        4,
        4,
    )


def test_overlapping_placements_are_reported_with_the_profile_that_has_no_room() -> None:
    toy = _toy_gpu()
    assert starts(fit_layout(toy, {"2g.2gb": 1, "1g.1gb": 1})) == [("1g.1gb", 0), ("2g.2gb", 1)]

    with pytest.raises(MigLayoutError) as caught:
        fit_layout(toy, {"2g.2gb": 1, "1g.1gb": 2})

    message = str(caught.value)
    assert message.startswith("TOY: placements overlap: no free memory slices for 1g.1gb")
    assert "after placing 2g.2gb@1, 1g.1gb@0" in message


def test_fit_layout_is_deterministic_and_independent_of_input_order() -> None:
    first = fit_layout(H20, {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1})
    second = fit_layout(H20, {"3g.48gb": 1, "2g.24gb": 1, "1g.12gb": 2})
    assert first == second


def test_creation_order_validates_first() -> None:
    with pytest.raises(MigLayoutError, match=r"unknown profile 3g\.47gb"):
        creation_order(H20, {"3g.47gb": 2})


def test_layout_helpers_from_hand_built_placements() -> None:
    layout = MigLayout(
        "H20", (Placement("3g.48gb", 0, 4), Placement("1g.24gb", 4, 2), Placement("1g.12gb", 6, 1))
    )
    assert layout.counts() == {"3g.48gb": 1, "1g.24gb": 1, "1g.12gb": 1}
    assert (layout.instances, layout.used_compute_slices, layout.used_memory_slices) == (3, 5, 7)
    assert str(layout.placements[1]) == "1g.24gb@4"
    assert layout.placements[1].end == 6
