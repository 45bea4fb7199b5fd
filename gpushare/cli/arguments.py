"""Argument types and subcommand set-up shared by the CLI's command modules: values checked where argparse
parses them, so a bad one is refused naming its flag (exit 2), with the nearest catalog key."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpushare import catalog
from gpushare.errors import EXIT_CODES_HELP, GpushareError
from gpushare.offline.chart_sources import ChartSources
from gpushare.verify.memory_exporters import parse_named
from gpushare.verify.memory_series import DEFAULT_TKE_GPU_LABEL
from gpushare.verify.memory_source import MemorySource


def gpu_model(value: str) -> str:
    """`--gpu`: a catalog key, refused by argparse (naming the flag) with the nearest key otherwise."""
    try:
        return catalog.gpu(value).key
    except GpushareError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def positive_mib(value: str) -> int:
    """`--measured-mib`: a whole number of MiB above 0."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of MiB") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 MiB, got {number}")
    return number


def utilization_ceiling(value: str) -> float:
    """`--ceiling`: the tuning rule's share of GPU memory, 0 < C <= 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(number):  # float() reads "nan" and "inf"
        raise argparse.ArgumentTypeError(f"{value!r} is not a number")
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return number


PROJECT_DIR_HELP = (
    "the Pulumi project directory (default: the nearest one holding a Pulumi.yaml, from here up)"
)


def stack_arguments(parser: argparse.ArgumentParser) -> None:
    """`--stack NAME` and `--dir DIR`, for every command that reads a stack file."""
    parser.add_argument(
        "--stack", required=True, metavar="NAME", help="the stack: Pulumi.NAME.yaml in the project directory"
    )
    parser.add_argument("--dir", metavar="DIR", help=PROJECT_DIR_HELP)


def cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """`--kubeconfig` and `--context`, for every command that reads the live cluster."""
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="default: $KUBECONFIG, ~/.kube/config, in-cluster"
    )
    parser.add_argument(
        "--context", metavar="NAME", help="a context of the kubeconfig (default: its current one)"
    )


def add_command(sub: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subcommand with its one-line summary (top-level help), description and the exit codes."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def chart_arguments(parser: argparse.ArgumentParser) -> None:
    """Where render and check find the Helm charts of the stack's releases (gpushare/offline/chart_sources.py)."""
    parser.add_argument(
        "--chart-dir",
        action="append",
        metavar="DIR",
        help="pinned Helm charts, searched first: a chart directory or a directory of them (repeatable; "
        "then $GPUSHARE_CHART_DIRS, then the cache $XDG_CACHE_HOME/gpushare/charts, then the repository)",
    )
    parser.add_argument(
        "--no-download",
        action="store_true",
        help="never fetch a chart from its repository (also GPUSHARE_CHART_DOWNLOAD=0)",
    )


def chart_sources_from(args: argparse.Namespace) -> ChartSources:
    """From the `--chart-dir` and `--no-download` options of `render` and `check` (`chart_arguments`)."""
    return ChartSources.from_environment(args.chart_dir or (), download=not args.no_download)


def add_source_arguments(parser: argparse.ArgumentParser, *, window: bool = False) -> None:
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="read GPU memory from this Prometheus HTTP API instead of the exporter pods (e.g. through the "
        "API server: https://API/api/v1/namespaces/monitoring/services/prometheus-k8s:9090/proxy)",
    )
    parser.add_argument(
        "--exporter",
        action="append",
        metavar="NAMESPACE/NAME[:PORT]",
        help="a GPU memory exporter DaemonSet (or pod) to scrape besides the well-known ones (repeatable)",
    )
    parser.add_argument(
        "--tke-gpu-label",
        default=DEFAULT_TKE_GPU_LABEL,
        metavar="LABEL",
        help="the label telling GPUs apart on TKE's nvidia-gpu-exporter page (UNVERIFIED: its labels are "
        f"not documented; default {DEFAULT_TKE_GPU_LABEL})",
    )
    if window:
        parser.add_argument(
            "--window",
            metavar="DURATION",
            help="with --prometheus: the peak over this window (a Prometheus duration such as 7d)",
        )


def source_from_args(args: argparse.Namespace) -> MemorySource:
    """The `MemorySource` the options name; `GpushareError` for a malformed one."""
    return MemorySource(
        prometheus=args.prometheus,
        named=tuple(parse_named(value) for value in args.exporter or ()),
        tke_gpu_label=args.tke_gpu_label,
        window=getattr(args, "window", None),
    )
