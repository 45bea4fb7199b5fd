"""Garbage files through `validate` and `tune`: one line naming the file, a non-zero exit, no traceback,
bounded memory; ConfigMap manifests, `--mps-root` and the empty mig-parted file.

Every case runs in-process through the CLI's own entry point (`gpushare.cli.main.main`); one runs as a real
subprocess. A SIGALRM guard turns a hang into a failure instead of a stuck suite (a guard, not a timing
assertion: it is far above what any case needs).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import HANG_GUARD_SECONDS

from gpushare.cli.main import main
from gpushare.input_files import MAX_INPUT_BYTES

MEMORY_BOUND_BYTES = 64 * 1024 * 1024  # tracemalloc peak; a 1 MiB input must not cost more


def alias_bomb(levels: int = 9, width: int = 9) -> bytes:
    """The classic "billion laughs": 9 levels of 9 references expand to 9**9 strings (~600 bytes)."""
    lines = ["version: v1", "l0: &l0 [" + ",".join(['"lol"'] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return ("\n".join(lines) + "\n").encode()


@dataclass(frozen=True)
class Garbage:
    name: str
    make: Callable[[Path], Path]


def _file(content: bytes, name: str = "input") -> Callable[[Path], Path]:
    def make(directory: Path) -> Path:
        path = directory / name
        path.write_bytes(content)
        return path

    return make


GARBAGE = [
    Garbage("binary", _file(bytes(range(256)) * 64)),
    Garbage("non-utf8", _file("flags:\n  migStrategy: café\n".encode("latin-1"))),
    Garbage("empty", _file(b"")),
    Garbage("directory", lambda d: d),
    Garbage("missing", lambda d: d / "no-such-file.yaml"),
    Garbage("huge", _file(b"# padding\n" * (MAX_INPUT_BYTES // 10 + 1))),
    Garbage("alias-bomb", _file(alias_bomb())),
    Garbage("self-alias", _file(b"version: v1\nx: &a [*a]\n")),
    Garbage("deep-nesting", _file(b"[" * 50_000 + b"]" * 50_000)),
    Garbage("nul-in-text", _file(b"version: v1\n\0\n")),
    # Upstream accepts 500 levels (under its 10 000); this checker does not follow that deep: no verdict.
    Garbage("deeper-than-followed", _file(b"version: v1\nx: " + b"[" * 500 + b"]" * 500 + b"\n")),
]

COMMANDS: dict[str, list[str]] = {
    "validate-device-plugin-0.14.5": ["validate", "device-plugin-config"],
    "validate-device-plugin-0.20.0": ["validate", "device-plugin-config", "--plugin-version", "0.20.0"],
    "validate-mig-config": ["validate", "mig-config"],
    "tune-from-nvidia-smi": ["tune", "--gpu", "L20", "--from-nvidia-smi"],
    "tune-gpu-total-from": ["tune", "--gpu", "L20", "--measured-mib", "4621", "--gpu-total-from"],
}

# The verdicts that are not an error. The device plugin starts with an empty config file (recorded
# upstream: defaults, no sharing), so `validate device-plugin-config` calls it valid, with a warning.
EXIT_ZERO = {("validate-device-plugin-0.14.5", "empty"), ("validate-device-plugin-0.20.0", "empty")}


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, out)
    return code, out.getvalue() + capsys.readouterr().err


@pytest.mark.usefixtures("hang_guard")
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("garbage", GARBAGE, ids=[g.name for g in GARBAGE])
def test_garbage_is_one_line_naming_the_file(
    garbage: Garbage, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = garbage.make(tmp_path)
    tracemalloc.start()
    try:
        code, text = run_cli([*COMMANDS[command], str(path)], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = text.splitlines()
    assert "Traceback" not in text
    assert peak < MEMORY_BOUND_BYTES, f"{peak} bytes"
    if (command, garbage.name) in EXIT_ZERO:
        assert code == 0
        assert lines == [  # stdout, then stderr
            f"{path}: valid",
            f"{path}: warning: empty: the plugin starts with its defaults (no sharing)",
        ]
        return
    assert code != 0
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("garbage", "command", "line"),
    [
        ("directory", "validate-mig-config", "{path}: is a directory, not a file"),
        ("missing", "tune-from-nvidia-smi", "{path}: no such file"),
        ("huge", "validate-device-plugin-0.14.5", "{path}: larger than 1 MiB; not read"),
        # "flags:\n" is 7 bytes, "  migStrategy: " 15, "caf" 3: the é is byte 25.
        ("non-utf8", "tune-gpu-total-from", "{path}: not UTF-8 text (byte 0xe9 at offset 25)"),
        ("binary", "validate-mig-config", "{path}: a binary file (NUL byte at offset 0), not text"),
        # go-yaml (the plugin's and mig-parted's YAML reader) refuses these; recorded upstream for the plugin.
        (
            "alias-bomb",
            "validate-device-plugin-0.20.0",
            "{path}: invalid: error converting YAML to JSON: yaml: document contains excessive aliasing",
        ),
        (
            "alias-bomb",
            "validate-mig-config",
            "{path}: invalid: not valid YAML: document contains excessive aliasing",
        ),
        (
            "self-alias",
            "validate-device-plugin-0.14.5",
            "{path}: invalid: error converting YAML to JSON: yaml: anchor 'a' value contains itself",
        ),
        ("empty", "validate-mig-config", "{path}: invalid: no mig-configs: mig-parted reads the file"),
        ("empty", "tune-from-nvidia-smi", "{path}: no compute processes in the nvidia-smi output"),
        # 50 000 levels: beyond go-yaml's 10 000 (recorded upstream: "exceeded max depth of 10000").
        (
            "deep-nesting",
            "validate-device-plugin-0.20.0",
            "{path}: invalid: error converting YAML to JSON: yaml: exceeded max depth of 10000",
        ),
        (
            "deeper-than-followed",
            "validate-device-plugin-0.20.0",
            "{path}: error: nested too deeply to check",
        ),
        # The plugin reads UTF-8 only: a Latin-1 file is its refusal, not an unreadable file.
        (
            "non-utf8",
            "validate-device-plugin-0.14.5",
            "{path}: invalid: error converting YAML to JSON: yaml: invalid leading UTF-8 octet",
        ),
    ],
)
def test_garbage_lines_say_what_is_wrong(
    garbage: str, command: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = next(g for g in GARBAGE if g.name == garbage).make(tmp_path)
    _, text = run_cli([*COMMANDS[command], str(path)], capsys)
    assert text.startswith(line.format(path=path))


def test_dev_zero_is_not_read_at_all(capsys: pytest.CaptureFixture[str], hang_guard: None) -> None:
    # An endless file: reading it whole would never finish; a device is no config file.
    code, text = run_cli(["validate", "mig-config", "/dev/zero"], capsys)
    assert (code, text) == (2, "/dev/zero: is a character device, not a regular file; not read\n")


@pytest.mark.e2e
def test_alias_bomb_through_the_real_entry_point(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_bytes(alias_bomb())
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "validate", "device-plugin-config", str(bomb)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent.parent,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        timeout=HANG_GUARD_SECONDS,
    )
    assert done.returncode == 1
    assert done.stdout == (
        f"{bomb}: invalid: error converting YAML to JSON: yaml: document contains excessive aliasing\n"
    )
    assert done.stderr == ""


# --- ConfigMap manifests --------------------------------------------------------------------------------

CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: plugin-configs
  namespace: nvidia-device-plugin
data:
  l20: |
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 8
  t4: |
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 1
"""


