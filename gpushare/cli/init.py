"""`python -m gpushare init`: start a team's own Pulumi project with the program this repository tests.

Writes `Pulumi.yaml`, `__main__.py` and `requirements.txt` (`gpushare.project_template`) and a first
`Pulumi.<stack>.yaml`: the cluster (FILL-IN where no flag gives a value) and the pool `advise
--stack-snippet` recommends for the measured process. Nothing is written if any of those files exists;
every file is written whole (a temporary file renamed into place)."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any, TextIO

from gpushare import catalog, project_template
from gpushare.advise.layout_options import advise
from gpushare.advise.pool_snippet import PoolSnippet, render_pools
from gpushare.cli.arguments import add_command, gpu_model, positive_mib, utilization_ceiling
from gpushare.errors import UnreadableInputError
from gpushare.stack.loading import is_stack_name
from gpushare.stack.placeholders import PLACEHOLDER_PREFIX
from gpushare.tuning import DEFAULT_CEILING


def _quoted(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML flow scalar: ids and dates stay strings


def stack_file_text(args: argparse.Namespace) -> str:
    report = advise(catalog.gpu(args.gpu), args.measured_mib, args.ceiling or DEFAULT_CEILING)
    option = report.options[0]  # the most slots, as `advise --stack-snippet`
    instance_type = args.instance_type
    if instance_type is None:
        known = sorted(t.name for t in catalog.INSTANCE_TYPES.values() if t.gpu == report.gpu.key)
        instance_type = known[0] if known else None
    snippet = PoolSnippet(
        name=args.pool_name or report.gpu.key.lower(),
        option=option,
        instance_type=instance_type,
        gpus_per_node=args.gpus_per_node,
        nodes=1,
        measured_at=args.measured_at,
        source=args.source,
    )

    def given(value: str | None, what: str) -> str:
        return _quoted(value or f"{PLACEHOLDER_PREFIX}: {what}")

    subnets = args.subnet_id or [f"{PLACEHOLDER_PREFIX}: subnet-..., the pools' subnet"]
    lines = [
        "# The first stack of a gpushare project (`gpushare init`); keys: docs/stack-file.md.",
        "config:",
        f"  tencentcloud:region: {_quoted(args.region)}",
        "  gpushare:cluster:",
        f"    id: {given(args.cluster_id, 'cls-..., the TKE cluster id')}",
        f"    vpcId: {given(args.vpc_id, 'vpc-..., the cluster VPC')}",
        f"    subnetIds: [{', '.join(_quoted(s) for s in subnets)}]",
        f"    kubernetesVersion: {_quoted(args.kubernetes_version)}",
        "  gpushare:sharing:",
        "    devicePlugin:",
        f"      mode: {args.mode}",
        "      managedPlugin: {action: optOut}   # TKE's own plugin stays off the pools (docs/tke-device-plugin.md)",
        f"# {report.gpu.key}, {report.measured_mib} MiB, ceiling {report.ceiling:g}: {option.describe()}",
        render_pools([snippet]).rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


def _write_whole(path: Path, text: str) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    if not is_stack_name(args.stack):
        raise UnreadableInputError(
            f"--stack {args.stack!r}: not a stack name (letters, digits, '_', '.' and '-')"
        )
    directory = Path(args.target_dir or ".")
    if not directory.is_dir():
        raise UnreadableInputError(f"--dir {directory}: no such directory")
    files = {
        "Pulumi.yaml": project_template.PULUMI_YAML,
        "__main__.py": project_template.MAIN_PY,
        "requirements.txt": project_template.REQUIREMENTS_TXT,
        f"Pulumi.{args.stack}.yaml": stack_file_text(args),
    }
    existing = sorted(name for name in files if (directory / name).exists())
    if existing:
        raise UnreadableInputError(
            f"{directory}: {', '.join(existing)} already there; init writes a new project only (nothing was written)"
        )
    for name, text in files.items():
        _write_whole(directory / name, text)
    stack_file = f"Pulumi.{args.stack}.yaml"
    fill_in = stack_file_text(args).count(PLACEHOLDER_PREFIX)
    out.write(f"wrote {', '.join(files)} in {directory}\n")
    if fill_in:
        out.write(
            f"next: replace the {fill_in} FILL-IN value(s) in {stack_file}; plan, render and check refuse them\n"
        )
    out.write(f"then: gpushare render --stack {args.stack} (offline), or pulumi install && pulumi preview\n")
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "init",
        "start a Pulumi project of your own: Pulumi.yaml, __main__.py and a first stack",
        "Write Pulumi.yaml, __main__.py and requirements.txt (the program this repository tests; its "
        "components come with the distribution) and Pulumi.STACK.yaml: the cluster and the pool `advise "
        "--stack-snippet` recommends for the measured process. Values no flag gives are FILL-IN "
        "placeholders, which plan, render and check refuse until replaced. Writes nothing if a file exists.",
    )
    p.add_argument("--gpu", required=True, type=gpu_model, help="GPU model key from the catalog")
    p.add_argument(
        "--measured-mib",
        required=True,
        type=positive_mib,
        metavar="MIB",
        help="largest process's GPU memory in MiB",
    )
    p.add_argument("--measured-at", metavar="YYYY-MM-DD", help="the day it was measured")
    p.add_argument("--source", help="how and where the process was measured")
    p.add_argument("--ceiling", type=utilization_ceiling, metavar="C", help="the tuning rule's ceiling (0.9)")
    p.add_argument("--stack", default="dev", metavar="NAME", help="the first stack's name (dev)")
    # Not `dir`: main() resolves a `dir` to the enclosing Pulumi project, which does not exist yet.
    p.add_argument("--dir", dest="target_dir", metavar="DIR", help="where to write (the working directory)")
    p.add_argument("--pool-name", help="the pool's name (default: the GPU model)")
    p.add_argument("--instance-type", help="the Tencent instance type (default: the catalog's for the GPU)")
    p.add_argument(
        "--gpus-per-node", type=int, default=1, help="GPUs per node, for types not in the catalog (1)"
    )
    p.add_argument("--cluster-id", help="the TKE cluster id, cls-...")
    p.add_argument("--vpc-id", help="the cluster's VPC, vpc-...")
    p.add_argument("--subnet-id", action="append", help="a subnet of the pools, subnet-... (repeatable)")
    p.add_argument("--region", default="ap-singapore", help="the TencentCloud region (ap-singapore)")
    p.add_argument(
        "--kubernetes-version", default="1.30", help="the cluster's Kubernetes minor version (1.30)"
    )
    p.add_argument(
        "--mode",
        choices=("daemonsets", "helm", "gpu-operator"),
        default="daemonsets",
        help="the device-plugin mode (daemonsets)",
    )
    p.set_defaults(run=cmd_init)
