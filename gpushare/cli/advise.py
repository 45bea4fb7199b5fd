"""`python -m gpushare advise`: the layout table, its JSON, a pool snippet, and the fleet plan.

The numbers come from `gpushare.advise.layout_options` and `gpushare.advise.fleet`; this module only parses arguments
and prints.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final, TextIO

from gpushare import catalog
from gpushare.advise.fleet import ServicePlan, load_fleet, plan_fleet
from gpushare.advise.layout_options import AdviceReport, LayoutOption, advise
from gpushare.advise.pool_snippet import PoolSnippet, render_pools
from gpushare.advise.sharing_modes import (
    ISOLATION_LEVELS,
    MODE_PROVIDERS,
    PLUGIN_MODES,
    Isolation,
    ModeOption,
    ModesReport,
    compare_modes,
)
from gpushare.cli.arguments import add_command, gpu_model, positive_mib, utilization_ceiling
from gpushare.errors import GpushareError
from gpushare.tuning import DEFAULT_CEILING


def add_parser(sub: Any) -> None:
    """Register `advise` on the CLI's subparsers."""
    p = add_command(
        sub,
        "advise",
        "the best MIG / time-slicing layout for a measured process, or a fleet plan",
        "Every layout that fits the GPU (whole GPU time-sliced or exclusive, every MIG multiset the "
        "geometry allows), its slots by the tuning rule, the Pareto front of slots against isolation "
        "domains, and the recommendation for each isolation level; or, with --fleet, the pools that serve "
        "a list of services with the fewest GPUs.",
    )
    p.add_argument("--gpu", type=gpu_model, help="GPU model key from the catalog")
    p.add_argument(
        "--measured-mib", type=positive_mib, metavar="MIB", help="largest process's GPU memory in MiB"
    )
    p.add_argument(
        "--ceiling",
        type=utilization_ceiling,
        default=None,
        metavar="C",
        help=f"the tuning rule's ceiling, 0 < C <= 1 (default: {DEFAULT_CEILING}, or the fleet file's)",
    )
    p.add_argument("--json", action="store_true", help="every option, not only the front, as JSON")
    p.add_argument(
        "--stack-snippet",
        action="store_true",
        help="print the gpushare:pools[] entry for the recommended layout",
    )
    p.add_argument(
        "--isolation",
        type=_isolation,
        metavar="LEVEL|N",
        help=f"a level ({' < '.join(ISOLATION_LEVELS)}): only the sharing modes with at least that isolation; "
        "or a number N, with --stack-snippet: the best MIG/time-slicing layout with N isolation domains",
    )
    p.add_argument(
        "--plugin-mode",
        choices=PLUGIN_MODES,
        help="only the sharing modes this devicePlugin.mode runs (daemonsets: no MPS); with --stack-snippet, "
        "the best of them",
    )
    p.add_argument(
        "--mode",
        choices=[name for name, _ in MODE_PROVIDERS],
        help="with --stack-snippet: the best option of this sharing mode",
    )
    p.add_argument("--pool-name", help="with --stack-snippet: the pool's name (default: the GPU model)")
    p.add_argument("--instance-type", help="with --stack-snippet: the Tencent instance type")
    p.add_argument("--gpus-per-node", type=int, default=1, help="with --stack-snippet: GPUs per node (1)")
    p.add_argument("--fleet", metavar="FILE", help="a YAML file of services and candidate GPUs: plan a fleet")
    p.set_defaults(run=cmd_advise, advise_parser=p)


def _isolation(value: str) -> int | str:
    """`--isolation`: a level name, or a whole number of isolation domains (the layout table's)."""
    if value in ISOLATION_LEVELS:
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither an isolation level ({', '.join(ISOLATION_LEVELS)}) nor a number of "
            "isolation domains"
        ) from None


def _level(args: argparse.Namespace) -> Isolation:
    level = args.isolation if isinstance(args.isolation, str) else "none"
    return next(known for known in ISOLATION_LEVELS if known == level)  # `_isolation` let only these through