def test_configmap_data_values_are_validated_by_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "configmap.yaml"
    manifest.write_text(CONFIG_MAP)
    code, text = run_cli(["validate", "device-plugin-config", str(manifest)], capsys)
    assert code == 1
    assert text.splitlines() == [
        f"{manifest}: data.l20: valid",
        f"{manifest}: data.t4: invalid: sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2",
    ]


def test_several_configmaps_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "two.yaml"
    second = CONFIG_MAP.replace("name: plugin-configs", "name: other").replace("replicas: 1", "replicas: 2")
    manifest.write_text("# Source: rendered by hand\n" + CONFIG_MAP + "---\n" + second)
    code, text = run_cli(["validate", "device-plugin-config", str(manifest)], capsys)
    assert code == 1
    assert f"{manifest}: ConfigMap nvidia-device-plugin/plugin-configs data.t4: invalid: " in text
    assert f"{manifest}: ConfigMap nvidia-device-plugin/other data.t4: valid" in text


def test_a_kubectl_list_of_configmaps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `kubectl get configmap -o yaml` of several objects prints one List.
    items = "\n".join("  " + line for line in ("- " + CONFIG_MAP.replace("\n", "\n  ")).splitlines())
    listing = tmp_path / "list.yaml"
    listing.write_text(f"apiVersion: v1\nkind: List\nitems:\n{items}\n")
    code, text = run_cli(["validate", "device-plugin-config", str(listing)], capsys)
    assert code == 1
    assert text.splitlines()[0] == f"{listing}: data.l20: valid"


