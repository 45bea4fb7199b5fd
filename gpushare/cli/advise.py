"""`python -m gpushare advise`: the layout table, its JSON, a pool snippet, and the fleet plan.

The numbers come from `gpushare.advise.layout_options` and `gpushare.advise.fleet`; this module only parses arguments
and prints.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from gpushare import catalog
from gpushare.advise.fleet import ServicePlan, load_fleet, plan_fleet
from gpushare.advise.layout_options import AdviceReport, LayoutOption, advise
from gpushare.advise.pool_snippet import PoolSnippet, render_pools
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
        type=int,
        metavar="N",
        help="with --stack-snippet: recommend for N isolation domains (default: the most slots)",
    )
    p.add_argument("--pool-name", help="with --stack-snippet: the pool's name (default: the GPU model)")
    p.add_argument("--instance-type", help="with --stack-snippet: the Tencent instance type")
    p.add_argument("--gpus-per-node", type=int, default=1, help="with --stack-snippet: GPUs per node (1)")
    p.add_argument("--fleet", metavar="FILE", help="a YAML file of services and candidate GPUs: plan a fleet")
    p.set_defaults(run=cmd_advise, advise_parser=p)


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
    snippet_only = [
        flag
        for flag, value in (
            ("--isolation", args.isolation),
            ("--pool-name", args.pool_name),
            ("--instance-type", args.instance_type),
        )
        if value is not None
    ]
    if snippet_only and not args.stack_snippet:
        _usage(args, f"{', '.join(snippet_only)} only apply with --stack-snippet")
    report = advise(catalog.gpu(args.gpu), args.measured_mib, _ceiling(args))
    if args.stack_snippet:
        out.write(_snippet(report, args))
    elif args.json:
        json.dump(report.as_json(), out, indent=2)
        out.write("\n")
    else:
        out.write(advice_table(report))
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
        found = report.recommended(args.isolation)
        if found is None:
            levels = ", ".join(str(level) for level in report.recommendations())
            raise GpushareError(
                f"--isolation {args.isolation}: no layout of {report.gpu.key} has that many "
                f"isolation domains for {report.measured_mib} MiB (levels: {levels})"
            )
        option = found
    if args.gpus_per_node <= 0:
        _usage(args, f"--gpus-per-node must be > 0, got {args.gpus_per_node}")
    instance_type = args.instance_type
    if instance_type is None:
        # The catalog's smallest node for the GPU (the first listed of the fewest GPUs): the type the
        # repository's own stacks and examples use (staging and examples/fleet.yaml: PNV6.16XLARGE640).
        known = [t for t in catalog.INSTANCE_TYPES.values() if t.gpu == report.gpu.key]
        instance_type = min(known, key=lambda t: t.gpus_per_node).name if known else None
    snippet = PoolSnippet(
        name=args.pool_name or report.gpu.key.lower(),
        option=option,
        instance_type=instance_type,
        gpus_per_node=args.gpus_per_node,
        nodes=1,
    )
    return (
        f"# {report.gpu.key}, {report.measured_mib} MiB, ceiling {report.ceiling:g}: {option.describe()}\n"
        + (render_pools([snippet]))
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
