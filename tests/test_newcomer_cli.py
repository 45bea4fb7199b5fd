"""What a newcomer meets first (issue 34): a flag typo named as such with the nearest flag, `--stack`
given a file name, no kubeconfig at all, a chart that cannot be found — each one line, exit 2."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.cli import main as cli_main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # argparse said "the following arguments are required: --stack".
        (
            ["verify", "--stak", "prod"],
            "python -m gpushare verify: unknown option --stak; did you mean --stack?",
        ),
        # argparse printed the top-level usage.
        (
            ["plan", "--stack", "prod", "--jsn"],
            "python -m gpushare plan: unknown option --jsn; did you mean --json?",
        ),
        (
            ["measure", "--stack", "prod", "--wrte"],
            "python -m gpushare measure: unknown option --wrte; did you mean --write?",
        ),
        (
            ["validate", "mig-config", "--gpux", "H20", "f.yaml"],
            "python -m gpushare validate mig-config: unknown option --gpux; did you mean --gpu?",
        ),
        (
            ["plan", "--stack=prod", "--xyzzy"],
            "python -m gpushare plan: unknown option --xyzzy; see python -m gpushare plan --help",
        ),
    ],
)
def test_a_flag_typo_is_named_with_the_nearest_flag(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main.main(argv, out=io.StringIO()) == 2
    assert capsys.readouterr().err == said + "\n"


@pytest.mark.parametrize("argv", [["plan", "--stack", "prod", "--js"], ["plan", "--stack", "prod", "--json"]])
def test_known_flags_and_their_abbreviations_pass(argv: list[str]) -> None:
    assert cli_main.main([*argv, "--dir", str(PROJECT_DIR)], out=io.StringIO()) == 0


@pytest.mark.parametrize(
    ("given", "name"),
    [("Pulumi.prod.yaml", "prod"), ("./Pulumi.staging.yml", "staging"), ("/srv/x/Pulumi.dev.yaml", "dev")],
)
@pytest.mark.parametrize("command", ["plan", "check", "verify", "measure"])
def test_stack_given_a_file_name_says_which_name(
    command: str, given: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main.main([command, "--stack", given, "--dir", str(PROJECT_DIR)], out=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        f"--stack {given}: --stack takes the stack's name, not its file: --stack {name}\n"
    )


@pytest.mark.parametrize("command", ["verify", "measure"])
def test_no_kubeconfig_at_all_says_so(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert cli_main.main([command, "--stack", "prod", "--dir", str(PROJECT_DIR)], out=io.StringIO()) == 2
    what = "cannot check" if command == "verify" else "cannot measure"
    # The client would say "Invalid kube-config file. No configuration found."
    assert capsys.readouterr().err == (
        f"{command}: {what}: no kubeconfig: {tmp_path}/.kube/config does not exist, $KUBECONFIG is not set, "
        "and this is not a pod (no KUBERNETES_SERVICE_HOST); give --kubeconfig PATH\n"
    )


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_chart_without_source_is_exit_2(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Dev runs the device plugin's Helm chart; no directory, cache or download has it.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUSHARE_CHART_DIRS", raising=False)
    empty = tmp_path / "charts"
    empty.mkdir()
    args = [command, "--stack", "dev", "--dir", str(PROJECT_DIR), "--no-download", "--chart-dir", str(empty)]
    if command == "render":
        args += ["--out", str(tmp_path / "out")]
    assert cli_main.main(args, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "nvidia-device-plugin 0.17.1: no chart source (looked in: chart directories " in err
    assert "Traceback" not in err
