"""Argument types and subcommand set-up shared by the CLI's command modules: values checked where argparse
parses them, so a bad one is refused naming its flag (exit 2), with the nearest catalog key."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpushare import catalog
from gpushare.errors import EXIT_CODES_HELP, GpushareError


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
