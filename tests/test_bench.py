"""Smoke test of the benchmark machinery (bench/): no timing is asserted anywhere here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench import floor, process_cpu, report, run, synthetic
from bench.measure import Job, Series, alternating, run_job
from bench.worker import PHASE_PACK, Sample
from gpushare import catalog
from gpushare.offline.pack_process import pack_python
from gpushare.offline.policy_driver import run_policy_pack
from gpushare.offline.policy_model import AnalyzedResource
from gpushare.offline.recorded import RecordedResource
from gpushare.offline.render import RESOURCES_FILE, redacted_inputs, render_stack
from gpushare.offline.stack_files import load_stack_config
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import Mig

RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = synthetic.make_project(tmp_path_factory.mktemp("bench") / "project", copy_stacks=["prod"])
    yield directory
    synthetic.remove_project(directory)


@pytest.fixture(autouse=True)
def _forget_scratch_modules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A program run in the scratch project imports `components` through its symlinks, which
    `run_program` does not take for the program's own modules: drop them so later tests import theirs."""
    yield
    scratch = str(tmp_path_factory.getbasetemp())
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(scratch):
            del sys.modules[name]


@pytest.mark.parametrize("mode", synthetic.PLUGIN_MODES)
def test_synthetic_stacks_pass_the_stack_validator(project: Path, mode: synthetic.PluginMode) -> None:
    stack = synthetic.write_stack(project, 12, mode)
    config = load_stack_file(project / stack.file_name, stack.name)
    assert len(config.pools) == 12
    assert config.plugin.mode == mode
    names = [pool.name for pool in config.pools]
    assert len(set(names)) == len(names)
    for pool in config.pools:
        assert len(pool.name) <= 25 and RFC1123_LABEL.match(pool.name)
        assert RFC1123_LABEL.match(f"gpushare-{pool.name}")  # the TKE node pool's name
        known = catalog.instance_type(pool.instance_type)
        if pool.gpu == "H20":
            assert known is None and pool.gpus_per_node == 1 and isinstance(pool.sharing, Mig)
        else:
            assert known is not None and known.gpu == pool.gpu
    assert Counter(pool.gpu for pool in config.pools) == {"L20": 4, "T4": 4, "H20": 4}
    layouts = {
        tuple(pool.sharing.mig_layout.items()) for pool in config.pools if isinstance(pool.sharing, Mig)
    }
    assert len(layouts) == 2  # both H20 layouts are in the rotation


def test_the_largest_default_size_fits_the_environment_limit(project: Path) -> None:
    stack = synthetic.write_stack(project, max(run.DEFAULT_SIZES), "helm")
    assert synthetic.config_env_bytes(project, stack.name) <= synthetic.ENV_STRING_LIMIT
    terse = synthetic.write_stack(project, 20, "helm")
    (project / "Pulumi.sources.yaml").write_text(
        yaml.safe_dump(synthetic.stack_document(20, "helm", sources=True))
    )
    assert synthetic.config_env_bytes(project, "sources") > synthetic.config_env_bytes(project, terse.name)


def test_scratch_project_links_the_program_and_gives_both_packs_one_interpreter(project: Path) -> None:
    for entry in synthetic.PROGRAM_ENTRIES:
        assert (project / entry).resolve() == (synthetic.REPO_ROOT / entry).resolve()
    assert (
        project / "policies" / "__main__.py"
    ).resolve() == synthetic.REPO_ROOT / "policies" / "__main__.py"
    real = pack_python(project / synthetic.POLICY_DIR)
    empty = pack_python(project / synthetic.EMPTY_PACK_DIR)
    assert Path(real).resolve() == Path(empty).resolve()


def _same_registration(a: RecordedResource, b: RecordedResource) -> bool:
    fields = (
        "type",
        "name",
        "urn",
        "parent",
        "custom",
        "provider",
        "protect",
        "dependencies",
        "secret_input_paths",
    )
    return all(getattr(a, f) == getattr(b, f) for f in fields) and redacted_inputs(a) == redacted_inputs(b)


