"""`validate` on hostile manifests (issue 34): every name from the file reaches the output escaped (no
forged verdict line, no terminal escape), `binaryData` is judged, and one class of input has one exit
code whichever validator reads it and wherever in a manifest it sits (errors.py's convention: 1 bad
content, 2 unreadable input).
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from gpushare.cli import main as cli_main

VALID_PLUGIN = (
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
)
VALID_MIG = "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
NUL = b"\x00"
KINDS = {"device-plugin-config": VALID_PLUGIN, "mig-config": VALID_MIG}


def config_map(
    data: dict[str, str] | None = None, binary: dict[str, str] | None = None, name: str = "cfg"
) -> str:
    lines = ["apiVersion: v1", "kind: ConfigMap", f"metadata: {{name: {name!r}, namespace: kube-system}}"]
    for field, entries in (("data", data), ("binaryData", binary)):
        if entries is not None:
            lines.append(f"{field}:")
            lines += [f"  {_quoted(k)}: {_quoted(v)}" for k, v in entries.items()]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    # A YAML double-quoted scalar: escapes as JSON writes them (JSON is YAML's subset for these).
    return json.dumps(text)


def validate(
    tmp_path: Path, kind: str, text: str | bytes, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    path = tmp_path / "cm.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    out = io.StringIO()
    code = cli_main.main(["validate", kind, str(path)], out=out)
    return code, out.getvalue().replace(str(path), "FILE"), capsys.readouterr().err.replace(str(path), "FILE")


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    ("key", "shown"),
    [
        # A key that forges a verdict line of its own: the line break stays inside one line, quoted.
        ("x: valid\nFILE: data.y", '"x: valid\\nFILE: data.y"'),
        # A terminal escape (red text) and a bidirectional override.
        ("\x1b[31mkey", '"\\u001b[31mkey"'),
        ("key\u202e", '"key\\u202e"'),
        ("a: valid", '"a: valid"'),
    ],
)
def test_every_key_from_the_file_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, key: str, shown: str
) -> None:
    code, out, err = validate(tmp_path, kind, config_map({key: "[: broken"}), capsys)
    assert code == 1
    assert out.startswith(f"FILE: data.{shown}: invalid: ")
    assert out.count("\n") == 1 and "\x1b" not in out + err and "\u202e" not in out + err


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_plain_key_stays_plain(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    code, out, _ = validate(tmp_path, kind, config_map({"l20.yaml": KINDS[kind]}), capsys)
    assert (code, out) == (0, "FILE: data.l20.yaml: valid\n")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_forged_name_of_another_object_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    other = 'apiVersion: v1\nkind: "Secret\\n\\u001b[2J"\nmetadata: {name: s}\n---\n'
    code, _, err = validate(tmp_path, kind, other + config_map({"a": KINDS[kind]}), capsys)
    assert code == 0
    assert err == 'FILE: warning: v1 "Secret\\n\\u001b[2J" s is not a ConfigMap; not checked\n'


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_binary_data_is_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    good = base64.b64encode(KINDS[kind].encode()).decode()
    bad = base64.b64encode(b"[: broken\n").decode()
    code, out, _ = validate(
        tmp_path, kind, config_map(binary={"good": good, "bad": bad, "nob64": "%%%"}), capsys
    )
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "FILE: binaryData.good: valid"
    assert lines[1].startswith("FILE: binaryData.bad: invalid: ")
    assert lines[2] == "FILE: binaryData.nob64: invalid: not base64 (binaryData values are base64 strings)"


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    ("text", "code"),
    [
        # Bad content: a broken plain file, and a broken later document of a manifest, are both 1.
        ("version: v1\n[: bad\n", 1),
        (config_map({"a": VALID_MIG}) + "---\n[: bad\n", 1),
        # Not text: a NUL byte is 2 for both validators.
        (b"version: v1\x00\n", 2),
        (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: b}\n\x00", 2),
    ],
)
def test_one_exit_code_per_class_of_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, text: str | bytes, code: int
) -> None:
    got, out, err = validate(tmp_path, kind, text, capsys)
    assert got == code
    if code == 2:
        assert isinstance(text, bytes)
        assert (out, err) == ("", f"FILE: a binary file (NUL byte at offset {text.index(NUL)}), not text\n")
    else:
        assert out.count("FILE") >= 1 and "invalid" in out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_nested_beyond_what_is_checked_is_no_verdict_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """300 nested flow lists: go-yaml would read them (it allows 10000 levels), this checker follows fewer,
    so neither validator says valid or invalid: an error on stderr and exit 2, not 1 (bad content)."""
    text = "version: v1\nmig-configs:\n  x: " + "[" * 300 + "]" * 300 + "\n"
    got, out, err = validate(tmp_path, kind, text, capsys)
    assert (got, out) == (2, "")
    assert (
        err
        == "FILE: error: nested too deeply to check (go-yaml allows 10000 levels; this checker follows fewer)\n"
    )
