"""`python -m gpushare render --stack NAME --out DIR`: run the program offline (gpushare/offline/render.py)
and report what it wrote: the files, the Helm releases, the resource tree and the capacity plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gpushare.cli.arguments import add_command, chart_arguments, chart_sources_from, stack_arguments
from gpushare.cli.offline_run import refuse_bad_stack_early, run_offline
from gpushare.cli.stack_notes import print_stack_notes
from gpushare.plan import capacity_table

if TYPE_CHECKING:
    from gpushare.offline.render import RenderResult


def cmd_render(args: argparse.Namespace, out: TextIO) -> int:
    refuse_bad_stack_early(args)
    # The offline runner imports the Pulumi SDKs: only for render, and before run_offline freezes the heap.
    from gpushare.offline.render import render_stack

    return run_offline(
        lambda: _report(
            render_stack(Path(args.dir), args.stack, Path(args.out), chart_sources=chart_sources_from(args)),
            args,
            out,
        )
    )


def _report(result: RenderResult, args: argparse.Namespace, out: TextIO) -> int:
    from gpushare.offline.manifests import HELM_VALUES_SUFFIX
    from gpushare.offline.render import MANIFESTS_DIR, release_summary

    if result.config is not None:
        print_stack_notes(result.config)
    in_manifests = [file for file in result.files if file.startswith(f"{MANIFESTS_DIR}/")]
    helm_values = sum(1 for file in in_manifests if file.endswith(HELM_VALUES_SUFFIX))
    chart_objects = sum(len(r.objects) for r in result.releases)
    objects = len(in_manifests) - helm_values - chart_objects
    schema = f"the Kubernetes {result.kubernetes_schema.rpartition('.')[0]} schema (strict)"
    # A stack whose objects all come from a chart (dev's) has none of its own: "0 objects valid" reads as
    # a failure, so the line says where its objects are instead.
    own = (
        f"{objects} Kubernetes object{'' if objects == 1 else 's'} valid against {schema}"
        if objects
        else "no Kubernetes objects of its own (its Helm releases' are below)"
    )
    out.write(
        f"Rendered stack {result.stack} into {args.out}: {len(result.resources)} resources, "
        f"{len(result.files)} files; {own}"
        + (f", {helm_values} Helm values file{'' if helm_values == 1 else 's'}" if helm_values else "")
        + "\n"
    )
    for rendered in result.releases:
        out.write(release_summary(rendered) + "\n")
        for warning in rendered.warning_lines():
            sys.stderr.write(warning + "\n")
    out.write(f"\n{result.tree}\n\n")
    out.write(f"Capacity plan for stack {result.stack}\n\n{capacity_table(result.capacity)}\n")
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "render",
        "run the program offline and write every resource and manifest",
        "Run the real Pulumi program under Pulumi's mocks (no cloud, no credentials) and write what "
        "`pulumi up` would create: resources.json, manifests/ (schema-validated; Helm releases rendered "
        "from their pinned charts), tke/ and capacity.json.",
    )
    stack_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="where to write (replaced as a whole)")
    chart_arguments(p)
    p.set_defaults(run=cmd_render)