@pytest.mark.parametrize("mode", synthetic.PLUGIN_MODES)
def test_floor_registers_what_the_render_registered(
    project: Path, tmp_path: Path, mode: synthetic.PluginMode
) -> None:
    stack = synthetic.write_stack(project, 3, mode)
    rendered = render_stack(project, stack.name, tmp_path / "render")
    floor_input = floor.load_floor_input(tmp_path / "render")
    config, secret_keys = load_stack_config(project, stack.name)
    recorded = floor.run_floor(
        floor_input, project="gpushare", stack=stack.name, config=config, secret_keys=secret_keys
    )
    assert [r.urn for r in recorded.resources] == [r.urn for r in rendered.resources]
    assert Counter(r.type for r in recorded.resources) == Counter(r.type for r in rendered.resources)
    mismatched = [
        real.urn
        for real, mine in zip(rendered.resources, recorded.resources, strict=True)
        if not _same_registration(real, mine)
    ]
    assert mismatched == []
    assert any(r.secret_input_paths for r in recorded.resources)  # the kubeconfig went in as a secret
    assert recorded.stack_outputs == rendered.outputs


@pytest.mark.e2e
def test_empty_pack_starts_and_reports_nothing(project: Path) -> None:
    pack = project / synthetic.EMPTY_PACK_DIR
    resource = AnalyzedResource(
        type="kubernetes:core/v1:ConfigMap",
        name="cm",
        urn="urn:pulumi:dev::gpushare::kubernetes:core/v1:ConfigMap::cm",
        properties={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
    )
    report_ = run_policy_pack(pack, [resource], stack="dev", project="gpushare", python=pack_python(pack))
    assert len(report_.policies) == 1 and report_.diagnostics == []


@pytest.mark.e2e
def test_worker_sample_round_trip(project: Path, tmp_path: Path) -> None:
    render_stack(project, "prod", tmp_path / "prod")
    assert (tmp_path / "prod" / RESOURCES_FILE).exists()
    sample = run_job(Job("floor", project, "prod", tmp_path / "prod"), tmp_path / "results")
    assert sample.error is None, sample.error
    assert sample.kind == "floor" and sample.resources == len(
        json.loads((tmp_path / "prod" / RESOURCES_FILE).read_text())
    )
    assert sample.rss_peak_kib >= sample.rss_before_kib > 0
    assert Sample.from_json(sample.to_json()) == sample


def _series(kind: str, stack: str, *seconds: float) -> Series:
    phases = {PHASE_PACK: 0.5} if kind.startswith("check") else {}
    samples = [
        Sample(kind=kind, stack=stack, seconds=s, rss_before_kib=1000, rss_peak_kib=2000, phases=phases)
        for s in seconds
    ]
    return Series(kind, stack, samples)


def test_results_document_table_and_plot(tmp_path: Path) -> None:
    assert alternating(["a", "b"], 0) == ["a", "b"] and alternating(["a", "b"], 1) == ["b", "a"]
    measured = run.Run(reps=3, scaling_reps=None, sizes=(50, 500), modes=("helm",))
    kinds = ("render", "floor", "check", "check-floor")
    measured.real["prod"] = {kind: _series(kind, "prod", 1.0, 2.0, 9.0) for kind in kinds}
    measured.scaling["helm"] = {
        50: {kind: _series(kind, "bench-50-helm", 1.0) for kind in kinds},
        500: {kind: _series(kind, "bench-500-helm", 10.0) for kind in kinds},
    }
    measured.config_bytes["helm"] = {50: 12_000, 500: 120_000}
    assert measured.reps_for(50) == 3 and measured.reps_for(500) == 1
    data = run.results_json(measured)
    json.dumps(data)  # serialisable as it is
    assert data["real"]["prod"]["ratios"]["renderTime"] == 1.0  # medians: 2.0 / 2.0
    growth = {t["name"]: t["value"] for t in data["targets"]}
    assert growth["render time(500)/time(50), helm"] == 10.0
    text = report.table(data)
    assert "render/floor time, prod" not in text and "helm" in text
    # The floor is generic resources: a limit on render/floor would reward leaving the SDKs' typed classes.
    assert [t["name"] for t in data["targets"] if "floor" in t["name"]] == []
    assert data["real"]["prod"]["ratios"]["renderPeakRss"] is not None
    pytest.importorskip("matplotlib")
    assert report.plot(data, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 0


def test_process_cpu_ratios_are_medians_over_the_sdk_imports_median() -> None:
    rows = process_cpu.summary({"SDK imports": [0.3, 0.2, 0.4], "render --stack prod": [0.6, 0.9, 0.75]})
    # Medians 0.3 s and 0.75 s: 0.75 / 0.3 = 2.5.
    assert [(r["process"], r["cpuSeconds"], r["vsSdkImports"]) for r in rows] == [
        ("SDK imports", 0.3, 1.0),
        ("render --stack prod", 0.75, 2.5),
    ]


@pytest.mark.e2e
def test_process_cpu_measures_whole_processes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "cpu.json"
    assert (
        process_cpu.main(
            ["--runs", "1", "--installed-bytecode", "--stacks", "prod", "--results", str(results)]
        )
        == 0
    )
    data = json.loads(results.read_text())
    assert [row["process"] for row in data["processes"]] == ["SDK imports", "render --stack prod"]
    assert all(len(row["samples"]) == 1 and row["cpuSeconds"] > 0 for row in data["processes"])
    assert data["bytecodeCache"] is True
    assert "| render --stack prod |" in capsys.readouterr().out


@pytest.mark.e2e
def test_process_cpu_stops_on_a_failing_process(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="exited 2: Pulumi.nope.yaml: no such stack file"):
        process_cpu.main(
            [
                "--runs",
                "1",
                "--installed-bytecode",
                "--stacks",
                "nope",
                "--results",
                str(tmp_path / "cpu.json"),
            ]
        )
    assert not (tmp_path / "cpu.json").exists()


def test_benchmarks_write_untracked_files_unless_asked() -> None:
    """`make bench` writes out/bench/ (ignored by git); only `make bench-update` touches the committed
    figures, copying them after the whole run, which make stops at when it fails."""
    project = Path(__file__).resolve().parent.parent
    defaults = [run.DEFAULT_RESULTS, run.DEFAULT_PLOT, process_cpu.RESULTS]
    assert [p.relative_to(project).as_posix() for p in defaults] == [
        "out/bench/results.json",
        "out/bench/scaling.png",
        "out/bench/process_cpu.json",
    ]
    assert "out/" in (project / ".gitignore").read_text().splitlines()
    planned = subprocess.run(
        ["make", "-n", "--no-print-directory", "bench-update"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    figures = "out/bench/results.json out/bench/scaling.png out/bench/process_cpu.json"
    assert planned[0] == f"rm -f {figures}"  # nothing stale left to copy
    assert planned[-1] == f"cp {figures} bench/"
    bench_runs = [i for i, line in enumerate(planned) if " -m bench" in line]
    assert bench_runs and max(bench_runs) < len(planned) - 1


def test_a_missed_target_fails_the_run_and_an_unmeasured_one_only_with_strict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.run import Target, exit_status

    held = Target("check vs empty pack", 1.2, 1.5, "")
    missed = Target("scaling 500/50", 13.0, 12.0, "")
    unmeasured = Target("make test", None, 60.0, "")
    assert exit_status([held, unmeasured], strict=False) == 0
    assert exit_status([held, unmeasured], strict=True) == 1
    assert capsys.readouterr().err == ""
    # Was 0 without --strict while the report printed MISSED (issue 34).
    assert exit_status([held, missed], strict=False) == 1
    assert capsys.readouterr().err == "\nMISSED: scaling 500/50\n"
