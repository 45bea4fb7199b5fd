"""`python -m gpushare catalog`: the GPU catalog as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from gpushare import catalog
from gpushare.cli.arguments import add_command


def cmd_catalog(args: argparse.Namespace, out: TextIO) -> int:
    if args.json:
        json.dump(catalog.as_json(), out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{'model':<10} {'architecture':<13} {'CC':<4} {'memory MiB':>10}  MIG profiles\n")
    for model in catalog.GPUS.values():
        profiles = ", ".join(p.name for p in model.mig_profiles) or "-"
        out.write(
            f"{model.key:<10} {model.architecture:<13} {model.compute_capability:<4} {model.memory_mib:>10}  {profiles}\n"
        )
    out.write("\nInstance types: ")
    out.write(", ".join(f"{t.name} = {t.gpus_per_node}x {t.gpu}" for t in catalog.INSTANCE_TYPES.values()))
    out.write(" (other types: pools state gpusPerNode)\n")
    out.write(f"\n{catalog.qgpu_summary()}\n")
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "catalog",
        "the GPU catalog",
        "Every GPU model gpushare knows (architecture, compute capability, memory, MIG profiles) and the "
        "Tencent instance types that carry them: the one source of the facts tuning and the policies use.",
    )
    p.add_argument("--json", action="store_true", help="the catalog as JSON, MIG profile details included")
    p.set_defaults(run=cmd_catalog)
