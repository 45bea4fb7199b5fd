"""The conventions every command shares (issue #24): help text on every subcommand and flag, one exit-code
convention (0 ok, 1 findings or bad content, 2 usage or unreadable input), close-match suggestions,
conflicting flags refused by name, placeholders refused by the loader, `validate` on every file a render
writes, and SIGTERM during start-up said in one line."""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_DIR, STACKS

from gpushare.cli.main import build_parser, main
from gpushare.errors import EXIT_CODES_HELP
from gpushare.offline.render import RenderResult
from gpushare.suggest import close_matches, did_you_mean


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one in-process run; argparse's own exits count as exit codes."""
    out = io.StringIO()
    try:
        code = main(argv, out)
    except SystemExit as exited:
        code = int(exited.code or 0)
    return code, out.getvalue(), capsys.readouterr().err


def _parsers(
    parser: argparse.ArgumentParser, path: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path or "python -m gpushare", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}".strip())


PARSERS = dict(_parsers(build_parser()))


def test_every_command_is_reached() -> None:
    assert sorted(PARSERS) == [
        "advise",
        "catalog",
        "check",
        "init",
        "measure",
        "plan",
        "python -m gpushare",
        "render",
        "tune",
        "validate",
        "validate device-plugin-config",
        "validate mig-config",
        "verify",
    ]


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_subcommand_and_flag_has_help_and_the_exit_codes(name: str) -> None:
    parser = PARSERS[name]
    assert parser.description and parser.description.strip(), f"{name}: no description"
    assert parser.epilog == EXIT_CODES_HELP, f"{name}: no exit-code convention in --help"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"{name} {label}: no help text"
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                assert choice.help, f"{name} {choice.dest}: no summary"


def test_top_level_help_names_no_internal_class(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "Error" not in text.replace("error", "")  # no `GpushareError`, `ConfigError`, ...
    assert "  2  usage or unreadable input" in text


# --- exit codes ------------------------------------------------------------------------------------------


MISSING = "/nonexistent/gpushare-missing.yaml"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["tune", "--gpu", "T4", "--from-nvidia-smi", MISSING], f"{MISSING}: no such file"),
        (
            ["tune", "--gpu", "T4", "--measured-mib", "10", "--gpu-total-from", MISSING],
            f"{MISSING}: no such file",
        ),
        (["validate", "device-plugin-config", MISSING], f"{MISSING}: no such file"),
        (["validate", "mig-config", MISSING], f"{MISSING}: no such file"),
        (["advise", "--fleet", MISSING], f"{MISSING}: no such file"),
        (
            ["plan", "--stack", "prod", "--dir", "/nonexistent"],
            "/nonexistent: no Pulumi.yaml (the Pulumi project file) in the --dir directory; give --dir the "
            "project's directory, or start a project there with python -m gpushare init",
        ),
        (
            ["verify", "--stack", "prod", "--kubeconfig", MISSING],
            f"verify: cannot check: --kubeconfig {MISSING}: no such file",
        ),
    ],
    ids=["tune-csv", "tune-total", "validate-plugin", "validate-mig", "advise-fleet", "plan", "verify"],
)
def test_a_missing_file_is_exit_2_and_one_line_everywhere(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out, err) == (2, "", line + "\n")


def test_bad_content_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("config:\n  map:\n    any: 'version: v1'\nimage:\n  tag: v0.17.1\n")
    for kind in ("device-plugin-config", "mig-config"):
        code, out, _ = run(["validate", kind, str(values)], capsys)
        assert code == 1 and out.startswith(f"{values}: invalid: "), (kind, out)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("services: [{name: a, measuredMiB: 10, replicas: 1}]\ncandidates: [L20]\nceiling: 2\n")
    assert run(["advise", "--fleet", str(fleet)], capsys)[:2] == (1, "")