def test_configmap_with_a_bomb_or_a_number_in_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bomb = alias_bomb().decode().replace("\n", "\n    ")
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: |\n    {bomb}\n  b: 5\n"
    )
    code, text = run_cli(["validate", "device-plugin-config", str(manifest)], capsys)
    assert code == 1
    assert text.splitlines() == [
        f"{manifest}: data.a: invalid: error converting YAML to JSON: yaml: document contains excessive aliasing",
        f"{manifest}: data.b: invalid: not a string (ConfigMap data values are strings)",
    ]


@pytest.mark.parametrize("kind", ["device-plugin-config", "mig-config"])
def test_a_manifest_without_configmaps_is_invalid(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DaemonSet is readable content, just not a config: invalid (exit 1), not "valid", not unreadable."""
    manifest = tmp_path / "ds.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: plugin\n")
    code, text = run_cli(["validate", kind, str(manifest)], capsys)
    name = "device-plugin config" if kind == "device-plugin-config" else "mig-parted config"
    assert (code, text) == (
        1,
        f"{manifest}: invalid: a Kubernetes manifest (apps/v1 DaemonSet plugin) with no ConfigMap: not a {name}\n",
    )


def test_a_configmap_without_data_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "empty-cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    code, text = run_cli(["validate", "device-plugin-config", str(manifest)], capsys)
    assert (code, text) == (
        1,
        f"{manifest}: invalid: ConfigMap x has no data keys: not a device-plugin config\n",
    )


# --- --mps-root -----------------------------------------------------------------------------------------

MPS = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 3\n"


@pytest.mark.parametrize("plugin_version", ["0.17.1", "0.20.0"])
def test_mps_root_judges_a_config_as_the_chart_runs_it(
    plugin_version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mps.yaml"
    path.write_text(MPS)
    argv = ["validate", "device-plugin-config", str(path), "--plugin-version", plugin_version]
    assert run_cli(argv, capsys) == (
        1,
        f"{path}: invalid: flags.mpsRoot: using MPS requires --mps-root to be specified\n",
    )
    code, text = run_cli([*argv, "--mps-root", "/run/nvidia/mps"], capsys)
    assert code == 0 and text.startswith(f"{path}: valid\n")
    code, text = run_cli([*argv, "--mps-root", ""], capsys)  # the chart with `mps.root: ""`
    assert code == 1 and "using MPS requires --mps-root" in text


def test_mps_root_needs_a_plugin_with_mps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mps.yaml"
    path.write_text(MPS)
    code, text = run_cli(
        ["validate", "device-plugin-config", str(path), "--mps-root", "/run/nvidia/mps"], capsys
    )
    assert (code, text) == (2, "error: --mps-root: plugin 0.14.5 has no MPS (0.17.1 and later do)\n")


# --- mig-config: a file with no configs -------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "# nothing\n", "---\n", "version: v1\n"])
def test_mig_config_without_configs_is_invalid(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mig.yaml"
    path.write_text(text)
    code, output = run_cli(["validate", "mig-config", str(path)], capsys)
    assert code == 1
    assert output.startswith(f"{path}: invalid: no mig-configs: ")
