"""Layout options (`python -m gpushare advise`): slots per layout, the Pareto front, the recommendations.

Expected numbers are written down by hand from the catalog's memory (docs/catalog.md) and the tuning
rule floor(0.9 x memory / measured); the enumeration is cross-checked against an independent brute force
over memory-slice placements and against `validate mig-config --gpu`.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare import catalog
from gpushare.advise.layout_options import LayoutOption, advise, better_layout, layout_option, mig_layouts
from gpushare.catalog import GpuModel
from gpushare.cli.main import main
from gpushare.errors import GpushareError
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import Mig

H20 = catalog.gpu("H20")
SEED_MIB = 4621  # the seed's NLP process (nvidia-smi on the L20)


def mig(report_layout: dict[str, int], measured: int = SEED_MIB) -> LayoutOption:
    option = layout_option(advise(H20, measured), report_layout)
    assert option is not None, report_layout
    return option


def test_the_catalog_memory_the_h20_numbers_rest_on() -> None:
    # docs/catalog.md: H20 is inferred; 1g.12gb takes GH200 96GB's 11264, the 24gb profiles H100 NVL's 22138,
    # 3g.48gb the decimal-GB rule 48e9 / 2^20 = 45776.
    memory = {p.name: p.memory_mib for p in H20.mig_profiles}
    assert (H20.memory_mib, memory["1g.12gb"], memory["1g.24gb"], memory["3g.48gb"]) == (
        97871,
        11264,
        22138,
        45776,
    )


def test_h20_at_the_seed_measurement() -> None:
    report = advise(H20, SEED_MIB)
    whole = next(o for o in report.options if o.mode == "time-slicing")
    # floor(0.9 x 97871 / 4621) = floor(88083.9 / 4621) = floor(19.06) = 19
    assert (whole.slots, whole.isolation_domains) == (19, 1)
    # 1g.12gb: floor(0.9 x 11264 / 4621) = floor(10137.6 / 4621) = floor(2.19) = 2 per instance; 7 x 2 = 14
    assert (mig({"1g.12gb": 7}).slots, mig({"1g.12gb": 7}).isolation_domains) == (14, 7)
    # 1g.24gb: floor(0.9 x 22138 / 4621) = floor(19924.2 / 4621) = floor(4.31) = 4; 4 x 4 = 16
    assert (mig({"1g.24gb": 4}).slots, mig({"1g.24gb": 4}).isolation_domains) == (16, 4)
    # 3g.48gb: floor(0.9 x 45776 / 4621) = floor(41198.4 / 4621) = floor(8.92) = 8; 2 x 8 = 16
    assert (mig({"3g.48gb": 2}).slots, mig({"3g.48gb": 2}).isolation_domains) == (16, 2)
    # 6 x 2 + 1 x 4 = 16 in 7 instances: 7 compute slices, memory slices 6 x 1 + 1 x 2 = 8
    best7 = report.recommended(7)
    assert best7 is not None
    assert best7.mig_layout == {"1g.12gb": 6, "1g.24gb": 1}
    assert (best7.slots, best7.layout_name()) == (16, "h20-6x1g.12gb-1x1g.24gb")
    # No layout beats 16 at more than one isolation domain, so the front is 19 @ 1 and 16 @ 7.
    assert sorted({(o.slots, o.isolation_domains) for o in report.pareto}) == [(16, 7), (19, 1)]
    assert report.options[0] is whole  # best first
    assert report.recommended(1) is whole


def test_utilization_headroom_and_compute_per_slot() -> None:
    best7 = mig({"1g.12gb": 6, "1g.24gb": 1})
    # 16 x 4621 / 97871 = 73936 / 97871 = 0.7554
    assert round(best7.utilization, 4) == 0.7554
    # smallest headroom: 1g.24gb 22138 / 4 - 4621 = 913.5 (1g.12gb: 11264 / 2 - 4621 = 1011)
    assert best7.headroom_mib_per_slot == 913.5
    # 1g.24gb: 1 compute slice over 4 slots
    assert best7.compute_slices_per_slot == 0.25
    whole = advise(H20, SEED_MIB).options[0]
    assert whole.compute_slices_per_slot == 7 / 19
    assert round(whole.headroom_mib_per_slot, 1) == round(97871 / 19 - 4621, 1)  # 530.1


def test_a_gpu_without_mig_has_whole_gpu_options_only() -> None:
    report = advise(catalog.gpu("L20"), SEED_MIB)
    # floor(0.9 x 46068 / 4621) = floor(41461.2 / 4621) = floor(8.97) = 8: the seed's l20: 8
    assert [(o.mode, o.slots) for o in report.options] == [("time-slicing", 8), ("exclusive", 1)]
    assert report.options[0].compute_slices_per_slot is None
    assert [o.mode for o in report.pareto] == ["time-slicing"]
    t4 = advise(catalog.gpu("T4"), 4401)
    assert t4.options[0].slots == 3  # floor(0.9 x 15360 / 4401) = floor(3.14) = 3: the seed's t4: 3


def test_a_process_too_big_to_share_is_exclusive_and_too_big_to_fit_is_an_error() -> None:
    # 0.9 x 15360 / 8000 = 1.73 < 2: sharing off, the whole GPU is one slot
    t4 = advise(catalog.gpu("T4"), 8000)
    assert [(o.mode, o.slots) for o in t4.options] == [("exclusive", 1)]
    with pytest.raises(GpushareError, match="15361 MiB does not fit T4"):
        advise(catalog.gpu("T4"), 15361)
    with pytest.raises(GpushareError, match="^measured memory: 0 MiB is below 256 MiB"):
        advise(H20, 0)
    with pytest.raises(GpushareError, match="ceiling"):
        advise(H20, SEED_MIB, ceiling=1.5)


def test_layouts_with_an_instance_too_small_for_the_process_are_left_out() -> None:
    # 12000 MiB does not fit 1g.12gb (11264): every layout with a 1g.12gb (or +me) instance is idle somewhere.
    report = advise(H20, 12000)
    assert report.idle_layouts > 0
    assert all("1g.12gb" not in (o.mig_layout or {}) for o in report.options)
    assert all("1g.12gb+me" not in (o.mig_layout or {}) for o in report.options)
    # 1g.24gb: floor(0.9 x 22138 / 12000) = floor(1.66) = 1 -> one slot per instance, not shared
    assert mig({"1g.24gb": 4}, 12000).slots == 4
    # At exactly an instance's memory the process fits once.
    assert mig({"1g.12gb": 7}, 11264).slots == 7


def test_a_tie_prefers_the_layout_without_a_media_extension_instance() -> None:
    with_me = mig({"1g.12gb": 5, "1g.12gb+me": 1, "1g.24gb": 1})
    without = mig({"1g.12gb": 6, "1g.24gb": 1})
    assert (with_me.slots, with_me.isolation_domains) == (without.slots, without.isolation_domains) == (16, 7)
    report = advise(H20, SEED_MIB)
    assert report.recommended(7) == without
    assert with_me.layout_name() == "h20-5x1g.12gb-1x1g.12gb.me-1x1g.24gb"  # no `+` in a label value


def test_better_layout_names_the_best_with_at_least_as_many_instances() -> None:
    report = advise(H20, SEED_MIB)
    better = better_layout(report, {"1g.12gb": 7})
    assert better is not None and better.mig_layout == {"1g.12gb": 6, "1g.24gb": 1}
    assert better_layout(report, {"1g.12gb": 6, "1g.24gb": 1}) is None
    # 2 x 3g.48gb (16 @ 2) cannot be beaten at >= 2 instances: 16 is the most a multi-instance layout yields.
    assert better_layout(report, {"3g.48gb": 2}) is None
    # 1 x 1g.12gb: 2 slots; the best layout with >= 1 instance is 1 x 7g.96gb:
    # floor(0.9 x 91552 / 4621) = floor(82396.8 / 4621) = floor(17.83) = 17 (the whole GPU time-sliced is not MIG)
    one = better_layout(report, {"1g.12gb": 1})
    assert one is not None and (one.mig_layout, one.slots) == ({"7g.96gb": 1}, 17)


def test_every_layout_name_is_a_label_value() -> None:
    label_value = re.compile(r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")
    for gpu in catalog.GPUS.values():
        if not gpu.mig_capable:
            continue
        for option in advise(gpu, 256).options:
            if option.mode == "mig":
                name = option.layout_name()
                assert len(name) <= 63 and label_value.match(name), name


def test_options_are_deterministic_and_json_is_complete() -> None:
    first = advise(H20, SEED_MIB).as_json()
    second = advise(H20, SEED_MIB).as_json()
    assert first == second
    options = first["options"]
    assert isinstance(options, list)
    assert {
        "mode",
        "migLayout",
        "slots",
        "isolationDomains",
        "utilization",
        "headroomMiBPerSlot",
        "pareto",
    } <= set(options[0])
    assert sum(o["pareto"] for o in options) == 3  # 19 @ 1, and the two 16 @ 7 layouts (with and without +me)


# --- the enumeration, cross-checked ------------------------------------------------------------------------

CROSS_CHECKED = ("H20", "A100-40GB", "A100-80GB", "H100-80GB", "A30")


def brute_force_layouts(gpu: GpuModel) -> set[tuple[tuple[str, int], ...]]:
    """Every multiset of instances that some set of non-overlapping placements realises, found by
    trying placements slice by slice (not through `fit_layout`)."""
    placements = [
        (p, start)
        for p in gpu.mig_profiles
        for start in p.placement_starts
        if start + p.placement_size <= gpu.memory_slices
    ]
    found: set[tuple[tuple[str, int], ...]] = set()

    def walk(index: int, used: int, chosen: list[str]) -> None:
        counts = {name: chosen.count(name) for name in set(chosen)}
        profiles = {p.name: p for p in gpu.mig_profiles}
        compute = sum(profiles[n].compute_slices * c for n, c in counts.items())
        media = sum(c for n, c in counts.items() if profiles[n].media_extensions)
        if (
            compute > gpu.compute_slices
            or media > 1
            or any(c > profiles[n].max_instances for n, c in counts.items())
        ):
            return
        if chosen:
            found.add(tuple(sorted(counts.items())))
        for next_index in range(index, len(placements)):
            profile, start = placements[next_index]
            mask = ((1 << profile.placement_size) - 1) << start
            if start + profile.placement_size <= gpu.memory_slices and not used & mask:
                walk(next_index + 1, used | mask, [*chosen, profile.name])

    walk(0, 0, [])
    return found


def within_budgets(gpu: GpuModel) -> Iterator[dict[str, int]]:
    """Every non-empty multiset within the per-profile limits and the compute budget (fitting or not)."""
    ranges = [range(p.max_instances + 1) for p in gpu.mig_profiles]
    for counts in itertools.product(*ranges):
        layout = {p.name: c for p, c in zip(gpu.mig_profiles, counts, strict=True) if c}
        if (
            layout
            and sum(gpu.mig_profile(n).compute_slices * c for n, c in layout.items()) <= gpu.compute_slices
        ):
            yield layout


def validate(gpu: GpuModel, files: list[list[dict[str, int]]], directory: Path) -> list[bool]:
    """What `python -m gpushare validate mig-config FILE... --gpu GPU` says of each file, a file holding one
    mig-parted config per layout (a file is valid when every one of its layouts fits)."""
    paths = []
    for index, layouts in enumerate(files):
        path = directory / f"{gpu.key}-{index}.yaml"
        configs = {
            f"c{n}": [{"devices": "all", "mig-enabled": True, "mig-devices": layout}]
            for n, layout in enumerate(layouts)
        }
        path.write_text(json.dumps({"version": "v1", "mig-configs": configs}))  # JSON is YAML, and quicker
        paths.append(str(path))
    out = io.StringIO()
    main(["validate", "mig-config", *paths, "--gpu", gpu.key], out)
    verdicts = dict(line.split(": ", 1) for line in out.getvalue().splitlines())
    return [verdicts[p].startswith("valid") for p in paths]


@pytest.mark.parametrize("key", CROSS_CHECKED)
def test_the_options_are_exactly_the_layouts_validate_accepts(key: str, tmp_path: Path) -> None:
    gpu = catalog.gpu(key)
    brute = brute_force_layouts(gpu)
    # 256 MiB (the plausibility floor) fits every instance, so every layout is an option.
    options = {tuple(sorted(o.mig_layout.items())) for o in advise(gpu, 256).options if o.mig_layout}
    assert options == brute == {tuple(sorted(layout.items())) for layout in mig_layouts(gpu)}
    # Every option passes the validator (all of them in one file, so one verdict covers them) ...
    assert validate(gpu, [[dict(layout) for layout in sorted(options)]], tmp_path) == [True]
    # ... and every other multiset within the per-profile limits and the compute budget fails it, one file each.
    others = [c for c in within_budgets(gpu) if tuple(sorted(c.items())) not in options]
    assert others  # the check sees rejections too
    assert validate(gpu, [[layout] for layout in others], tmp_path) == [False] * len(others)


def test_the_named_nvidia_layouts_are_among_the_options() -> None:
    # NVIDIA's all-balanced for 7-slice GPUs: 2 x 1g + 1 x 2g + 1 x 3g (mig-parted's default config)
    layouts = {tuple(sorted(layout.items())) for layout in mig_layouts(H20)}
    assert (("1g.12gb", 2), ("2g.24gb", 1), ("3g.48gb", 1)) in layouts
    assert (("1g.12gb", 7),) in layouts and (("7g.96gb", 1),) in layouts
    assert (("1g.12gb", 8),) not in layouts  # 8 x 1g: at most 7
    assert (("1g.24gb", 4), ("1g.12gb", 1)) not in layouts  # 9 memory slices


# --- the staging stack ---------------------------------------------------------------------------------------


def test_staging_uses_what_advise_recommends_at_seven_isolation_domains() -> None:
    stack = load_stack_file(PROJECT_DIR / "Pulumi.staging.yaml")
    h20 = stack.pool("h20")
    assert isinstance(h20.sharing, Mig) and h20.sharing.time_slicing is not None
    report = advise(
        catalog.gpu(h20.gpu), h20.sharing.time_slicing.measured_mib, stack.sharing.utilization_ceiling
    )
    recommended = report.recommended(7)
    assert recommended is not None
    assert h20.sharing.mig_layout == recommended.mig_layout == {"1g.12gb": 6, "1g.24gb": 1}
    assert h20.sharing.layout_name == recommended.layout_name() == "h20-6x1g.12gb-1x1g.24gb"
