"""gpushare/advise/pool_snippet.py: the `gpushare:pools` entry printed for a layout option, as a user pastes it
under `config:`. T4 at 4401 MiB: floor(0.9 x 15360 / 4401) = floor(3.14) = 3 slots per GPU (the seed)."""

from __future__ import annotations

import pytest
import yaml

from gpushare import catalog
from gpushare.advise.layout_options import LayoutOption, advise
from gpushare.advise.pool_snippet import PoolSnippet, render_pools
from gpushare.errors import GpushareError
from gpushare.stack.model import Pool


def option(gpu: str, measured: int, mode: str) -> LayoutOption:
    return next(o for o in advise(catalog.gpu(gpu), measured, 0.9).options if o.mode == mode)


def pools(text: str) -> list[Pool]:
    return [Pool.model_validate(p) for p in yaml.safe_load("config:\n" + text)["config"]["gpushare:pools"]]


def test_a_time_sliced_pool_on_a_catalog_instance_type() -> None:
    snippet = PoolSnippet(
        "t4", option("T4", 4401, "time-slicing"), "GN7.2XLARGE32", 1, 2, "2025-06-01", "nvidia-smi"
    )
    text = render_pools([snippet])
    assert text == (
        "  gpushare:pools:\n"
        "    - name: t4\n"
        "      gpu: T4\n"
        "      instanceType: GN7.2XLARGE32\n"
        "      nodes: {min: 2, max: 2, desired: 2}\n"
        "      sharing:\n"
        "        mode: time-slicing\n"
        "        # 3 slots per GPU (gpushare advise)\n"
        "        measuredMiB: 4401\n"
        '        measuredAt: "2025-06-01"\n'
        '        source: "nvidia-smi"\n'
    )
    (pool,) = pools(text)
    assert pool.gpus_per_node is None  # the catalog knows GN7.2XLARGE32 carries one T4


def test_an_uncatalogued_type_states_gpus_per_node_and_a_missing_date_is_a_comment() -> None:
    mig = option("H20", 4621, "mig")
    text = render_pools([PoolSnippet("h20", mig, None, 4, 1)])
    lines = text.splitlines()
    assert lines[3].startswith("      instanceType: FILL-IN  # a Tencent instance type carrying H20")
    assert lines[4] == "      gpusPerNode: 4"
    assert '          measuredAt: "FILL-IN: YYYY-MM-DD, the day it was measured"' in lines
    with pytest.raises(ValueError, match="measuredAt"):  # as printed, the placeholder is refused
        pools(text)
    (pool,) = pools(text.replace("FILL-IN: YYYY-MM-DD, the day it was measured", "2025-06-01"))
    assert (pool.instance_type, pool.gpus_per_node, pool.sharing.mode) == ("FILL-IN", 4, "mig")


def test_an_exclusive_pool_has_no_measurement() -> None:
    text = render_pools([PoolSnippet("big", option("T4", 14000, "exclusive"), "GN7.2XLARGE32", 1, 1)])
    assert text.endswith("      sharing:\n        mode: exclusive\n")
    assert "measuredMiB" not in text


def test_a_name_the_stack_refuses_is_refused_here_naming_the_key() -> None:
    snippet = PoolSnippet("A_b", option("T4", 4401, "time-slicing"), "GN7.2XLARGE32", 1, 1)
    with pytest.raises(GpushareError, match=r"^pool A_b: name: "):
        snippet.checked_entry()
