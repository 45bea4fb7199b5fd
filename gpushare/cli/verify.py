"""`python -m gpushare verify --stack NAME`: check the live cluster against the stack, read-only.

Loads the stack as `plan` and `render` do, derives the expected cluster from the same plan, reads the
cluster (GET/LIST only) and prints a table or `--json`. Exit 0: conforming (warnings allowed); 1: at
least one error finding, or a partial check (something could not be read: the verdict lists it, never
"conforms"); 2: cannot check (bad stack, no cluster, no permission to list nodes, no node of any pool,
a malformed or endless answer, a deadline passed, a cluster whose gpushare objects name another stack or
cluster: gpushare.verify.identity), with a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gpushare import kube_names
from gpushare.cli.arguments import (
    add_command,
    add_source_arguments,
    cluster_arguments,
    source_from_args,
    stack_arguments,
)
from gpushare.errors import ConfigError, GpushareError
from gpushare.stack.loading import load_stack

if TYPE_CHECKING:
    from gpushare.verify.report import VerifyReport

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_CANNOT_CHECK = 2


def report_table(report: VerifyReport, server: str) -> str:
    rows: list[tuple[str, ...]] = [("pool", "node", "resource", "planned", "allocatable")]
    for pool in report.pools:
        resources = ", ".join(pool.resources)
        if not pool.nodes:
            rows.append((pool.name, "(no nodes)", resources, "-", "-"))
        for node in pool.nodes:
            mark = "" if node.allocatable == node.expected_slots else "  <-"
            name = node.name if node.qgpu_version is None else f"{node.name} (qgpu {node.qgpu_version})"
            rows.append((pool.name, name, resources, str(node.expected_slots), f"{node.allocatable}{mark}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"Stack {report.stack} against {server}", ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(3, "  ".join("-" * w for w in widths))
    if report.findings:
        lines.append("")
        check_width = max(len(f.check) for f in report.findings)
        for finding in report.findings:
            lines.append(f"{finding.severity.upper():<7}  {finding.check:<{check_width}}  {finding.object}")
            lines.append(f"         {finding.message}")
    errors, warnings = len(report.errors), len(report.warnings)
    counts = f"{errors} error{'' if errors == 1 else 's'}, {warnings} warning{'' if warnings == 1 else 's'}"
    lines.append("")
    if not report.checked_pools:
        lines.append(
            f"{counts}: NOT CHECKED: no node of any pool of stack {report.stack} is in the cluster "
            f"(no node carries {kube_names.LABEL_POOL}=<pool>), so no slot could be checked."
        )
    elif report.partial:
        lines.append(
            f"{counts}: PARTIAL: the cluster was only partly checked against stack {report.stack}; "
            f"not checked: {', '.join(report.not_checked)}."
        )
    else:
        verdict = "conforms to" if report.ok else "does NOT conform to"
        lines.append(f"{counts}: the cluster {verdict} stack {report.stack}.")
    return "\n".join(lines) + "\n"


def _kubeconfig_problem(flag: str | None) -> str | None:
    """A named kubeconfig that is not there, said as such (the client's loader calls a missing file an
    "Invalid kube-config file"); `$KUBECONFIG` may list several files, of which kubectl skips missing ones."""
    if flag:
        if Path(flag).is_dir():
            return f"--kubeconfig {flag}: is a directory, not a kubeconfig file"
        return None if Path(flag).exists() else f"--kubeconfig {flag}: no such file"
    listed = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    if listed and not any(Path(path).exists() for path in listed):
        return f"$KUBECONFIG {os.environ['KUBECONFIG']}: no such file"
    return None


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    try:
        # The loader plan, render and check share: a bad stack gets their very line (and exit 2 here).
        stack = load_stack(Path(args.dir), args.stack)
    except ConfigError as err:
        sys.stderr.write(f"{err}\n")
        return EXIT_CANNOT_CHECK
    problem = _kubeconfig_problem(args.kubeconfig)
    if problem:
        sys.stderr.write(f"verify: cannot check: {problem}\n")
        return EXIT_CANNOT_CHECK
    # The verify wing (and the Kubernetes client under it) is imported only here: every other command
    # runs without it.
    from gpushare.verify.checks import run_checks
    from gpushare.verify.expectations import expected_cluster
    from gpushare.verify.identity import Identity, OtherCluster, confirm_identity, identity_refs

    try:
        memory_source = source_from_args(args)
        expected = expected_cluster(stack)
        from gpushare.verify.memory_live import TOTAL_SECONDS, memory_findings
        from gpushare.verify.reader import HARD_STOP_GRACE_SECONDS, api_client, hard_stop, read_snapshot
        from gpushare.verify.workload_reader import read_workloads

        api = api_client(args.kubeconfig, args.context)
        server = str(api.configuration.host)
        with api:
            snapshot = read_snapshot(api, expected)  # under its own hard stop
            # Whose cluster this is, before anything is judged: a cluster of another stack is refused.
            note = confirm_identity(
                Identity(stack.stack, stack.cluster.id),
                {ref: snapshot.objects[ref] for ref in identity_refs(expected) if ref in snapshot.objects},
                server,
            )
            if note:
                sys.stderr.write(f"verify: {note}\n")
            # The memory reads after it under theirs: TOTAL_SECONDS, then the same grace.
            with hard_stop(TOTAL_SECONDS + HARD_STOP_GRACE_SECONDS, server):
                memory = memory_findings(api, expected, snapshot.nodes, memory_source)
            workloads = read_workloads(api)
    except OtherCluster as err:
        sys.stderr.write(f"verify: refused: {err}\n")
        return EXIT_CANNOT_CHECK
    except GpushareError as err:
        sys.stderr.write(f"verify: cannot check: {err}\n")
        return EXIT_CANNOT_CHECK
    from gpushare.verify.workload_capacity import workload_findings

    snapshot, found = workload_findings(stack, snapshot, workloads)
    report = run_checks(expected, snapshot, (*memory, *found))
    if args.json:
        json.dump(report.as_json(), out, indent=2)
        out.write("\n")
    else:
        out.write(report_table(report, server))
    if not report.checked_pools:
        # Nothing verify could read says anything about the stack: not a verdict, as for unreadable nodes.
        sys.stderr.write(
            f"verify: cannot check: no node of any pool of stack {report.stack} is in the cluster at {server}\n"
        )
        return EXIT_CANNOT_CHECK
    # A partial check is never "conforms": what could not be read is a finding to fix (the permission).
    return EXIT_OK if report.ok else EXIT_FINDINGS


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "verify",
        "check the live cluster against the stack (read-only)",
        "Read the cluster (GET and LIST only) and compare what the nodes advertise and the plugins run with "
        "the stack's plan: slots, labels, config digests, crash loops, TKE's plugin, GPU-Pending pods, stuck "
        "rollouts, MIG state.",
    )
    stack_arguments(p)
    cluster_arguments(p)
    p.add_argument("--json", action="store_true", help="the report as JSON: ok, findings, pools")
    add_source_arguments(p)
    p.set_defaults(run=cmd_verify)