def _across_modes(args: argparse.Namespace) -> bool:
    """The new flags (a level, a plugin mode, a sharing mode) ask for the modes, not the layouts alone."""
    return isinstance(args.isolation, str) or args.plugin_mode is not None or args.mode is not None


def cmd_advise(args: argparse.Namespace, out: TextIO) -> int:
    if args.fleet:
        if args.gpu or args.measured_mib is not None or args.stack_snippet:
            _usage(
                args,
                "--fleet takes the GPUs and measurements from the file: drop --gpu, --measured-mib "
                "and --stack-snippet",
            )
        return _fleet(args, out)
    if not args.gpu or args.measured_mib is None:
        _usage(args, "give --gpu and --measured-mib (or --fleet FILE)")
    if isinstance(args.isolation, int) and _across_modes(args):
        _usage(args, "--isolation N (MIG isolation domains) does not go with --plugin-mode or --mode")
    snippet_only = [
        flag
        for flag, value in (
            ("--isolation", args.isolation if isinstance(args.isolation, int) else None),
            ("--mode", args.mode),
            ("--pool-name", args.pool_name),
            ("--instance-type", args.instance_type),
        )
        if value is not None
    ]
    if snippet_only and not args.stack_snippet:
        _usage(args, f"{', '.join(snippet_only)} only apply with --stack-snippet")
    gpu = catalog.gpu(args.gpu)
    report = advise(gpu, args.measured_mib, _ceiling(args))
    modes = compare_modes(
        gpu, args.measured_mib, _ceiling(args), plugin_mode=args.plugin_mode, at_least=_level(args)
    )
    if args.stack_snippet:
        out.write(_mode_snippet(modes, args) if _across_modes(args) else _snippet(report, args))
    elif args.json:
        json.dump({**report.as_json(), "modes": modes.as_json()}, out, indent=2)
        out.write("\n")
    elif _across_modes(args):
        out.write(modes_table(modes))
    else:
        out.write(advice_table(report) + "\n" + modes_table(modes))
    return 0


def _usage(args: argparse.Namespace, message: str) -> None:
    """Arguments that do not go together: argparse's usage line and exit 2, like its own errors."""
    parser: argparse.ArgumentParser = args.advise_parser
    parser.error(message)


def _ceiling(args: argparse.Namespace) -> float:
    return DEFAULT_CEILING if args.ceiling is None else float(args.ceiling)


def _snippet(report: AdviceReport, args: argparse.Namespace) -> str:
    if args.isolation is None:
        option = report.options[0]
    else:
        assert isinstance(args.isolation, int)  # a level goes to _mode_snippet
        found = report.recommended(args.isolation)
        if found is None:
            levels = ", ".join(str(level) for level in report.recommendations())
            raise GpushareError(
                f"--isolation {args.isolation}: no layout of {report.gpu.key} has that many "
                f"isolation domains for {report.measured_mib} MiB (levels: {levels})"
            )
        option = found
    return _pool_snippet(report.gpu, report.measured_mib, report.ceiling, option, args)


# Modes advise compares but writes no pool for, and why.
_NO_SNIPPET: Final = {
    "qgpu": "its pool is a TKE native node pool whose security groups, disks and subnets only your account "
    "knows: write it from docs/qgpu.md and Pulumi.qgpu.yaml",
}


def _mode_snippet(modes: ModesReport, args: argparse.Namespace) -> str:
    """The pool of the best option among the modes asked for (`--mode`, `--plugin-mode`, `--isolation LEVEL`)."""
    wanted = [o for o in modes.options if args.mode is None or o.mode == args.mode]
    chosen = next((o for o in wanted if o.layout is not None), None)
    if chosen is None or chosen.layout is None:
        asked = ", ".join(
            f"{flag} {value}"
            for flag, value in (
                ("--mode", args.mode),
                ("--plugin-mode", args.plugin_mode),
                ("--isolation", args.isolation),
            )
            if value is not None
        )
        unwritable = [(o.mode, _NO_SNIPPET[o.mode]) for o in wanted if o.mode in _NO_SNIPPET][:1]
        why = "; ".join(f"{name}: {reason}" for name, reason in [*modes.unavailable, *unwritable])
        raise GpushareError(
            f"{asked}: no pool of {modes.gpu.key} for {modes.measured_mib} MiB that gpushare can write ({why})"
        )
    return _pool_snippet(modes.gpu, modes.measured_mib, modes.ceiling, chosen.layout, args)


