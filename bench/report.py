"""The terminal table and the scaling plot, both drawn from the results document (`bench/results.json`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from bench.worker import PHASE_MANIFESTS, PHASE_PACK, PHASE_PROGRAM

PACK_PHASE: Final = PHASE_PACK
NO_PLOT: Final = "matplotlib is not installed (pip install -r bench/requirements.txt)"
RENDER_PHASES: Final = (
    ("validate stack file", "validate"),
    ("load stack config", "config"),
    (PHASE_PROGRAM, "program"),
    (PHASE_MANIFESTS, "schemas"),
    ("YAML output", "YAML"),
    ("write files", "write"),
)
SERIES_STYLE: Final = {
    "render": ("render", "tab:blue", "-"),
    "floor": ("floor (SDK only)", "tab:gray", "-"),
    "check": ("check", "tab:red", "-"),
    "check-floor": ("check, empty pack", "tab:red", ":"),
}


def _num(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def _median(series: Mapping[str, Any], key: str) -> float | None:
    value = series["median"].get(key)
    return None if value is None else float(value)


def _phase(series: Mapping[str, Any], name: str) -> float | None:
    value = series["median"]["phases"].get(name)
    return None if value is None else float(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _rows(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> list[str]:
    """Aligned columns: the first `left` ones flush left, the rest (numbers) flush right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = []
    for row in [header, *rows]:
        cells = [
            cell.ljust(width) if index < left else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _mib(series: Mapping[str, Any]) -> str:
    peak, added = _median(series, "rssPeakMiB"), _median(series, "rssAddedMiB")
    return "-" if peak is None or added is None else f"{peak:.0f} (+{added:.0f})"


def table(data: Mapping[str, Any]) -> str:
    env = data["environment"]
    lines = [
        f"gpushare benchmark - {env['date']}, revision {env['revision']}",
        f"Python {env['python']}, {env['cpus']} CPUs, {env['memoryGiB']} GiB; pulumi {env['packages']['pulumi']}, "
        f"pulumi-kubernetes {env['packages']['pulumi_kubernetes']}, pulumi-policy {env['packages']['pulumi_policy']}",
        "Each sample runs in a fresh process with the SDK imports done before the clock; times are medians.",
        "Memory: peak RSS of the sample process in MiB (+ what the operation added to it).",
    ]
    if data["real"]:
        lines += _offline_lines(data)
    lines += live_lines(data)
    suite = data["testSuite"]
    if suite is not None:
        lines += [
            "",
            f"Test suite: `{suite['command']}` {suite['seconds']:.1f} s (exit status {suite['returncode']})",
        ]
    lines += ["", "Targets" if data["targets"] else "Targets: none (they are on render, check and make test)"]
    for target in data["targets"]:
        mark = {True: "holds", False: "MISSED", None: "n/a"}[target["holds"]]
        lines.append(
            f"  [{mark:>6}] {target['name']}: {_num(target['value'], 2)} (limit {target['limit']:g}) - {target['detail']}"
        )
    return "\n".join(lines)


def _offline_lines(data: Mapping[str, Any]) -> list[str]:
    """Render and check against their floors, on the real stacks and the synthetic ones."""
    options = data["options"]
    lines = [
        "",
        f"Render against the floor (same resources, logic-free program, same mocks), {options['reps']} repetitions",
    ]
    rows = []
    for stack, per in data["real"].items():
        ratios = per["ratios"]
        rows.append(
            [
                stack,
                str(per["render"]["resources"] or "-"),
                _num(_median(per["render"], "seconds"), 3),
                _num(_median(per["floor"], "seconds"), 3),
                _num(ratios["renderTime"], 1, "x"),
                _mib(per["render"]),
                _mib(per["floor"]),
                _num(ratios["renderPeakRss"], 2, "x"),
            ]
        )
    lines += _rows(
        ["stack", "resources", "render s", "floor s", "time", "render MiB", "floor MiB", "peak RSS"], rows
    )
    lines += ["", "Where render's time goes (s, medians)"]
    rows = []
    for stack, per in data["real"].items():
        rows.append(_render_breakdown(stack, per["render"], per["floor"]))
    for mode, scaled in data["scaling"].items():
        for pools, entry in scaled["sizes"].items():
            rows.append(_render_breakdown(f"{mode} {pools}", entry["render"], entry["floor"]))
    lines += _rows(
        [
            "stack",
            "total",
            *(short for _, short in RENDER_PHASES),
            "SDK floor (within program)",
            "GC (within all)",
        ],
        rows,
    )
    lines += ["", "Check against the empty pack (same resources; pack = start, RPCs, stop)"]
    rows = []
    for stack, per in data["real"].items():
        check, floor = per["check"], per["check-floor"]
        diagnostics = (check["samples"][0].get("diagnostics") or {}) if check["samples"] else {}
        rows.append(
            [
                stack,
                _num(_median(check, "seconds"), 3),
                _num(_median(floor, "seconds"), 3),
                _num(per["ratios"]["checkTime"], 2, "x"),
                _num(_phase(check, PACK_PHASE), 3),
                _num(_phase(floor, PACK_PHASE), 3),
                _num(per["ratios"]["checkPackPhase"], 2, "x"),
                f"{_num(_median(check, 'childRssPeakMiB'), 0)}/{_num(_median(floor, 'childRssPeakMiB'), 0)}",
                f"{diagnostics.get('mandatory', '-')}/{diagnostics.get('advisory', '-')}",
            ]
        )
    lines += _rows(
        [
            "stack",
            "check s",
            "empty s",
            "ratio",
            "pack s",
            "empty pack s",
            "pack ratio",
            "pack MiB",
            "mand/adv",
        ],
        rows,
    )
    lines += _scaling_lines(data)
    limit = data["configLimit"]
    if limit["maxPools"]:
        lines += [
            "",
            f"Config size limit: PULUMI_CONFIG must fit {limit['envStringLimitBytes'] // 1024} KiB (one environment "
            f"string): at most {limit['maxPools'].get('terse', '-')} pools like the synthetic ones, "
            f"{limit['maxPools'].get('withProvenanceStrings', '-')} with prod-style `source` strings.",
        ]
    return lines


def _seconds(entry: Mapping[str, Any], kind: str, key: str = "seconds") -> float | None:
    value = entry[kind]["median"].get(key)
    return None if value is None else float(value)


def _growth_line(what: str, growth: Mapping[str, Mapping[str, float | None]], unit: str) -> list[str]:
    pairs = [
        f"{kind} {pair}: {_num(value, 1, 'x')}"
        for kind, by_pair in growth.items()
        for pair, value in by_pair.items()
    ]
    return [f"  Growth of {what} (10 = linear for 10x the {unit}): {', '.join(pairs)}"] if pairs else []


def live_lines(data: Mapping[str, Any]) -> list[str]:
    """`verify` against cluster size and `advise --fleet` against fleet size (bench/live.py), when measured."""
    lines: list[str] = []
    checked = data.get("verify")
    if checked:
        lines += [
            "",
            f"verify --stack {checked['stack']} against listing the same objects with the kubernetes client "
            f"(kubectl get nodes,pods,daemonsets -A -o json), whole processes, {checked['repetitions']} "
            "repetition(s)",
        ]
        rows = []
        for gpu_nodes, entry in checked["sizes"].items():
            shape = entry["shape"]
            rows.append(
                [
                    gpu_nodes,
                    str(shape["nodes"]),
                    str(shape["pods"]),
                    str(shape["daemonsets"]),
                    _num(_seconds(entry, "verify")),
                    _num(_seconds(entry, "list")),
                    _num(entry["ratio"], 2, "x"),
                    _num(_seconds(entry, "verify", "cpuSeconds")),
                    _num(_seconds(entry, "list", "cpuSeconds")),
                ]
            )
        lines += _rows(
            [
                "GPU nodes",
                "nodes",
                "pods",
                "DaemonSets",
                "verify s",
                "list s",
                "ratio",
                "verify CPU s",
                "list CPU s",
            ],
            rows,
        )
        lines += _growth_line("wall time", checked["growth"], "GPU nodes")
    planned = data.get("fleet")
    if planned:
        lines += [
            "",
            f"advise --fleet against one `advise` answer per service and candidate ({planned['candidates']} "
            f"candidates) in one process, whole processes, {planned['repetitions']} repetition(s)",
        ]
        rows = [
            [
                services,
                str(entry["answers"]),
                _num(_seconds(entry, "fleet")),
                _num(_seconds(entry, "singles")),
                _num(entry["ratio"], 2, "x"),
                _num(_seconds(entry, "fleet", "cpuSeconds")),
                _num(_seconds(entry, "singles", "cpuSeconds")),
            ]
            for services, entry in planned["sizes"].items()
        ]
        lines += _rows(
            ["services", "answers", "fleet s", "singles s", "ratio", "fleet CPU s", "singles CPU s"], rows
        )
        lines += _growth_line("wall time", planned["growth"], "services")
    for key in ("verify", "fleet"):
        for size, entry in (data.get(key) or {}).get("sizes", {}).items():
            for kind, series in entry.items():
                if isinstance(series, Mapping) and series.get("errors"):
                    lines.append(
                        f"  ! {key} {size} {kind} failed: {series['errors'][0].strip().splitlines()[-1]}"
                    )
    return lines


def _render_breakdown(label: str, render: Mapping[str, Any], floor: Mapping[str, Any]) -> list[str]:
    return [
        label,
        _num(_median(render, "seconds"), 2),
        *(_num(_phase(render, name), 2) for name, _ in RENDER_PHASES),
        _num(_median(floor, "seconds"), 2),
        _num(_median(render, "gcSeconds"), 2),
    ]


def _scaling_lines(data: Mapping[str, Any]) -> list[str]:
    if not data["scaling"]:
        return []
    reps = ", ".join(f"{pools}: {count}" for pools, count in data["options"]["scalingReps"].items())
    lines = ["", f"Scaling with the number of GPU pools: wall time, s (repetitions per size - {reps})"]
    times = []
    memory = []
    for mode, scaled in data["scaling"].items():
        for pools, entry in scaled["sizes"].items():
            render, floor, check, empty = (entry[kind] for kind in SERIES_STYLE)
            times.append(
                [
                    mode,
                    pools,
                    str(render["resources"] or "-"),
                    _num(_median(render, "seconds")),
                    _num(_median(floor, "seconds")),
                    _num(_ratio(_median(render, "seconds"), _median(floor, "seconds")), 1, "x"),
                    _num(_median(check, "seconds")),
                    _num(_median(empty, "seconds")),
                    _num(_ratio(_median(check, "seconds"), _median(empty, "seconds")), 2, "x"),
                    _num(_phase(check, PACK_PHASE)),
                    _num(_phase(empty, PACK_PHASE)),
                ]
            )
            memory.append(
                [
                    mode,
                    pools,
                    _mib(render),
                    _mib(floor),
                    _num(_ratio(_median(render, "rssPeakMiB"), _median(floor, "rssPeakMiB")), 2, "x"),
                    _mib(check),
                    _num(_median(check, "childRssPeakMiB"), 0),
                    _num(_median(empty, "childRssPeakMiB"), 0),
                    _num((entry["configEnvBytes"] or 0) / 1024, 0),
                ]
            )
    lines += _rows(
        [
            "mode",
            "pools",
            "resources",
            "render",
            "floor",
            "ratio",
            "check",
            "empty pack",
            "ratio",
            "pack",
            "empty pack",
        ],
        times,
    )
    lines += ["", "Scaling: memory, MiB (peak RSS, + added by the operation; packs: their own process)"]
    lines += _rows(
        ["mode", "pools", "render", "floor", "ratio", "check", "pack", "empty pack", "config KiB"], memory
    )
    lines += [
        "",
        "Growth of wall time (10 = linear for 50 -> 500 pools) and log-log exponents between sizes (1 = linear)",
    ]
    rows = []
    for mode, scaled in data["scaling"].items():
        for kind, by_pair in scaled["growth"].items():
            exponents = " ".join(
                f"{e['from']}->{e['to']}: {e['exponent']:.2f}" for e in scaled["exponents"].get(kind, [])
            )
            pairs = " ".join(f"{pair}: {_num(value, 1, 'x')}" for pair, value in by_pair.items())
            rows.append([mode, kind, pairs or "-", exponents or "-"])
    lines += _rows(["mode", "kind", "growth", "exponents"], rows, left=4)
    for mode, scaled in data["scaling"].items():
        for pools, entry in scaled["sizes"].items():
            for kind in SERIES_STYLE:
                for error in entry[kind]["errors"][:1]:
                    lines.append(f"  ! {mode} {pools} {kind} failed: {error.strip().splitlines()[-1]}")
    return lines


def plot(data: Mapping[str, Any], path: Path) -> bool:
    """Time against pools, one panel per plugin mode; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    scaling = data["scaling"]
    if not scaling:
        return False
    figure, axes = plt.subplots(
        1, len(scaling), figsize=(6.4 * len(scaling), 4.8), squeeze=False, sharey=True
    )
    for axis, (mode, scaled) in zip(axes[0], scaling.items(), strict=True):
        sizes = scaled["sizes"]
        pools = [int(p) for p in sizes]
        for kind, (label, color, style) in SERIES_STYLE.items():
            points = [(p, _median(sizes[str(p)][kind], "seconds")) for p in pools]
            known = [(p, t) for p, t in points if t is not None]
            if known:
                axis.plot(*zip(*known, strict=True), style, marker="o", color=color, label=label)
        base = next((p for p in pools if p >= 50), None)
        render_base = _median(sizes[str(base)]["render"], "seconds") if base is not None else None
        if base is not None and render_base and max(pools) > base:
            axis.plot(
                [base, max(pools)],
                [render_base, render_base * max(pools) / base],
                "--",
                color="tab:blue",
                alpha=0.4,
                label=f"render, linear from {base} pools",
            )
        axis.set_title(f"device plugin: {mode}")
        axis.set_xlabel("GPU pools in the stack")
        axis.grid(True, alpha=0.3)
        axis.legend(loc="upper left", fontsize="small")
    axes[0][0].set_ylabel("wall time, s (median)")
    env = data["environment"]
    figure.suptitle(
        f"gpushare render and check against the Pulumi SDK floor ({env['date'][:10]}, {env['cpus']} CPUs)"
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
