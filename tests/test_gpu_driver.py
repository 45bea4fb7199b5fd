"""gpushare/gpu_driver.py: is a driver version certainly too old for MIG? The floor is the catalog's
`mig_min_driver` (today H20's 535.161.07 alone; docs/catalog.md); versions compare part by part."""

from __future__ import annotations

import pytest

from gpushare import catalog
from gpushare.gpu_driver import known_older, mig_driver_problem


@pytest.mark.parametrize(
    ("version", "floor", "older"),
    [
        ("535.161.07", "535.54.03", False),  # 161 > 54 as numbers (as strings "161" < "54")
        ("535.54.02", "535.54.03", True),
        ("535.54.03", "535.54.03", False),  # the floor itself is supported
        ("470.82.01", "525.60.13", True),
        ("535", "535.54.03", False),  # fewer parts: compared on those only, 535 = 535
        ("525", "535.54.03", True),
        ("535.54", "535.54.03", False),
        (" 470.82.01 ", "525.60.13", True),  # padding as TKE's strings sometimes carry
        ("R535", "535.54.03", False),  # not a dotted number: never judged
        ("latest", "535.54.03", False),
        ("470.82.01", "not-a-floor", False),
    ],
)
def test_known_older(version: str, floor: str, older: bool) -> None:
    assert known_older(version, floor) is older


def test_the_problem_names_the_gpu_and_its_floor() -> None:
    h20 = catalog.gpu("H20")
    assert mig_driver_problem(h20, "535.54.03") == (
        "driver 535.54.03 is too old for MIG on H20: NVIDIA supports it from 535.161.07"
    )
    assert mig_driver_problem(h20, "550.54.15") is None
    for gpu in catalog.GPUS.values():
        if gpu.mig_min_driver is None:
            assert mig_driver_problem(gpu, "1.0") is None  # no floor in the catalog: nothing to judge
            continue
        assert mig_driver_problem(gpu, gpu.mig_min_driver) is None
        assert mig_driver_problem(gpu, "1.0") == (
            f"driver 1.0 is too old for MIG on {gpu.key}: NVIDIA supports it from {gpu.mig_min_driver}"
        )