def _pool_snippet(
    gpu: catalog.GpuModel, measured_mib: int, ceiling: float, option: LayoutOption, args: argparse.Namespace
) -> str:
    if args.gpus_per_node <= 0:
        _usage(args, f"--gpus-per-node must be > 0, got {args.gpus_per_node}")
    instance_type = args.instance_type
    if instance_type is None:
        # The catalog's smallest node for the GPU (the first listed of the fewest GPUs): the type the
        # repository's own stacks and examples use (staging and examples/fleet.yaml: PNV6.16XLARGE640).
        known = [t for t in catalog.INSTANCE_TYPES.values() if t.gpu == gpu.key]
        instance_type = min(known, key=lambda t: t.gpus_per_node).name if known else None
    snippet = PoolSnippet(
        name=args.pool_name or gpu.key.lower(),
        option=option,
        instance_type=instance_type,
        gpus_per_node=args.gpus_per_node,
        nodes=1,
    )
    return f"# {gpu.key}, {measured_mib} MiB, ceiling {ceiling:g}: {option.describe()}\n" + (
        render_pools([snippet])
    )


# --- the table --------------------------------------------------------------------------------------------


def _row(option: LayoutOption) -> list[str]:
    compute = option.compute_slices_per_slot
    return [
        str(option.slots),
        str(option.isolation_domains),
        option.describe(),
        f"{option.utilization * 100:.1f} %",
        f"{int(option.headroom_mib_per_slot)} MiB",
        "-" if compute is None else f"{compute:.2f}",
    ]


