"""`python -m gpushare check --stack NAME`: render the stack and run the policy pack over it
(gpushare/offline/check.py), then print the pack's report; mandatory violations exit 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gpushare.cli.arguments import add_command, chart_arguments, chart_sources_from, stack_arguments
from gpushare.cli.offline_run import refuse_bad_stack_early, run_offline
from gpushare.errors import UnreadableInputError

if TYPE_CHECKING:
    from gpushare.offline.check import CheckResult


def _pack_dir(args: argparse.Namespace) -> Path | None:
    """`--policy-pack DIR`, checked before anything renders: a pack directory holds PulumiPolicy.yaml."""
    if args.policy_pack is None:
        return None
    pack = Path(args.policy_pack)
    if not (pack / "PulumiPolicy.yaml").is_file():
        what = "no such directory" if not pack.is_dir() else "no PulumiPolicy.yaml in it"
        raise UnreadableInputError(
            f"--policy-pack {args.policy_pack}: {what} (a policy pack's directory holds PulumiPolicy.yaml)"
        )
    return pack


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    _pack_dir(args)
    refuse_bad_stack_early(args)
    # The offline runner imports the Pulumi SDKs: only for check, and before run_offline freezes the heap.
    from gpushare.offline.check import check_stack

    return run_offline(lambda: _check(check_stack, args, out))


def _check(check_stack: Callable[..., CheckResult], args: argparse.Namespace, out: TextIO) -> int:
    from gpushare.offline import policy_driver
    from gpushare.offline.check import CheckError
    from gpushare.offline.policy_config import load_policy_config_file
    from gpushare.offline.policy_model import (
        PolicyConfigError,
        PolicyDriverError,
        UnreadablePolicyConfigError,
    )

    policy_config = None
    if args.policy_config:
        try:
            policy_config = load_policy_config_file(Path(args.policy_config))
        except UnreadablePolicyConfigError as err:  # its message names the file already
            raise UnreadableInputError(str(err)) from None
        except PolicyConfigError as err:
            raise CheckError(str(err)) from None
        except (OSError, ValueError, PolicyDriverError) as err:
            raise CheckError(str(err), source=args.policy_config) from None
    result = check_stack(
        Path(args.dir),
        args.stack,
        policy_config=policy_config,
        pack_dir=_pack_dir(args),
        chart_sources=chart_sources_from(args),
        inside_charts=args.inside_charts,
    )
    report = result.report
    for warning in result.chart_warnings:
        sys.stderr.write(warning + "\n")
    out.write(policy_driver.format_report(report))
    out.write(
        f"\nStack {args.stack}: {len(report.mandatory)} mandatory and {len(report.advisory)} advisory "
        f"violation(s) from {len(report.policies)} policies.\n"
    )
    return 0 if result.passed else 1


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "check",
        "render the stack and run the policy pack over it as the CLI does",
        "Render the stack, start the policy pack as `pulumi preview --policy-pack policies` does and drive "
        "it over its gRPC analyzer protocol; mandatory violations exit 1.",
    )
    stack_arguments(p)
    p.add_argument("--policy-config", metavar="FILE", help="a --policy-pack-config JSON file")
    p.add_argument(
        "--policy-pack",
        metavar="DIR",
        help="the policy pack to run (default: the project's policies/), as `pulumi preview --policy-pack DIR`",
    )
    p.add_argument(
        "--inside-charts",
        action="store_true",
        help="also hand the pack every object the stack's Helm charts render, as children of their release "
        "(`pulumi preview` hands it the release alone, so its verdicts can then exceed preview's)",
    )
    chart_arguments(p)
    p.set_defaults(run=cmd_check)
