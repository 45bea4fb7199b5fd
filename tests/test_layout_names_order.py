"""Layout names do not depend on the order a layout's profiles are listed in.

A stack file, a fleet file or a policy hands over `migLayout` as a mapping in the order its author wrote
it; the mig-parted config name (the `nvidia.com/mig.config` label value) must be the same for
`{1g.24gb: 1, 1g.12gb: 6}` and `{1g.12gb: 6, 1g.24gb: 1}`, or one layout would get two labels and the
node would be repartitioned for nothing. advise writes the smallest profile first (compute slices, then
memory slices: 1g.12gb before 1g.24gb before 2g.24gb); the stack model's default `custom-` name sorts
by profile name.
"""

from __future__ import annotations

import pytest

from gpushare import catalog
from gpushare.advise.layout_options import advise, layout_option
from gpushare.stack.model import Mig

H20 = catalog.gpu("H20")


@pytest.mark.parametrize(
    "layout",
    [
        {"1g.24gb": 1, "1g.12gb": 6},
        {"1g.12gb": 6, "1g.24gb": 1},
    ],
)
def test_advise_writes_the_smallest_profile_first_whatever_the_input_order(layout: dict[str, int]) -> None:
    option = layout_option(advise(H20, 4621), layout)
    assert option is not None
    assert option.layout_name() == "h20-6x1g.12gb-1x1g.24gb"
    assert option.describe() == "6x 1g.12gb + 1x 1g.24gb"
    assert list(option.mig_layout or {}) == ["1g.12gb", "1g.24gb"]


@pytest.mark.parametrize(
    "layout",
    [
        {"3g.48gb": 1, "2g.24gb": 1, "1g.12gb": 2},
        {"1g.12gb": 2, "3g.48gb": 1, "2g.24gb": 1},
    ],
)
def test_three_profiles_are_named_smallest_first(layout: dict[str, int]) -> None:
    # 2 + 2 + 3 = 7 compute slices and 2 + 2 + 4 = 8 memory slices: the whole H20.
    option = layout_option(advise(H20, 4621), layout)
    assert option is not None
    assert option.layout_name() == "h20-2x1g.12gb-1x2g.24gb-1x3g.48gb"


@pytest.mark.parametrize(
    "layout",
    [
        {"1g.24gb": 1, "1g.12gb": 6},
        {"1g.12gb": 6, "1g.24gb": 1},
    ],
)
def test_the_stack_models_default_name_is_the_same_for_either_order(layout: dict[str, int]) -> None:
    sharing = Mig.model_validate({"mode": "mig", "migLayout": layout})
    assert sharing.config_name == "custom-1g.12gbx6-1g.24gbx1"
