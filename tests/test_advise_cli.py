"""`python -m gpushare advise`: the table, the JSON, the pool snippet and the fleet plan, end to end.

The snippets are pasted into a copy of a stack and go through the stack model and the offline render
(what `make render` runs); `mig-layout-underused` is shown catching `7 x 1g.12gb` through the analyzer
protocol (the real pack, started as the CLI starts it).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR

from gpushare.cli.main import main
from gpushare.errors import ConfigError
from gpushare.offline import policy_driver
from gpushare.offline.check import check_stack
from gpushare.offline.render import render_stack
from gpushare.resource_types import NODE_POOL
from gpushare.stack.loading import load_stack_file

FLEET = PROJECT_DIR / "examples" / "fleet.yaml"


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, out)
    return code, out.getvalue()


def pools_of(snippet: str) -> list[dict[str, Any]]:
    """The `gpushare:pools` list a printed snippet holds (it is indented to sit under `config:`)."""
    pools: list[dict[str, Any]] = yaml.safe_load("config:\n" + snippet)["config"]["gpushare:pools"]
    return pools


def project_with(tmp_path: Path, stack: str, document: dict[str, Any]) -> Path:
    """The real program (linked, not copied) with one extra stack file."""
    project = tmp_path / "project"
    project.mkdir()
    for entry in ("Pulumi.yaml", "__main__.py", "components", "gpushare"):
        (project / entry).symlink_to(PROJECT_DIR / entry)
    (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return project


def test_table_for_the_seed_measurement() -> None:
    code, text = run(["advise", "--gpu", "H20", "--measured-mib", "4621"])
    assert code == 0
    lines = text.splitlines()
    front = lines[lines.index(next(line for line in lines if line.startswith("Pareto front"))) + 2 :]
    # best first, the recommendation for its isolation level starred
    assert front[0].split() == [
        "*",
        "19",
        "1",
        "whole",
        "GPU,",
        "time-sliced",
        "x19",
        "89.7",
        "%",
        "530",
        "MiB",
        "0.37",
    ]
    assert front[1].split()[:8] == ["*", "16", "7", "6x", "1g.12gb", "+", "1x", "1g.24gb"]
    assert "  16          2  1x 3g.48gb + 1x 4g.48gb" in text  # best at 2 isolation domains


def test_json_lists_every_option_in_a_stable_order() -> None:
    code, text = run(["advise", "--gpu", "H20", "--measured-mib", "4621", "--json"])
    assert code == 0
    document = json.loads(text)
    assert (document["gpu"], document["measuredMiB"], document["ceiling"]) == ("H20", 4621, 0.9)
    options = document["options"]
    assert len(options) == 129  # 127 MIG layouts (the cross-check test counts them) + whole GPU x2
    by_layout = {json.dumps(o["migLayout"], sort_keys=True): o for o in options}
    assert by_layout['{"1g.12gb": 7}']["slots"] == 14
    assert by_layout['{"1g.24gb": 4}']["slots"] == 16
    assert by_layout['{"3g.48gb": 2}']["slots"] == 16
    assert [o["mode"] for o in options if o["migLayout"] is None] == ["time-slicing", "exclusive"]
    assert run(["advise", "--gpu", "H20", "--measured-mib", "4621", "--json"])[1] == text


def test_stack_snippet_passes_the_stack_model(
    stack_document: Callable[[str], dict[str, Any]], write_stack: Callable[[dict[str, Any], str], Path]
) -> None:
    flags = [
        "--stack-snippet",
        "--isolation",
        "7",
        "--instance-type",
        "PNV6.8XLARGE128",
        "--pool-name",
        "nlp",
    ]
    code, snippet = run(["advise", "--gpu", "H20", "--measured-mib", "4621", *flags])
    assert code == 0
    (pool,) = pools_of(snippet)
    assert pool["sharing"] == {
        "mode": "mig",
        "migLayout": {"1g.12gb": 6, "1g.24gb": 1},
        "layoutName": "h20-6x1g.12gb-1x1g.24gb",
        "timeSlicing": {
            "measuredMiB": 4621,
            "measuredAt": "FILL-IN: YYYY-MM-DD, the day it was measured",
            "source": "FILL-IN: how and where the process was measured",
        },
    }
    assert snippet.endswith(
        "  # Fill in before use: measuredAt, source (every FILL-IN value; plan, render and check refuse a "
        "stack that still holds one)\n"
    )
    document = stack_document("staging")
    document["config"]["gpushare:pools"] = [pool]
    # Pasted as printed, the loader refuses it, naming each placeholder's key.
    with pytest.raises(ConfigError) as refused:
        load_stack_file(write_stack(document, "snippet"))
    assert str(refused.value) == "\n".join(
        f"Pulumi.snippet.yaml: gpushare:pools[0].sharing.timeSlicing.{key}: still the placeholder "
        f"{value!r} from `gpushare advise --stack-snippet`: replace it with the real value"
        for key, value in [
            ("measuredAt", "FILL-IN: YYYY-MM-DD, the day it was measured"),
            ("source", "FILL-IN: how and where the process was measured"),
        ]
    )
    pool["sharing"]["timeSlicing"].update(measuredAt="2025-06-01", source="nvidia-smi on nlp-0")
    stack = load_stack_file(write_stack(document, "snippet"))
    assert stack.pool("nlp").gpus_per_node == 1
    # Without --isolation: the most slots, the whole GPU time-sliced; the catalog's L20 instance type.
    code, snippet = run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--stack-snippet"])
    (pool,) = pools_of(snippet)
    assert (pool["instanceType"], pool["sharing"]["mode"], "gpusPerNode" in pool) == (
        "PNV5b.8XLARGE96",
        "time-slicing",
        False,
    )


def test_usage_errors_exit_2_and_bad_values_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(["advise", "--gpu", "H20"])
    assert exited.value.code == 2
    assert "give --gpu and --measured-mib" in capsys.readouterr().err
    code, _ = run(["advise", "--gpu", "H20", "--measured-mib", "99999"])
    assert code == 1
    assert capsys.readouterr().err == "measured 99999 MiB does not fit H20 (97871 MiB)\n"
    code, _ = run(["advise", "--gpu", "H20", "--measured-mib", "4621", "--stack-snippet", "--isolation", "8"])
    assert code == 1
    assert "--isolation 8: no layout of H20 has that many isolation domains" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["advise", "--gpu", "H20", "--measured-mib", "4621", "--isolation", "7"])
    assert "--isolation only apply with --stack-snippet" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # a flag naming nothing known is usage, like argparse's own
        run(["advise", "--gpu", "B300", "--measured-mib", "4621"])
    assert exited.value.code == 2
    assert "error: argument --gpu: unknown GPU model 'B300'" in capsys.readouterr().err


# --- the fleet -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet_plan() -> dict[str, Any]:
    code, text = run(["advise", "--fleet", str(FLEET), "--json"])
    assert code == 0
    plan: dict[str, Any] = json.loads(text)
    return plan


def test_fleet_plan_of_the_sample(fleet_plan: dict[str, Any]) -> None:
    chosen = {
        s["service"]: (s["gpu"], s["option"]["mode"], s["option"]["migLayout"], s["gpus"])
        for s in fleet_plan["services"]
    }
    # The H20 candidate is PNV6.16XLARGE640, 4 GPUs per node (the catalog, as staging uses it).
    # nlp, 20 x 4621 MiB, MIG only: H20 MIG layouts yield at most 16 per GPU with more than one instance
    # (and 17 for 1 x 7g.96gb): ceil(20 / 16) = 2 GPUs, so one node of 4; MIG asked for, so the most
    # instances: 6 x 1g.12gb + 1 x 1g.24gb.
    assert chosen["nlp"] == ("H20", "mig", {"1g.12gb": 6, "1g.24gb": 1}, 4)
    # embed, 6 x 4401 MiB, whole GPUs: L20 floor(0.9 x 46068 / 4401) = 9 -> 1 GPU; T4 3 -> 2 GPUs; H20 one
    # node of 4 GPUs.
    assert chosen["embed"] == ("L20", "time-slicing", None, 1)
    # asr, 3 x 15000 MiB, any: L20 floor(0.9 x 46068 / 15000) = 2 -> 2 GPUs; T4 1 slot -> 3 GPUs; H20
    # floor(0.9 x 97871 / 15000) = 5 -> 1 GPU, but a node of 4.
    assert chosen["asr"] == ("L20", "time-slicing", None, 2)
    assert fleet_plan["totalGpus"] == 4 + 1 + 2
    nlp = fleet_plan["services"][0]
    assert (nlp["nodes"], nlp["slots"], nlp["wastedMiB"]) == (1, 4 * 16, 4 * 97871 - 20 * 4621)


def test_fleet_snippet_renders(
    fleet_plan: dict[str, Any], stack_document: Callable[[str], dict[str, Any]], tmp_path: Path
) -> None:
    """The snippet pasted into a copy of the staging stack renders as `make render` renders it."""
    pools = pools_of(fleet_plan["stackSnippet"])
    assert [p["name"] for p in pools] == ["nlp", "embed", "asr"]
    for pool in pools:  # filled in, as the snippet's last line asks
        measurement = pool["sharing"].get("timeSlicing", pool["sharing"])
        if str(measurement.get("measuredAt", "")).startswith("FILL-IN"):
            measurement["measuredAt"] = "2025-06-01"
        if str(measurement.get("source", "")).startswith("FILL-IN"):
            measurement["source"] = "nvidia-smi on the service's node"
    document = stack_document("staging")
    document["config"]["gpushare:pools"] = pools
    project = project_with(tmp_path, "fleet", document)
    result = render_stack(project, "fleet", tmp_path / "out")
    labels = {
        yaml.safe_load((tmp_path / "out" / f).read_text())["labels"].get("nvidia.com/mig.config")
        for f in result.files
        if f.startswith("tke/") and f.endswith(".yaml")
    }
    assert "h20-6x1g.12gb-1x1g.24gb" in labels
    assert sorted(p["name"] for p in result.capacity["pools"]) == ["asr", "embed", "nlp"]
    slots = {p["name"]: p["slots"] for p in result.capacity["pools"]}
    # The plan's slots, recomputed by the program: nlp 4 GPUs x 16, embed 9, asr 2 GPUs x 2.
    assert slots == {"nlp": 64, "embed": 9, "asr": 4}


def test_fleet_text_output_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(["advise", "--fleet", str(FLEET)])
    assert code == 0
    assert "Total: 7 GPU(s)" in text and "  gpushare:pools:\n    - name: nlp\n" in text
    cases = {
        "services: [{name: a, measuredMiB: 0, replicas: 1}]\ncandidates: [L20]\n": "services[0].measuredMiB",
        "services: [{name: a, measuredMiB: 1000, replicas: 1}]\ncandidates: [B300]\n": "candidates[0]: 'B300' is neither",
        "services: [{name: a, measuredMiB: 99999, replicas: 1}]\ncandidates: [L20]\n": "services[0]: 99999 MiB fits no candidate",
        "services: [{name: a, measuredMiB: 1000, replicas: 1, isolation: mig}]\ncandidates: [L20]\n": "fits no candidate GPU with MIG",
        "services: [{name: A_b, measuredMiB: 1000, replicas: 1}]\ncandidates: [L20]\n": "pool A_b: name",
        "services: [{name: a, measuredMiB: 1000, replicas: 1, measuredAt: last week}]\ncandidates: [L20]\n": "services[0].measuredAt",
        "services: [{name: a, measuredMiB: 1000, replicas: 1}]\n"
        "candidates: [{gpu: L20, instanceType: PNV5b.8XLARGE96, gpusPerNode: 2}]\n": "has 1 GPU(s) per node",
        "services: [a: [\n": "not valid YAML",
        "x: &a [1, 2]\nservices: [*a, *a]\ncandidates: [L20]\n": "aliases",
        "services: !!set {a}\ncandidates: [L20]\n": "the tag !!set is not allowed here",
        "- 1\n": "expected a mapping",
    }
    for index, (content, expected) in enumerate(cases.items()):
        path = tmp_path / f"fleet-{index}.yaml"
        path.write_text(content)
        code, out = run(["advise", "--fleet", str(path)])
        err = capsys.readouterr().err
        assert (code, out) == (1, ""), content
        assert err.startswith(f"{path}: ") and expected in err and err.count("\n") == 1, err
    # Unreadable input exits 2, as in tune and validate.
    (tmp_path / "latin1.yaml").write_bytes(b"services: [{name: caf\xe9}]\n")
    code, _ = run(["advise", "--fleet", str(tmp_path / "latin1.yaml")])
    assert (
        code == 2
        and capsys.readouterr().err
        == f"{tmp_path / 'latin1.yaml'}: not UTF-8 text (byte 0xe9 at offset 21)\n"
    )
    code, _ = run(["advise", "--fleet", str(tmp_path / "missing.yaml")])
    assert code == 2 and capsys.readouterr().err == f"{tmp_path / 'missing.yaml'}: no such file\n"
    code, _ = run(["advise", "--fleet", str(tmp_path)])
    assert code == 2 and capsys.readouterr().err == f"{tmp_path}: is a directory, not a file\n"


def test_fleet_reports_every_problem_and_unknown_keys_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "services:\n  - {name: nlp, measuredMiB: 0, replica: 2}\ncandidates: [L20]\nceilng: 0.8\n"
    )
    code, out = run(["advise", "--fleet", str(path)])
    assert (code, out) == (1, "")
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: services[0].replica: unknown key; did you mean 'replicas'? (known: measuredMiB, measuredAt, "
        "source, name, replicas, isolation)",
        f"{path}: ceilng: unknown key; did you mean 'ceiling'? (known: services, candidates, ceiling)",
        f"{path}: services[0].measuredMiB: must be > 0",
        f"{path}: services[0].replicas: required",
    ]


def test_fleet_buys_whole_nodes_and_a_single_replica_takes_the_smallest_gpu(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "services:\n"
        "  - {name: nlp, measuredMiB: 4621, replicas: 20, isolation: mig}\n"
        "  - {name: one, measuredMiB: 4621, replicas: 1}\n"
        "candidates: [T4, {gpu: H20, instanceType: HX.EIGHT, gpusPerNode: 8}]\n"
    )
    code, text = run(["advise", "--fleet", str(path), "--json"])
    assert code == 0
    nlp, one = json.loads(text)["services"]
    # ceil(20 / 16) = 2 GPUs, but a node carries 8: 1 node, 8 GPUs, 8 x 16 = 128 slots
    assert (nlp["instanceType"], nlp["nodes"], nlp["gpus"], nlp["slots"]) == ("HX.EIGHT", 1, 8, 128)
    assert nlp["wastedMiB"] == 8 * 97871 - 20 * 4621
    # 1 replica: one GPU anywhere; the T4 leaves the least unused (15360 - 4621 = 10739) and is 1 per node.
    assert (one["gpu"], one["instanceType"], one["gpus"], one["wastedMiB"]) == (
        "T4",
        "GN7.2XLARGE32",
        1,
        10739,
    )


def test_a30_instances_too_small_to_share_count_one_slot_each() -> None:
    code, text = run(["advise", "--gpu", "A30", "--measured-mib", "4621"])
    assert code == 0
    # A30 1g.6gb: 6e9 / 2^20 = 5722 MiB, floor(0.9 x 5722 / 4621) = floor(1.11) = 1: one slot per instance;
    # the whole GPU: floor(0.9 x 24576 / 4621) = floor(4.79) = 4. Both 4 slots; the MIG layout isolates 4 ways.
    front = [line.split()[:5] for line in text.splitlines() if line.startswith("  *")]
    assert front == [["*", "4", "4", "4x", "1g.6gb"]]


# --- the policy, through the analyzer protocol -------------------------------------------------------------------


@pytest.mark.e2e
def test_mig_layout_underused_catches_seven_small_instances_through_the_protocol(
    stack_document: Callable[[str], dict[str, Any]], tmp_path: Path
) -> None:
    document = stack_document("staging")
    h20 = document["config"]["gpushare:pools"][0]
    h20["sharing"]["migLayout"] = {"1g.12gb": 7}
    h20["sharing"]["layoutName"] = "all-1g.12gb"
    project = project_with(tmp_path, "staging", document)
    result = check_stack(project, "staging", pack_dir=PROJECT_DIR / "policies")
    assert not result.report.mandatory, policy_driver.format_report(result.report)
    found = [d for d in result.report.advisory if d.policy_name == "mig-layout-underused"]
    messages = sorted(d.message for d in found)
    # The rendered mig-parted ConfigMap holds the stack's own layout: reported once, on the node pool.
    assert len(messages) == 1, messages
    assert (
        "MIG layout 7x 1g.12gb yields 14 slot(s) in 7 instance(s) for 4621 MiB (ceiling 0.9)" in messages[0]
    )
    assert "6x 1g.12gb + 1x 1g.24gb yields 16 in 7" in messages[0]
    # On the H20 node pool the layout is partitioned on.
    assert f"{NODE_POOL}::" in found[0].urn and found[0].urn.endswith("h20-pool"), found[0].urn


def test_the_stack_snippet_is_one_node_pool_of_one_node_as_printed() -> None:
    """The whole snippet for the seed's L20 (floor(0.9 x 46068 / 4621) = 8 slots), exactly as printed: one
    pool of one node (min = max = desired = 1)."""
    code, snippet = run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--stack-snippet"])
    assert code == 0
    assert snippet == (
        "# L20, 4621 MiB, ceiling 0.9: whole GPU, time-sliced x8\n"
        "  gpushare:pools:\n"
        "    - name: l20\n"
        "      gpu: L20\n"
        "      instanceType: PNV5b.8XLARGE96\n"
        "      nodes: {min: 1, max: 1, desired: 1}\n"
        "      sharing:\n"
        "        mode: time-slicing\n"
        "        # 8 slots per GPU (gpushare advise)\n"
        "        measuredMiB: 4621\n"
        '        measuredAt: "FILL-IN: YYYY-MM-DD, the day it was measured"\n'
        '        source: "FILL-IN: how and where the process was measured"\n'
        "  # Fill in before use: measuredAt, source (every FILL-IN value; plan, render and check refuse a stack "
        "that still holds one)\n"
    )
