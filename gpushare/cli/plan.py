"""`python -m gpushare plan --stack NAME`: the capacity plan of a stack (no Pulumi, no cluster)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from gpushare.cli.arguments import add_command, stack_arguments
from gpushare.cli.stack_notes import print_stack_notes
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.pool_offers import policy_config
from gpushare.stack.loading import load_stack


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    stack = load_stack(Path(args.dir), args.stack)
    print_stack_notes(stack)
    plan = build_plan(stack)
    if args.policy_config:
        # The plan as the pack's policy config, for `pulumi preview --policy-pack-config FILE` in programs
        # gpushare did not write (their workloads judged against this stack's pools).
        json.dump(policy_config(plan), out, indent=2)
        out.write("\n")
        return 0
    capacity = capacity_json(plan)
    if args.json:
        json.dump(capacity, out, indent=2)
        out.write("\n")
    else:
        out.write(f"Capacity plan for stack {args.stack} ({stack.source})\n\n{capacity_table(capacity)}\n")
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "plan",
        "the capacity plan of a stack",
        "Replicas, slots and memory per pool of a stack, from its measurements and the catalog (no Pulumi, "
        "no cluster): the table `render` prints and writes to capacity.json.",
    )
    stack_arguments(p)
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the plan as JSON, as capacity.json holds it")
    output.add_argument(
        "--policy-config",
        action="store_true",
        help="the plan as the policy pack's config (JSON), for pulumi preview --policy-pack-config FILE in "
        "programs gpushare did not write",
    )
    p.set_defaults(run=cmd_plan)
