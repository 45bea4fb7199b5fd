"""gpushare/advise/fleet.py's `parse_fleet` on keys YAML reads as something other than a string.

`2025-06-01:` is a date to YAML, `1:` a number, `null:` null, `true:` a boolean: JSON would turn some
into strings silently (`1` -> "1") and refuse the others with Python's own words. Each is one line that
names the mapping it is in and says to quote the key; `advise --fleet` exits 1 (bad content).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare.advise.fleet import parse_fleet
from gpushare.cli.main import main
from gpushare.errors import ConfigError

SERVICE = "{name: a, measuredMiB: 4621, replicas: 1%s}"
CANDIDATES = "candidates: [PNV5b.8XLARGE96]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"services:\n  - {SERVICE % ', 2025-06-01: x'}\n{CANDIDATES}",
            "services[0]: the key 2025-06-01 is read as a date, not a string: quote it",
        ),
        (
            f"services:\n  - {SERVICE % ', 2025-06-01 08:30:00: x'}\n{CANDIDATES}",
            "services[0]: the key 2025-06-01T08:30:00 is read as a date and time, not a string: quote it",
        ),
        (
            f"services:\n  - {SERVICE % ', null: 3'}\n{CANDIDATES}",
            "services[0]: the key null is read as null, not a string: quote it",
        ),
        (
            f"services:\n  - {SERVICE % ', true: 3'}\n{CANDIDATES}",
            "services[0]: the key true is read as a boolean, not a string: quote it",
        ),
        (
            f"services:\n  - {SERVICE % ''}\n{CANDIDATES}1: x\n",
            "the key 1 is read as a number, not a string: quote it",
        ),
        (
            f"services:\n  - {SERVICE % ''}\n  - {{name: b, measuredMiB: 4401, replicas: 1, 0.5: x}}\n{CANDIDATES}",
            "services[1]: the key 0.5 is read as a number, not a string: quote it",
        ),
    ],
)
def test_a_key_yaml_reads_as_no_string_is_named_with_its_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fleet(text, "fleet.yaml")
    assert str(caught.value) == f"fleet.yaml: {message}"
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    assert main(["advise", "--fleet", str(path)]) == 1
    assert capsys.readouterr().err == f"{path}: {message}\n"


def test_a_quoted_key_is_a_string_and_judged_as_a_key() -> None:
    text = "services:\n  - " + SERVICE % (', "2025-06-01": x',) + "\n" + CANDIDATES
    with pytest.raises(ConfigError) as caught:
        parse_fleet(text, "fleet.yaml")
    assert str(caught.value) == (
        "fleet.yaml: services[0].2025-06-01: unknown key "
        "(known: measuredMiB, measuredAt, source, name, replicas, isolation)"
    )
