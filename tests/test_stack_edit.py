"""gpushare.stack.edit on its own: `measure --write` keeps each indentation layout a user may
have written the stack file in (ruamel.yaml's mapping/sequence/offset indents: 2/4/2 as `pulumi config
set` writes it, 2/2/0 with the dash under its key, 4/6/4 and 4/4/0 at four spaces): only the
measurement's lines change. tests/test_gpu_memory.py covers quoting styles and refusals.
"""

from __future__ import annotations

import pytest

from gpushare.stack.edit import NewMeasurement, edit_measurements

LAYOUTS = {
    "2/4/2": (
        "config:\n"
        "  gpushare:pools:\n"
        "    - name: l20\n"
        "      gpu: L20\n"
        "      sharing:\n"
        "        mode: time-slicing\n"
        "        measuredMiB: 4621\n"
        "        measuredAt: '2025-06-01'\n"
        "        source: by hand\n"
    ),
    "2/2/0": (
        "config:\n"
        "  gpushare:pools:\n"
        "  - name: l20\n"
        "    gpu: L20\n"
        "    sharing:\n"
        "      mode: time-slicing\n"
        "      measuredMiB: 4621\n"
        "      measuredAt: '2025-06-01'\n"
        "      source: by hand\n"
    ),
    "4/6/4": (
        "config:\n"
        "    gpushare:pools:\n"
        "        - name: l20\n"
        "          gpu: L20\n"
        "          sharing:\n"
        "              mode: time-slicing\n"
        "              measuredMiB: 4621\n"
        "              measuredAt: '2025-06-01'\n"
        "              source: by hand\n"
    ),
    "4/4/0": (
        "config:\n"
        "    gpushare:pools:\n"
        "    -   name: l20\n"
        "        gpu: L20\n"
        "        sharing:\n"
        "            mode: time-slicing\n"
        "            measuredMiB: 4621\n"
        "            measuredAt: '2025-06-01'\n"
        "            source: by hand\n"
    ),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_indentation_layout_is_kept(layout: str) -> None:
    text = LAYOUTS[layout]
    edited = edit_measurements(
        text, {"l20": NewMeasurement(5939, "2026-12-01", "gpushare measure")}, "Pulumi.x.yaml"
    )
    assert edited == text.replace("measuredMiB: 4621", "measuredMiB: 5939").replace(
        "'2025-06-01'", "'2026-12-01'"
    ).replace("source: by hand", "source: gpushare measure")


def test_missing_keys_go_right_after_the_measurement_whatever_follows_it() -> None:
    # The user's key order: mode after the measurement. measuredAt and source are missing: each is
    # inserted after the key before it (measuredMiB, then measuredAt), not appended after `mode`; the new
    # date quoted, so that YAML reads it as the string the stack model expects.
    text = (
        "config:\n"
        "  gpushare:pools:\n"
        "    - name: l20\n"
        "      gpu: L20\n"
        "      sharing:\n"
        "        measuredMiB: 4621\n"
        "        mode: time-slicing\n"
    )
    edited = edit_measurements(
        text, {"l20": NewMeasurement(5939, "2026-12-01", "gpushare measure")}, "Pulumi.x.yaml"
    )
    assert edited == (
        "config:\n"
        "  gpushare:pools:\n"
        "    - name: l20\n"
        "      gpu: L20\n"
        "      sharing:\n"
        "        measuredMiB: 5939\n"
        "        measuredAt: '2026-12-01'\n"
        "        source: gpushare measure\n"
        "        mode: time-slicing\n"
    )


def test_keys_already_there_keep_their_place() -> None:
    # measuredAt before measuredMiB in the user's order: replaced where it is, not moved after measuredMiB.
    text = (
        "config:\n"
        "  gpushare:pools:\n"
        "    - name: l20\n"
        "      gpu: L20\n"
        "      sharing:\n"
        "        measuredAt: '2025-06-01'\n"
        "        mode: time-slicing\n"
        "        measuredMiB: 4621\n"
        "        source: by hand\n"
    )
    edited = edit_measurements(
        text, {"l20": NewMeasurement(5939, "2026-12-01", "gpushare measure")}, "Pulumi.x.yaml"
    )
    assert edited == text.replace("4621", "5939").replace("2025-06-01", "2026-12-01").replace(
        "by hand", "gpushare measure"
    )