def test_a_values_file_is_not_a_device_plugin_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin would start with such a file (every key ignored, no sharing); `validate` says what it is."""
    values = tmp_path / "values.yaml"
    values.write_text("config:\n  map:\n    any: 'version: v1'\nimage:\n  tag: v0.17.1\n")
    code, out, err = run(["validate", "device-plugin-config", str(values)], capsys)
    assert (code, err) == (1, "")
    assert out == (
        f"{values}: invalid: not a device-plugin config: none of its top-level keys (config, image) is one of "
        "version, flags, resources, sharing, imex (a Helm values file or another program's config? validate "
        "the ConfigMap `render` writes, or the values' config.map entries as files)\n"
    )


# --- suggestions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "choices", "expected"),
    [
        ("h20", ["L20", "T4", "H20"], ["H20"]),  # case alone
        ("daemonset", ["daemonsets", "helm", "gpu-operator"], ["daemonsets"]),
        ("replica", ["name", "replicas", "measuredMiB"], ["replicas"]),
        ("a100", ["A100-40GB", "A100-80GB", "T4"], ["A100-40GB", "A100-80GB"]),  # a prefix
        ("L40", ["L20", "T4"], []),  # another GPU, not a slip
        ("qa", ["dev", "prod", "staging"], []),
    ],
)
def test_close_matches(value: str, choices: list[str], expected: list[str]) -> None:
    assert close_matches(value, choices) == expected


def test_did_you_mean_names_the_close_ones_only() -> None:
    assert did_you_mean("h20", ["L20", "H20"]) == "; did you mean 'H20'?"
    assert did_you_mean("zzz", ["L20", "H20"]) == ""
    # A model number with a size after it is the same GPU; one digit less (A10) is another GPU.
    assert (
        did_you_mean("A100", ["A10", "A100-40GB", "A100-80GB"])
        == "; did you mean 'A100-40GB' or 'A100-80GB'?"
    )


def test_a_gpu_not_in_the_catalog_suggests_its_sizes_not_a_shorter_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["tune", "--gpu", "A100", "--measured-mib", "4621"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "python -m gpushare tune: error: argument --gpu: unknown GPU model 'A100'; did you mean 'A100-40GB' or "
        "'A100-80GB'? (known: L20, T4, H20, A10, A30, A100-40GB, A100-80GB, H100-80GB, H100-94GB, H200, L4, "
        "L40S, V100)"
    )


def test_a_gpu_with_nothing_close_is_said_not_to_be_in_the_catalog(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["tune", "--gpu", "B300", "--measured-mib", "4621"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "python -m gpushare tune: error: argument --gpu: unknown GPU model 'B300': not in the catalog; known: "
        "L20, T4, H20, A10, A30, A100-40GB, A100-80GB, H100-80GB, H100-94GB, H200, L4, L40S, V100"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["tune", "--gpu", "h20", "--measured-mib", "4621"],
        ["advise", "--gpu", "h20", "--measured-mib", "4621"],
        ["validate", "mig-config", "--gpu", "h20", "x.yaml"],
    ],
)
def test_a_gpu_flag_suggests_the_catalog_key(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"python -m gpushare {' '.join(argv[:2]) if argv[0] == 'validate' else argv[0]}: error: argument --gpu: "
        "unknown GPU model 'h20'; did you mean 'H20'? (known: L20, T4, H20, A10, A30, A100-40GB, A100-80GB, "
        "H100-80GB, H100-94GB, H200, L4, L40S, V100)"
    )


def test_an_unknown_stack_lists_the_stacks_there(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["plan", "--stack", "qa"], capsys)
    assert code == 2
    assert err == (
        f"Pulumi.qa.yaml: no such stack file ({PROJECT_DIR}/Pulumi.qa.yaml) (stacks in {PROJECT_DIR}: "
        f"{', '.join(STACKS)})\n"
    )
    code, _, err = run(["plan", "--stack", "prd"], capsys)
    assert "; did you mean 'prod'? (stacks in " in err


def test_a_bad_mode_is_echoed_with_the_nearest_one(
    stack_document: Callable[[str], dict[str, Any]],
    write_stack: Callable[[dict[str, Any], str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = stack_document("prod")
    document["config"]["gpushare:sharing"]["devicePlugin"]["mode"] = "daemonset"
    path = write_stack(document, "typo")
    code, _, err = run(["plan", "--stack", "typo", "--dir", str(path.parent)], capsys)
    assert code == 1
    assert err == (
        "Pulumi.typo.yaml: gpushare:sharing.devicePlugin.mode: must be one of 'daemonsets', 'helm' or "
        "'gpu-operator', got 'daemonset'; did you mean 'daemonsets'?\n"
    )


@pytest.mark.parametrize(
    ("where", "key", "line"),
    [
        (
            "pool",
            "measuredMib",
            "gpushare:pools[0].sharing.measuredMib: unknown key; did you mean 'measuredMiB'?",
        ),
        ("plugin", "imag", "gpushare:sharing.devicePlugin.imag: unknown key; did you mean 'image'?"),
        ("plugin", "replicas", "gpushare:sharing.devicePlugin.replicas: unknown key"),  # nothing close
    ],
)
def test_a_misspelled_stack_key_gets_the_nearest_one(
    where: str,
    key: str,
    line: str,
    stack_document: Callable[[str], dict[str, Any]],
    write_stack: Callable[[dict[str, Any], str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = stack_document("prod")
    config = document["config"]
    target = (
        config["gpushare:pools"][0]["sharing"]
        if where == "pool"
        else config["gpushare:sharing"]["devicePlugin"]
    )
    target[key] = 5
    path = write_stack(document, "typo")
    code, _, err = run(["plan", "--stack", "typo", "--dir", str(path.parent)], capsys)
    assert (code, err) == (1, f"Pulumi.typo.yaml: {line}\n")


def test_conflicting_measurement_flags_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = PROJECT_DIR / "tests/fixtures/nvidia_smi/compute_apps_l20.csv"
    code, out, err = run(
        ["tune", "--gpu", "L20", "--measured-mib", "1000", "--from-nvidia-smi", str(csv)], capsys
    )
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "python -m gpushare tune: error: argument --from-nvidia-smi: not allowed with argument --measured-mib"
    )
    code, _, err = run(["tune", "--gpu", "L20"], capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        "python -m gpushare tune: error: one of the arguments --measured-mib --from-nvidia-smi is required"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["tune", "--gpu", "H20", "--measured-mib", "100", "--mig-profile", "1g.12g"],
            "--mig-profile: H20 has no MIG profile '1g.12g'; did you mean '1g.12gb' or '1g.12gb+me'? (known: 1g.12gb, "
            "1g.12gb+me, 1g.24gb, 2g.24gb, 3g.48gb, 4g.48gb, 7g.96gb)",
        ),
        (
            ["tune", "--gpu", "T4", "--measured-mib", "abc"],
            "python -m gpushare tune: error: argument --measured-mib: 'abc' is not a whole number of MiB",
        ),
        (
            ["advise", "--gpu", "H20", "--measured-mib", "4621", "--ceiling", "0"],
            "python -m gpushare advise: error: argument --ceiling: must be in (0, 1], got 0",
        ),
        (
            ["advise", "--gpu", "H20", "--measured-mib", "4621", "--stack-snippet", "--gpus-per-node", "0"],
            "python -m gpushare advise: error: --gpus-per-node must be > 0, got 0",
        ),
    ],
    ids=["mig-profile", "measured-mib", "ceiling", "gpus-per-node"],
)
def test_flag_errors_name_the_flag_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out, err.splitlines()[-1]) == (2, "", line)


# --- placeholders ----------------------------------------------------------------------------------------


def test_the_loader_refuses_a_placeholder_instance_type(
    stack_document: Callable[[str], dict[str, Any]],
    write_stack: Callable[[dict[str, Any], str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = stack_document("prod")
    document["config"]["gpushare:pools"][1]["instanceType"] = "FILL-IN"
    path = write_stack(document, "pasted")
    for command in (["plan"], ["verify", "--kubeconfig", "/nonexistent"]):
        code, _, err = run([*command, "--stack", "pasted", "--dir", str(path.parent)], capsys)
        assert code == (2 if command[0] == "verify" else 1)
        assert err == (
            "Pulumi.pasted.yaml: gpushare:pools[1].instanceType: still the placeholder 'FILL-IN' from "
            "`gpushare advise --stack-snippet`: replace it with the real value\n"
        )


# --- validate on every file a render writes --------------------------------------------------------------


def _verdicts(render: RenderResult, kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    manifests = sorted((render.out_dir / "manifests").iterdir())
    return {path.name: run(["validate", kind, str(path)], capsys)[0] for path in manifests}


def test_validate_on_every_file_a_daemonsets_render_writes(
    rendered: dict[str, RenderResult], capsys: pytest.CaptureFixture[str]
) -> None:
    # prod: the time-slicing ConfigMap is the one device-plugin config; nothing there is a mig-parted one.
    assert _verdicts(rendered["prod"], "device-plugin-config", capsys) == {
        "configmap_kube-system_time-slicing-config.yaml": 0,
        "daemonset_kube-system_nvidia-device-plugin-daemonset-l20.yaml": 1,
        "daemonsetpatch_kube-system_nvidia-device-plugin-daemonset.yaml": 1,
    }
    assert set(_verdicts(rendered["prod"], "mig-config", capsys).values()) == {1}


def test_validate_on_every_file_a_gpu_operator_render_writes(
    rendered: dict[str, RenderResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """staging: the device-plugin ConfigMap and the mig-parted ConfigMap each valid for its own kind only;
    the Helm values, NVIDIA's objects and NFD's ConfigMaps invalid for both (none exits 0 by mistake)."""
    plugin = _verdicts(rendered["staging"], "device-plugin-config", capsys)
    mig = _verdicts(rendered["staging"], "mig-config", capsys)
    assert {name for name, code in plugin.items() if code == 0} == {
        next(
            name
            for name in plugin
            if name.startswith("configmap_gpu-operator_gpushare-device-plugin-config-")
        )
    }
    assert {name for name, code in mig.items() if code == 0} == {
        next(name for name in mig if name.startswith("configmap_gpu-operator_gpushare-mig-parted-config-"))
    }
    assert set(plugin.values()) | set(mig.values()) == {0, 1}  # readable, so never 2
    assert plugin["helmrelease_gpu-operator_gpu-operator.values.yaml"] == 1


def test_validate_reads_a_kubectl_list_for_both_kinds(
    rendered: dict[str, RenderResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl get cm -o yaml` of both gpushare ConfigMaps (as a List): each kind judges its own."""
    import yaml

    manifests = rendered["staging"].out_dir / "manifests"
    items = [
        yaml.safe_load(path.read_text())
        for path in sorted(manifests.glob("configmap_gpu-operator_gpushare-*.yaml"))
    ]
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    code, out, _ = run(["validate", "mig-config", str(listed)], capsys)
    assert code == 1  # the device-plugin ConfigMap's entries are not mig-parted configs
    mig_name = items[1]["metadata"]["name"]
    assert f"{listed}: ConfigMap gpu-operator/{mig_name} data.config.yaml: valid\n" in out


# --- SIGTERM during start-up -----------------------------------------------------------------------------


# Makes the CLI's start-up slow where it is slowest in life (importing the command modules), and says when
# it got there: a `sitecustomize` on PYTHONPATH, so the real `python -m gpushare` runs unchanged.
SLOW_START = """
import sys, time

class SlowCli:
    def find_spec(self, name, path=None, target=None):
        if name == "gpushare.cli.main":
            sys.stdout.write("importing gpushare.cli.main\\n")
            sys.stdout.flush()
            time.sleep(60)
        return None

sys.meta_path.insert(0, SlowCli())
"""


def test_sigterm_during_start_up_is_one_line(tmp_path: Path) -> None:
    """Before any command runs (a CI timeout, kill), SIGTERM ends the CLI with one line, not a silent 143."""
    (tmp_path / "sitecustomize.py").write_text(SLOW_START)
    process = subprocess.Popen(
        [sys.executable, "-m", "gpushare", "plan", "--stack", "prod"],
        cwd=PROJECT_DIR,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PROJECT_DIR)])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "importing gpushare.cli.main\n"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert (process.returncode, out, err) == (
        128 + signal.SIGTERM,
        "",
        "plan: terminated (SIGTERM); nothing was written\n",
    )