def _table(header: list[str], rows: list[list[str]], left: set[int]) -> list[str]:
    """Columns padded to their widest cell; the columns in `left` left-aligned, the others right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [line(header).rstrip(), *(line(r).rstrip() for r in rows)]


_HEADER = ["slots", "isolation", "layout", "memory used", "headroom/slot", "compute slices/slot"]


def advice_table(report: AdviceReport) -> str:
    """The Pareto front, best first, then the best layout at each isolation level."""
    gpu = report.gpu
    mig = f"{sum(o.mode == 'mig' for o in report.options)} MIG layouts"
    idle = (
        f" ({report.idle_layouts} more leave an instance too small for the process)"
        if report.idle_layouts
        else ""
    )
    lines = [
        f"{gpu.key} ({gpu.memory_mib} MiB), largest process {report.measured_mib} MiB, ceiling {report.ceiling:g}: "
        f"{len(report.options)} options, {mig if gpu.mig_capable else 'no MIG'}{idle}",
        "",
        "Pareto front (no other option has as many slots and as many isolation domains); "
        "* = recommended at its isolation level:",
    ]
    recommended = set(report.recommendations().values())
    front = _table(
        ["", *_HEADER], [["*" if o in recommended else "", *_row(o)] for o in report.pareto], left={0, 3}
    )
    lines += ["  " + row for row in front]
    if gpu.mig_capable:
        lines += ["", "Best layout at each isolation level:"]
        levels = _table(_HEADER, [_row(o) for o in report.recommendations().values()], left={2})
        lines += ["  " + row for row in levels]
    lines += [
        "",
        "Slots: floor(ceiling x memory / measured) per GPU or MIG instance (1 when that is < 2). "
        "--json lists every option; --stack-snippet [--isolation N] prints the pool entry.",
    ]
    return "\n".join(lines) + "\n"


# --- across sharing modes ---------------------------------------------------------------------------------


def _isolation_cell(option: ModeOption) -> str:
    return f"{option.isolation} x{option.isolation_domains}" if option.mode == "mig" else option.isolation


_LIMIT_UNIT: Final = {"mig": "instance", "qgpu": "slice"}


def _mode_row(option: ModeOption) -> list[str]:
    limit = option.memory_limit_mib
    return [
        str(option.slots),
        _isolation_cell(option),
        option.mode,
        option.description,
        "-" if limit is None else f"{limit} MiB/{_LIMIT_UNIT.get(option.mode, 'client')}",
        ", ".join(option.plugin_modes),
    ]


_MODE_HEADER = ["slots", "isolation", "mode", "option", "memory limit", "devicePlugin.mode"]


def modes_table(modes: ModesReport) -> str:
    """Each mode's best option, the Pareto front across modes, what each mode needs, what isolation means."""
    where = "any devicePlugin.mode" if modes.plugin_mode is None else f"devicePlugin.mode {modes.plugin_mode}"
    floor = "" if modes.at_least == "none" else f", isolation at least {modes.at_least}"
    lines = [
        f"Across sharing modes ({modes.gpu.key}, largest process {modes.measured_mib} MiB, ceiling "
        f"{modes.ceiling:g}; {where}{floor}):",
    ]
    if modes.options:
        lines += ["", "Best option of each mode:"]
        rows = [_mode_row(o) for o in modes.best_per_mode()]
        lines += ["  " + row for row in _table(_MODE_HEADER, rows, left={1, 2, 3, 5})]
        lines += ["", "Pareto front (no other option has as many slots and as much isolation):"]
        rows = [_mode_row(o) for o in modes.pareto]
        lines += ["  " + row for row in _table(_MODE_HEADER, rows, left={1, 2, 3, 5})]
        lines += ["", "Requires:"]
        for option in modes.best_per_mode():
            lines.append(f"  {option.mode}: {'; '.join(option.requires)}")
    else:
        lines += ["", "No option."]
    if modes.unavailable:
        lines += ["", "Not offered: " + "; ".join(f"{name} ({reason})" for name, reason in modes.unavailable)]
    lines += [
        "",
        f"Isolation, weakest first: {' < '.join(ISOLATION_LEVELS)}; among MIG layouts, more instances isolate "
        "more. --isolation LEVEL keeps the modes with at least LEVEL; --stack-snippet with --isolation LEVEL, "
        "--plugin-mode or --mode prints the best of them as a pool entry.",
    ]
    return "\n".join(lines) + "\n"


# --- the fleet ----------------------------------------------------------------------------------------------


def _fleet(args: argparse.Namespace, out: TextIO) -> int:
    path = Path(args.fleet)
    fleet = load_fleet(path)
    if args.ceiling is not None:
        fleet = fleet.model_copy(update={"ceiling": args.ceiling})
    plans = plan_fleet(fleet, str(path))
    snippet = render_pools([p.snippet() for p in plans])
    total = sum(p.gpus for p in plans)
    if args.json:
        document = {
            "ceiling": fleet.ceiling,
            "services": [p.as_json() for p in plans],
            "totalGpus": total,
            "stackSnippet": snippet,
        }
        json.dump(document, out, indent=2)
        out.write("\n")
        return 0
    out.write(fleet_table(plans, fleet.ceiling, total))
    out.write("\nStack snippet (paste under `config:` of a Pulumi.<stack>.yaml):\n\n")
    out.write(snippet)
    return 0


def fleet_table(plans: tuple[ServicePlan, ...], ceiling: float, total: int) -> str:
    header = ["service", "replicas", "pool", "layout", "slots/GPU", "nodes", "GPUs", "unused MiB"]
    rows = [
        [
            p.service.name,
            str(p.service.replicas),
            p.candidate.describe(),
            p.option.describe(),
            str(p.option.slots),
            str(p.nodes),
            str(p.gpus),
            str(p.wasted_mib),
        ]
        for p in plans
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()
        for cells in [header, *rows]
    ]
    return f"Fleet plan (ceiling {ceiling:g}; fewest GPUs per service, ties: least memory unused):\n\n" + (
        "\n".join(lines) + f"\n\nTotal: {total} GPU(s)\n"
    )
