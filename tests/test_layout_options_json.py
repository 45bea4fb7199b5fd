"""`advise --json`: headroom per slot is rounded to 0.1 MiB, not more.

H20 (97871 MiB, catalog) time-sliced for the seed's 4621 MiB process: floor(0.9 x 97871 / 4621) =
floor(19.06) = 19 slots; 97871 / 19 = 5151.105... MiB a slot, 5151.105 - 4621 = 530.105... MiB headroom:
530.1 at one decimal (530.11 at two).
"""

from __future__ import annotations

import io
import json

from gpushare.cli.main import main


def test_headroom_per_slot_has_one_decimal() -> None:
    out = io.StringIO()
    assert main(["advise", "--gpu", "H20", "--measured-mib", "4621", "--json"], out) == 0
    options = json.loads(out.getvalue())["options"]
    shared = next(o for o in options if o["mode"] == "time-slicing")
    assert (shared["slots"], shared["headroomMiBPerSlot"]) == (19, 530.1)
