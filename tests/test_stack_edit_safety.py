"""`measure --write`'s file edit keeps the file as it was in everything but the measurement, and refuses,
one line, nothing written, what it cannot do safely (issue 34): line endings, mode, symlinks (written
through to the target), a file changed since it was read, read-only files and directories, aliased
`sharing` blocks. The stack file is the repository's Pulumi.prod.yaml.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.cli import main as cli_main
from gpushare.errors import GpushareError
from gpushare.stack.edit import NewMeasurement, NotWritable, commit, prepare_measurements, write_measurements

UPDATE = {"l20": NewMeasurement(4700, "2026-12-04", "gpushare measure, test")}
OLD_LINES = (
    "        measuredMiB: 4621",
    '        measuredAt: "2025-06-01"',
    "        source: nvidia-smi --query-compute-apps on the L20 node, NLP inference service",
)
NEW_LINES = (
    "        measuredMiB: 4700",
    '        measuredAt: "2026-12-04"',
    "        source: gpushare measure, test",
)


@pytest.fixture
def stack_file(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", path)
    return path


def test_crlf_stays_crlf(stack_file: Path) -> None:
    stack_file.write_bytes(stack_file.read_bytes().replace(b"\n", b"\r\n"))
    write_measurements(stack_file, "prod", UPDATE)
    after = stack_file.read_bytes()
    assert after.count(b"\r\n") == after.count(b"\n")
    lines = after.decode().split("\r\n")
    assert [line for line in lines if line.strip().startswith(("measuredMiB: 4700", "source: gpushare"))] == [
        NEW_LINES[0],
        NEW_LINES[2],
    ]
    # Everything else is as it was: only the three lines differ.
    before = (PROJECT_DIR / "Pulumi.prod.yaml").read_text().split("\n")
    assert [i for i, (a, b) in enumerate(zip(before, lines, strict=True)) if a != b] == [
        before.index(OLD_LINES[0]),
        before.index(OLD_LINES[0]) + 1,
        before.index(OLD_LINES[0]) + 2,
    ]


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b.replace(b"\n", b"\r\n", 3),  # mixed
        lambda b: b.replace(b"gpushare:protectPools", b"\rgpushare:protectPools"),  # a bare CR
    ],
)
def test_mixed_or_bare_carriage_returns_are_refused(stack_file: Path, damage: object) -> None:
    assert callable(damage)
    stack_file.write_bytes(damage(stack_file.read_bytes()))
    before = stack_file.read_bytes()
    with pytest.raises(GpushareError):
        write_measurements(stack_file, "prod", UPDATE)
    assert stack_file.read_bytes() == before


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o2644])
def test_the_mode_is_kept(stack_file: Path, mode: int) -> None:
    os.chmod(stack_file, mode)
    write_measurements(stack_file, "prod", UPDATE)
    assert stat.S_IMODE(stack_file.stat().st_mode) == mode
    assert "measuredMiB: 4700" in stack_file.read_text()


@pytest.mark.parametrize("relative", [True, False])
def test_a_symlink_is_written_through_to_its_target(tmp_path: Path, relative: bool) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "prod.yaml"
    shutil.copy(PROJECT_DIR / "Pulumi.prod.yaml", target)
    project = tmp_path / "project"
    project.mkdir()
    link = project / "Pulumi.prod.yaml"
    link.symlink_to(os.path.relpath(target, project) if relative else target)
    write_measurements(link, "prod", UPDATE)
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert "measuredMiB: 4700" in target.read_text()
    assert sorted(p.name for p in shared.iterdir()) == ["prod.yaml"]  # no temporary left behind


@pytest.mark.parametrize(
    "other_edit",
    [
        lambda t: t.replace("protectPools: true", "protectPools: false"),
        lambda t: t + "# a comment someone added\n",
        lambda t: t.replace("4401", "4402"),
    ],
)
def test_a_file_changed_since_it_was_read_is_not_overwritten(stack_file: Path, other_edit: object) -> None:
    assert callable(other_edit)
    edit = prepare_measurements(stack_file, "prod", UPDATE)
    theirs = other_edit(stack_file.read_text())
    stack_file.write_text(theirs)
    with pytest.raises(NotWritable) as raised:
        commit(edit, stack_file.name)
    assert (raised.value.exit_code, str(raised.value)) == (
        2,
        "Pulumi.prod.yaml: not written: the file changed since measure read it (someone else's edit would be "
        "lost); run measure again",
    )
    assert stack_file.read_text() == theirs


@pytest.mark.parametrize("mode", [0o444, 0o400])
def test_a_read_only_file_is_refused(stack_file: Path, mode: int) -> None:
    os.chmod(stack_file, mode)
    before = stack_file.read_bytes()
    with pytest.raises(NotWritable) as raised:
        write_measurements(stack_file, "prod", UPDATE)
    assert (raised.value.exit_code, str(raised.value)) == (
        2,
        "Pulumi.prod.yaml: not written: the file is read-only",
    )
    assert stack_file.read_bytes() == before


def test_a_read_only_directory_is_one_line(stack_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests run as root, whom a 0555 directory does not stop: the refusal mkstemp raises is given instead.
    def refuse(**_: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(NotWritable) as raised:
        write_measurements(stack_file, "prod", UPDATE)
    assert (raised.value.exit_code, str(raised.value)) == (
        2,
        f"Pulumi.prod.yaml: not written: cannot create a file in {stack_file.parent}: Permission denied",
    )


ALIASED = """config:
  gpushare:cluster: {id: cls-prod0001, vpcId: vpc-prod0001, subnetIds: [subnet-prod0001], kubernetesVersion: "1.30"}
  gpushare:pools:
    - name: l20
      gpu: L20
      instanceType: PNV5b.8XLARGE96
      nodes: {min: 1, max: 1, desired: 1}
      sharing: &measured
        mode: time-slicing
        measuredMiB: 4621
        measuredAt: "2025-06-01"
        source: seed
    - name: l20b
      gpu: L20
      instanceType: PNV5b.8XLARGE96
      nodes: {min: 1, max: 1, desired: 1}
      sharing: *measured
"""


@pytest.mark.parametrize("pool", ["l20", "l20b"])
def test_an_aliased_sharing_block_is_refused(tmp_path: Path, pool: str) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(ALIASED)
    with pytest.raises(GpushareError) as raised:
        write_measurements(path, "prod", {pool: UPDATE["l20"]})
    assert str(raised.value) == (
        f"Pulumi.prod.yaml: pool {pool}: its sharing block is a YAML alias (an anchor other keys name too): a "
        "measurement written there would change them all; give the pool its own sharing block, or write by hand"
    )
    assert path.read_text() == ALIASED


def test_measure_in_a_deleted_working_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        assert cli_main.main(["plan", "--stack", "prod"], out=io.StringIO()) == 2
    finally:
        os.chdir(here)
    assert capsys.readouterr().err == (
        "no Pulumi project here: the working directory no longer exists (removed?); cd into the project or "
        "give --dir DIR\n"
    )
