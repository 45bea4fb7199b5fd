"""`python -m gpushare advise --fleet FILE` as a user meets it: the fleet table's exact columns, flags
that do not go with --fleet, and a fleet file with nothing to plan.

The table, by hand (catalog memory, ceiling 0.9; PNV5b.8XLARGE96 carries one L20, GN7.2XLARGE32 one T4):
- nlp, 4621 MiB, 20 replicas: L20 floor(0.9 x 46068 / 4621) = 8 slots -> ceil(20 / 8) = 3 GPUs, 3 nodes,
  3 x 46068 - 20 x 4621 = 45784 MiB unused; T4 (3 slots) would need 7 GPUs.
- embed, 4401 MiB, 6 replicas: L20 floor(41461.2 / 4401) = floor(9.42) = 9 slots -> 1 GPU, 46068 - 6 x
  4401 = 19662 MiB unused; T4 floor(13824 / 4401) = 3 slots -> 2 GPUs.
Text columns are left-aligned, numbers (slots/GPU, nodes, GPUs, unused MiB) right-aligned.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpushare.cli.main import main

FLEET = (
    "services:\n"
    "  - {name: nlp, measuredMiB: 4621, replicas: 20}\n"
    "  - {name: embed, measuredMiB: 4401, replicas: 6}\n"
    "candidates: [PNV5b.8XLARGE96, GN7.2XLARGE32]\n"
)


def fleet_file(tmp_path: Path, text: str = FLEET) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_the_fleet_table_aligns_text_left_and_numbers_right(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["advise", "--fleet", str(fleet_file(tmp_path))], out) == 0
    table = out.getvalue().split("\n\nStack snippet", 1)[0]
    assert table.splitlines() == [
        "Fleet plan (ceiling 0.9; fewest GPUs per service, ties: least memory unused):",
        "",
        "service  replicas  pool                    layout                     slots/GPU  nodes  GPUs  unused MiB",
        "nlp      20        L20 on PNV5b.8XLARGE96  whole GPU, time-sliced x8          8      3     3       45784",
        "embed    6         L20 on PNV5b.8XLARGE96  whole GPU, time-sliced x9          9      1     1       19662",
        "",
        "Total: 4 GPU(s)",
    ]


@pytest.mark.parametrize(
    "flags", [["--gpu", "L20"], ["--measured-mib", "4621"], ["--stack-snippet"]], ids=lambda f: f[0]
)
def test_each_flag_the_fleet_file_replaces_is_refused_alone(
    tmp_path: Path, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["advise", "--fleet", str(fleet_file(tmp_path)), *flags], io.StringIO())
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m gpushare advise: error: --fleet takes the GPUs and measurements from the file: drop "
        "--gpu, --measured-mib and --stack-snippet"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "services: []\ncandidates: [T4]\n", "services: needs at least 1 item(s)", id="no-services"
        ),
        pytest.param(
            "services: [{name: nlp, measuredMiB: 4621, replicas: 2}]\ncandidates: []\n",
            "candidates: needs at least 1 item(s)",
            id="no-candidates",
        ),
    ],
)
def test_a_fleet_with_nothing_to_plan_is_refused(
    tmp_path: Path, text: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fleet_file(tmp_path, text)
    out = io.StringIO()
    assert main(["advise", "--fleet", str(path)], out) == 1
    assert (out.getvalue(), capsys.readouterr().err) == ("", f"{path}: {expected}\n")
