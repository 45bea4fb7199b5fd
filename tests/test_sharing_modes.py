"""`advise` across sharing modes (gpushare/advise/sharing_modes.py and the CLI's modes table).

Expected slots are written down from the seed and arithmetic in the comments (ceiling 0.9):
- L20 46068 MiB, 4621 MiB: time-slicing floor(0.9 x 46068 / 4621) = floor(8.97) = 8; MPS 8 clients of
  46068 // 8 = 5758 MiB (0.9 x 5758 = 5182.2 >= 4621).
- T4 15360 MiB, 4401 MiB: floor(0.9 x 15360 / 4401) = floor(3.14) = 3; MPS 3 of 15360 // 3 = 5120 MiB
  (0.9 x 5120 = 4608 >= 4401).
- H20 97871 MiB, 4621 MiB (the L20's process, as docs/mig-and-advise.md): floor(0.9 x 97871 / 4621) =
  floor(19.06) = 19; MPS 19 of 97871 // 19 = 5151 MiB (0.9 x 5151 = 4635.9 >= 4621); MIG 7g.96gb
  (91552 MiB, catalog) floor(0.9 x 91552 / 4621) = floor(17.83) = 17 in 1 instance; 6x 1g.12gb (11264 MiB:
  floor(2.19) = 2 each) + 1x 1g.24gb (22528 MiB: floor(4.39) = 4) = 16 in 7 instances.
- qGPU (TKE's kernel-enforced slices): a slice is ceil(measured / 0.9 MiB) in whole GiB, slots
  min(16, floor(allocatable GiB / slice)), core floor(100 / slots) down to a step of 5; allocatable qGPU
  memory per card from shared/reference/tke-qgpu.md: T4 14 GiB (verified), L20 44 (third-party), H20 94
  (inferred). L20 4621: 5134.4 MiB -> 6 GiB, floor(44 / 6) = 7, core 14 -> 10. T4 4401: 4890 MiB -> 5 GiB,
  floor(14 / 5) = 2, core 50. H20 4621: 6 GiB, floor(94 / 6) = 15, core 6 -> 5. H20 12000: 13333.3 MiB
  -> 14 GiB, floor(94 / 14) = 6, core 16 -> 15.
The fronts are also cross-checked against a brute force written here from the definitions (integer
arithmetic, placements tried slice by slice), not through the code under test.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_layout_options import brute_force_layouts

from gpushare import catalog
from gpushare.advise import sharing_modes
from gpushare.advise.sharing_modes import ISOLATION_LEVELS, ModeOption, compare_modes
from gpushare.catalog import GpuModel
from gpushare.cli.main import main
from gpushare.plan import build_plan
from gpushare.stack.model import Pool, StackConfig


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, out)
    return code, out.getvalue()


def section(text: str, title: str) -> list[list[str]]:
    """The rows (split on two spaces or more) of the table under `title` in the modes section."""
    lines = text.splitlines()
    start = lines.index(title) + 2  # the title, then the header
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append([cell.strip() for cell in line.strip().split("  ") if cell.strip()])
    return rows


def front_of(gpu: str, measured: int, **kwargs: Any) -> list[tuple[str, int, str, int, str]]:
    report = compare_modes(catalog.gpu(gpu), measured, **kwargs)
    return [(o.mode, o.slots, o.isolation, o.isolation_domains, o.description) for o in report.pareto]


# --- the seed's numbers -----------------------------------------------------------------------------------


def test_l20_lists_time_slicing_and_mps_with_slots_and_isolation() -> None:
    code, text = run(["advise", "--gpu", "L20", "--measured-mib", "4621"])
    assert code == 0
    assert section(text, "Best option of each mode:") == [
        [
            "8",
            "memory",
            "mps",
            "whole GPU, MPS x8 (5758 MiB/client)",
            "5758 MiB/client",
            "helm, gpu-operator",
        ],
        ["8", "none", "time-slicing", "whole GPU, time-sliced x8", "-", "daemonsets, helm, gpu-operator"],
        [
            "7",
            "kernel",
            "qgpu",
            "qGPU 7 x (6 GiB, core 10) of 44 GiB (third-party)",
            "6144 MiB/slice",
            "daemonsets, helm, gpu-operator",
        ],
    ]
    # Same slots, more isolation: MPS beats time-slicing; qGPU's fewer slots isolate more.
    assert section(text, "Pareto front (no other option has as many slots and as much isolation):") == [
        [
            "8",
            "memory",
            "mps",
            "whole GPU, MPS x8 (5758 MiB/client)",
            "5758 MiB/client",
            "helm, gpu-operator",
        ],
        [
            "7",
            "kernel",
            "qgpu",
            "qGPU 7 x (6 GiB, core 10) of 44 GiB (third-party)",
            "6144 MiB/slice",
            "daemonsets, helm, gpu-operator",
        ],
    ]
    assert "Not offered: mig (L20 has no MIG)" in text.splitlines()
    # The layout table before it is unchanged: the existing output comes first.
    assert text.startswith("L20 (46068 MiB), largest process 4621 MiB, ceiling 0.9: 2 options, no MIG\n")


def test_t4_at_the_seed_measurement() -> None:
    assert front_of("T4", 4401) == [
        ("mps", 3, "memory", 1, "whole GPU, MPS x3 (5120 MiB/client)"),
        ("qgpu", 2, "kernel", 1, "qGPU 2 x (5 GiB, core 50) of 14 GiB"),  # verified figure: no mark
    ]
    best = compare_modes(catalog.gpu("T4"), 4401).best_per_mode()
    assert [(o.mode, o.slots, o.memory_limit_mib) for o in best] == [
        ("mps", 3, 5120),
        ("time-slicing", 3, None),
        ("qgpu", 2, 5 * 1024),
    ]


def test_h20_adds_the_mig_layouts() -> None:
    code, text = run(["advise", "--gpu", "H20", "--measured-mib", "4621"])
    assert code == 0
    best = section(text, "Best option of each mode:")
    assert [row[:4] for row in best] == [
        ["19", "memory", "mps", "whole GPU, MPS x19 (5151 MiB/client)"],
        ["19", "none", "time-slicing", "whole GPU, time-sliced x19"],
        ["17", "hardware x1", "mig", "1x 7g.96gb"],
        ["15", "kernel", "qgpu", "qGPU 15 x (6 GiB, core 5) of 94 GiB (inferred)"],
    ]
    # qGPU's 15 kernel-isolated slices are dominated by MIG's 17 in one hardware instance.
    assert front_of("H20", 4621) == [
        ("mps", 19, "memory", 1, "whole GPU, MPS x19 (5151 MiB/client)"),
        ("mig", 17, "hardware", 1, "1x 7g.96gb"),
        ("mig", 16, "hardware", 7, "6x 1g.12gb + 1x 1g.24gb"),
        ("mig", 16, "hardware", 7, "5x 1g.12gb + 1x 1g.12gb+me + 1x 1g.24gb"),
    ]
    report = compare_modes(catalog.gpu("H20"), 4621)
    assert sum(o.mode == "mig" for o in report.options) == 127  # every MIG layout advise lists


# --- the front against a brute force ----------------------------------------------------------------------

# ceiling 0.9 as 9/10: every comparison in integers.
NUM, DEN = 9, 10


def brute_slots(memory: int, measured: int) -> int:
    """Copies of the process that fit `memory` at the ceiling, counted one by one (at most 110)."""
    slots = 0
    while slots < 110 and DEN * (slots + 1) * measured <= NUM * memory:
        slots += 1
    return slots


# Allocatable qGPU memory per card (GiB), from shared/reference/tke-qgpu.md via the module docstring.
QGPU_ALLOCATABLE_GIB = {"T4": 14, "L20": 44, "H20": 94}

BruteOption = tuple[str, int, int, int, tuple[tuple[str, int], ...]]


def brute_options(gpu: GpuModel, measured: int) -> set[BruteOption]:
    """(mode, slots, isolation level, domains, MIG layout) of every option, from the definitions."""
    found: set[BruteOption] = set()
    whole = brute_slots(gpu.memory_mib, measured)
    if whole >= 2:
        found.add(("time-slicing", whole, 0, 1, ()))
    # MPS: the tuning rule's clients (what `plan` gives the pool), >= 2, on Volta or later, offered only
    # when each client's limit memory // clients holds measured / ceiling (else the stack is refused).
    volta = tuple(int(part) for part in gpu.compute_capability.split(".")) >= (7, 0)
    if whole >= 2 and volta and NUM * (gpu.memory_mib // whole) >= DEN * measured:
        found.add(("mps", whole, 1, 1, ()))
    profiles = {p.name: p for p in gpu.mig_profiles}
    for layout in brute_force_layouts(gpu) if gpu.mig_capable else set():
        slots = 0
        for name, count in layout:
            memory = profiles[name].memory_mib
            if measured > memory:
                break
            per = brute_slots(memory, measured)
            slots += count * (per if per >= 2 else 1)
        else:
            found.add(("mig", slots, 3, sum(c for _, c in layout), layout))
    # qGPU: the smallest whole GiB holding measured / ceiling, then slices of the allocatable memory.
    allocatable = QGPU_ALLOCATABLE_GIB.get(gpu.key)
    if allocatable is not None:
        slice_gib = 1
        while NUM * slice_gib * 1024 < DEN * measured:
            slice_gib += 1
        slices = min(16, allocatable // slice_gib)
        if slices >= 2:
            found.add(("qgpu", slices, 2, 1, ()))
    return found


def brute_front(options: set[tuple[str, int, int, int, tuple[tuple[str, int], ...]]]) -> set[Any]:
    return {
        o
        for o in options
        if not any(
            p[1] >= o[1] and (p[2], p[3]) >= (o[2], o[3]) and (p[1], p[2], p[3]) != (o[1], o[2], o[3])
            for p in options
        )
    }


def as_brute(option: ModeOption) -> tuple[str, int, int, int, tuple[tuple[str, int], ...]]:
    layout = option.layout.mig_layout if option.layout is not None else None
    return (
        option.mode,
        option.slots,
        ISOLATION_LEVELS.index(option.isolation),
        option.isolation_domains,
        tuple(sorted((layout or {}).items())),
    )


@pytest.mark.parametrize(("gpu", "measured"), [("L20", 4621), ("T4", 4401), ("H20", 4621), ("H20", 12000)])
def test_the_front_is_the_brute_force_optimum(gpu: str, measured: int) -> None:
    model = catalog.gpu(gpu)
    report = compare_modes(model, measured)
    options = {as_brute(o) for o in report.options}
    assert options == brute_options(model, measured)
    assert {as_brute(o) for o in report.pareto} == brute_front(options)
    # For each mode: its best slots are the brute force's best.
    for mode in ("time-slicing", "mps", "mig", "qgpu"):
        brute_best = max((o[1] for o in options if o[0] == mode), default=None)
        ours = next((o.slots for o in report.best_per_mode() if o.mode == mode), None)
        assert ours == brute_best, mode


# --- --isolation and --plugin-mode ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "flags", "modes"),
    [
        ("L20", ["--isolation", "none"], ["mps", "time-slicing", "qgpu"]),
        ("L20", ["--isolation", "memory"], ["mps", "qgpu"]),
        ("L20", ["--isolation", "kernel"], ["qgpu"]),
        ("H20", ["--isolation", "memory"], ["mps", "mig", "qgpu"]),
        ("H20", ["--isolation", "kernel"], ["mig", "qgpu"]),
        ("H20", ["--isolation", "hardware"], ["mig"]),
        # TKE's v0.14.5 has no MPS; qGPU pools run no NVIDIA plugin, so any plugin mode keeps them.
        ("H20", ["--plugin-mode", "daemonsets"], ["time-slicing", "mig", "qgpu"]),
        ("L20", ["--plugin-mode", "daemonsets", "--isolation", "memory"], ["qgpu"]),
        ("L20", ["--plugin-mode", "daemonsets", "--isolation", "hardware"], []),
    ],
)
def test_isolation_and_plugin_mode_filter_the_modes(gpu: str, flags: list[str], modes: list[str]) -> None:
    code, text = run(["advise", "--gpu", gpu, "--measured-mib", "4621", *flags])
    assert code == 0
    assert text.startswith("Across sharing modes")  # the new flags print the modes section alone
    if modes:
        assert [row[2] for row in section(text, "Best option of each mode:")] == modes
    else:
        assert "No option." in text.splitlines()


def test_a_word_that_is_no_level_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--isolation", "strong"])
    assert exited.value.code == 2
    assert (
        "argument --isolation: 'strong' is neither an isolation level (none, memory, kernel, hardware) nor a "
        "number of isolation domains" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as exited:
        run(["advise", "--gpu", "H20", "--measured-mib", "4621", "--isolation", "7", "--plugin-mode", "helm"])
    assert exited.value.code == 2


# --- --stack-snippet writes the chosen mode's pool --------------------------------------------------------


def _planned(snippet: str) -> tuple[str, int, int | None]:
    (entry,) = yaml.safe_load("config:\n" + snippet)["config"]["gpushare:pools"]
    entry["sharing"].update(measuredAt="2025-06-01", source="nvidia-smi on the node")
    Pool.model_validate_json(json.dumps(entry))
    document = {
        "stack": "t",
        "source": "Pulumi.t.yaml",
        "cluster": {
            "id": "cls-mps00001",
            "vpcId": "vpc-mps00001",
            "subnetIds": ["subnet-mps00001"],
            "kubernetesVersion": "1.30",
        },
        "sharing": {"utilizationCeiling": 0.9, "devicePlugin": {"mode": "helm"}},
        "pools": [entry],
    }
    stack = StackConfig.model_validate_json(json.dumps(document))
    pool = build_plan(stack).pools[0]
    return entry["sharing"]["mode"], pool.slots_per_gpu, pool.client_memory_limit_mib


def test_the_snippet_of_isolation_memory_is_an_mps_pool_the_plan_takes() -> None:
    code, snippet = run(
        ["advise", "--gpu", "L20", "--measured-mib", "4621", "--isolation", "memory", "--stack-snippet"]
    )
    assert code == 0
    assert snippet.startswith("# L20, 4621 MiB, ceiling 0.9: whole GPU, MPS x8\n")
    assert (
        "        # 8 MPS clients per GPU, each limited to 46068 // 8 = 5758 MiB (gpushare advise)\n"
        in snippet
    )
    assert _planned(snippet) == ("mps", 8, 5758)


def test_mode_and_plugin_mode_choose_the_snippet() -> None:
    code, snippet = run(
        ["advise", "--gpu", "T4", "--measured-mib", "4401", "--mode", "mps", "--stack-snippet"]
    )
    assert (code, _planned(snippet)) == (0, ("mps", 3, 5120))
    code, snippet = run(
        ["advise", "--gpu", "T4", "--measured-mib", "4401", "--plugin-mode", "helm", "--stack-snippet"]
    )
    assert (code, _planned(snippet)) == (0, ("mps", 3, 5120))  # MPS ties time-slicing on slots, isolates more
    code, snippet = run(
        ["advise", "--gpu", "T4", "--measured-mib", "4401", "--plugin-mode", "daemonsets", "--stack-snippet"]
    )
    assert (code, _planned(snippet)) == (0, ("time-slicing", 3, None))
    # Without the new flags the snippet is the layout table's, as before: a pool every plugin mode runs.
    code, snippet = run(["advise", "--gpu", "T4", "--measured-mib", "4401", "--stack-snippet"])
    assert (code, _planned(snippet)) == (0, ("time-slicing", 3, None))


def test_a_mode_the_plugin_mode_cannot_run_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "--gpu", "L20", "--measured-mib", "4621", "--stack-snippet"]
    code, _ = run([*argv, "--mode", "mps", "--plugin-mode", "daemonsets"])
    assert code == 1
    assert capsys.readouterr().err == (
        "--mode mps, --plugin-mode daemonsets: no pool of L20 for 4621 MiB that gpushare can write "
        "(mps: not under devicePlugin.mode daemonsets; mig: L20 has no MIG)\n"
    )


def test_json_carries_every_mode_option() -> None:
    code, text = run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--json"])
    assert code == 0
    document = json.loads(text)
    assert len(document["options"]) == 2  # the layout options, as before
    assert [
        (m["mode"], m["slots"], m["isolation"], m["memoryLimitMiB"], m["pareto"]) for m in document["modes"]
    ] == [
        ("mps", 8, "memory", 5758, True),
        ("time-slicing", 8, "none", None, False),
        ("qgpu", 7, "kernel", 6144, True),
    ]


# --- qGPU -------------------------------------------------------------------------------------------------


def test_qgpu_offers_the_slice_plan_gives_a_pool() -> None:
    (option,) = sharing_modes.qgpu_options(catalog.gpu("L20"), 4621, 0.9)
    assert (option.slots, option.isolation, option.memory_limit_mib, option.layout) == (
        7,
        "kernel",
        6144,
        None,
    )
    assert option.plugin_modes == ("daemonsets", "helm", "gpu-operator")


@pytest.mark.parametrize(
    ("gpu", "measured", "reason"),
    [
        # 6500 / 0.9 = 7222.2 MiB -> 8 GiB; floor(14 / 8) = 1 slice on a T4: no sharing.
        ("T4", 6500, "fewer than 2 slices fit in the card's allocatable qGPU memory"),
        (
            "A100-40GB",
            4621,
            "no allocatable qGPU memory published for A100-40GB (a pool sets sharing.allocatableGiB)",
        ),
        ("H100-80GB", 4621, "H100-80GB is not on Tencent's qGPU list"),
    ],
)
def test_qgpu_is_not_offered_and_says_why(gpu: str, measured: int, reason: str) -> None:
    assert sharing_modes.qgpu_options(catalog.gpu(gpu), measured, 0.9) == []
    assert dict(compare_modes(catalog.gpu(gpu), measured).unavailable)["qgpu"] == reason


def test_two_t4_slices_end_where_a_slice_needs_eight_gib() -> None:
    # 6451 / 0.9 = 7167.8 MiB -> 7 GiB, floor(14 / 7) = 2; 6452 / 0.9 = 7168.9 MiB -> 8 GiB, 1 slice.
    assert [o.slots for o in sharing_modes.qgpu_options(catalog.gpu("T4"), 6451, 0.9)] == [2]
    assert sharing_modes.qgpu_options(catalog.gpu("T4"), 6452, 0.9) == []


def test_the_qgpu_snippet_is_refused_in_one_line_naming_the_native_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--mode", "qgpu", "--stack-snippet"])
    assert (code, out) == (1, "")
    assert capsys.readouterr().err == (
        "--mode qgpu: no pool of L20 for 4621 MiB that gpushare can write (mig: L20 has no MIG; qgpu: its pool "
        "is a TKE native node pool whose security groups, disks and subnets only your account knows: write it "
        "from docs/qgpu.md and Pulumi.qgpu.yaml)\n"
    )


# --- --fleet: a service that asks for MPS ------------------------------------------------------------------


def test_a_fleet_service_may_ask_for_mps(tmp_path: Path) -> None:
    """nlp, 20 replicas of 4621 MiB: H20 MPS 19 a GPU -> ceil(20/19) = 2 GPUs (L20: ceil(20/8) = 3, T4:
    ceil(20/3) = 7). small, 6 of 4401 MiB: L20 floor(0.9 x 46068 / 4401) = floor(9.42) = 9 clients of
    46068 // 9 = 5118 MiB (0.9 x 5118 = 4606.2 >= 4401) -> 1 GPU, 46068 - 6 x 4401 = 19662 MiB unused; an
    H20 is 1 GPU too but leaves 97871 - 26406 = 71465 MiB."""
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "services:\n"
        "  - {name: nlp, measuredMiB: 4621, replicas: 20, isolation: mps}\n"
        "  - {name: small, measuredMiB: 4401, replicas: 6, isolation: mps}\n"
        "candidates: [L20, T4, H20]\n"
    )
    code, text = run(["advise", "--fleet", str(path), "--json"])
    assert code == 0
    plan = json.loads(text)
    assert [
        (s["service"], s["gpu"], s["gpus"], s["option"]["mode"], s["option"]["slots"], s["wastedMiB"])
        for s in plan["services"]
    ] == [("nlp", "H20", 2, "mps", 19, 2 * 97871 - 20 * 4621), ("small", "L20", 1, "mps", 9, 19662)]
    pools = yaml.safe_load("config:\n" + plan["stackSnippet"])["config"]["gpushare:pools"]
    assert [p["sharing"]["mode"] for p in pools] == ["mps", "mps"]
    # A T4-only fleet cannot serve 4621 MiB with MPS at more than floor(0.9 x 15360 / 4621) = 2 a GPU.
    path.write_text(
        "services:\n  - {name: nlp, measuredMiB: 4621, replicas: 4, isolation: mps}\ncandidates: [T4]\n"
    )
    code, text = run(["advise", "--fleet", str(path), "--json"])
    assert (code, json.loads(text)["services"][0]["gpus"]) == (0, 2)


def test_json_utilization_is_the_share_of_the_gpus_memory_the_slots_take() -> None:
    # L20 46068 MiB, 4621 MiB: 8 slots x 4621 = 36968 MiB, 36968 / 46068 = 0.80246 -> 0.8025 (MPS and
    # time-slicing); qGPU 7 x 4621 = 32347 MiB, 32347 / 46068 = 0.70216 -> 0.7022.
    code, text = run(["advise", "--gpu", "L20", "--measured-mib", "4621", "--json"])
    assert code == 0
    assert [(m["mode"], m["utilization"]) for m in json.loads(text)["modes"]] == [
        ("mps", 0.8025),
        ("time-slicing", 0.8025),
        ("qgpu", 0.7022),
    ]
