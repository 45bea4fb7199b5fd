"""`python -m gpushare`: the catalog, validators, tuning rule and capacity plan from a shell.

Errors are `GpushareError`s: one line each on stderr, exit 1 (2 for usage and unreadable files),
never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from gpushare import advise_cli, catalog, device_plugin, input_files, mig_parted, validate_cli
from gpushare.config_size import warn_config_size
from gpushare.errors import GpushareError
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.project_dir import NoProjectError, project_dir
from gpushare.stack_config import load_stack
from gpushare.tuning import DEFAULT_CEILING, largest_process_mib, total_memory_mib, tune

PROJECT_DIR_HELP = (
    "the Pulumi project directory (default: the nearest one holding a Pulumi.yaml, from here up)"
)


class _UsageError(GpushareError):
    pass


def _from_file(path: str, read: Callable[[str], int]) -> int:
    """What `read` finds in a file `tune` is given; every problem is one line naming the file (exit 2 when
    it cannot be read as text, 1 when its content is not what was expected)."""
    try:
        text = input_files.read_text(path)
    except input_files.InputFileError as err:
        raise _UsageError(err.message, source=path) from None
    try:
        return read(text)
    except GpushareError as err:
        raise GpushareError(err.message, source=path) from None


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
    return 0


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    if args.kind == "device-plugin-config":
        return validate_cli.run_validate_cli(
            args.files, args.plugin_version, out, sys.stderr, mps_root=args.mps_root
        )
    return mig_parted.run_validate_cli(args.files, args.gpu, out, sys.stderr)


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    # The kubernetes client is loaded only for verify.
    from gpushare.verify import cmd_verify

    return cmd_verify(args, out)


def cmd_tune(args: argparse.Namespace, out: TextIO) -> int:
    model = catalog.gpu(args.gpu)
    measured = args.measured_mib
    if args.from_nvidia_smi:
        measured = _from_file(args.from_nvidia_smi, largest_process_mib)
    if measured is None:
        raise _UsageError("give --measured-mib or --from-nvidia-smi")
    if args.gpu_total_from:
        reported = _from_file(args.gpu_total_from, total_memory_mib)
        if reported != model.memory_mib:
            sys.stderr.write(
                f"warning: nvidia-smi reports {reported} MiB, the catalog says {model.memory_mib} MiB for "
                f"{model.key}; tuning uses the catalog (the policy pack does too)\n"
            )
    result = tune(model, measured, args.ceiling, mig_profile=args.mig_profile)
    if args.json:
        json.dump(result.as_json(), out, indent=2)
        out.write("\n")
        return 0
    target = f"{result.gpu} MIG {result.mig_profile}" if result.mig_profile else result.gpu
    out.write(
        f"{target}: {result.memory_mib} MiB, largest process {result.measured_mib} MiB, ceiling {result.ceiling}\n"
    )
    if result.shared:
        out.write(
            f"replicas: {result.replicas}  utilization {result.utilization * 100:.1f} %  "
            f"headroom ~{int(result.headroom_mib_per_slot)} MiB per slot\n"
        )
    else:
        out.write("replicas: 1 - sharing off (the device plugin needs >= 2; emit no time-slicing entry)\n")
    return 0


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    stack = load_stack(Path(args.dir), args.stack)
    warn_config_size(stack)
    capacity = capacity_json(build_plan(stack))
    if args.json:
        json.dump(capacity, out, indent=2)
        out.write("\n")
    else:
        out.write(f"Capacity plan for stack {args.stack} ({stack.source})\n\n{capacity_table(capacity)}\n")
    return 0


def _render(args: argparse.Namespace, out: TextIO) -> int:
    _refuse_bad_stack_early(args)
    from gpushare.offline.render import cmd_render  # imports the Pulumi SDKs: only for render

    return _run_offline(cmd_render, args, out)


def _check(args: argparse.Namespace, out: TextIO) -> int:
    _refuse_bad_stack_early(args)
    from gpushare.offline.check import cmd_check  # imports the Pulumi SDKs: only for check

    return _run_offline(cmd_check, args, out)


def _refuse_bad_stack_early(args: argparse.Namespace) -> None:
    # The stack first, through the loader every command shares: a bad one is refused in a blink, before
    # the SDKs are even imported (the commands load it again; that costs milliseconds).
    load_stack(Path(args.dir), args.stack)


def _run_offline(
    command: Callable[[argparse.Namespace, TextIO], int], args: argparse.Namespace, out: TextIO
) -> int:
    """render and check (gpushare/offline/) run the Pulumi program and the policy pack."""
    # A run allocates many short-lived objects over a large, long-lived heap (the SDKs): freezing what
    # is imported and collecting less often took a 500-pool render from 28 s to 20 s (bench/).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    # SIGTERM (kill, a CI timeout) unwinds like Ctrl-C, so temporary folders are removed on the way out.
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return command(args, out)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _chart_arguments(parser: argparse.ArgumentParser) -> None:
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


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt so `finally` blocks run."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gpushare", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("catalog", help="the GPU catalog")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_catalog)

    p = sub.add_parser("validate", help="validate device-plugin or mig-parted config files")
    kinds = p.add_subparsers(dest="kind", required=True)
    k = kinds.add_parser("device-plugin-config", help="NVIDIA k8s-device-plugin config files")
    k.add_argument("files", nargs="+", metavar="FILE")
    k.add_argument("--plugin-version", choices=device_plugin.PLUGIN_VERSIONS, default="0.14.5")
    k.add_argument(
        "--mps-root",
        metavar="PATH",
        help=f"MPS_ROOT as NVIDIA's charts set it (their default: {device_plugin.CHART_MPS_ROOT})",
    )
    k.set_defaults(run=cmd_validate)
    k = kinds.add_parser("mig-config", help="NVIDIA mig-parted config files")
    k.add_argument("files", nargs="+", metavar="FILE")
    k.add_argument("--gpu", help="every mig-devices entry must also fit this GPU model")
    k.set_defaults(run=cmd_validate)

    p = sub.add_parser("tune", help="replicas from a measurement: floor(ceiling x memory / measured)")
    p.add_argument("--gpu", required=True, help="GPU model key from the catalog")
    p.add_argument("--measured-mib", type=int, help="largest process's GPU memory in MiB")
    p.add_argument("--ceiling", type=float, default=DEFAULT_CEILING)
    p.add_argument("--mig-profile", help="tune one MIG instance of this profile instead of the whole GPU")
    p.add_argument("--from-nvidia-smi", metavar="FILE", help="nvidia-smi --query-compute-apps CSV output")
    p.add_argument("--gpu-total-from", metavar="FILE", help="nvidia-smi -q output, to check the GPU's total")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_tune)

    p = sub.add_parser("plan", help="the capacity plan of a stack")
    p.add_argument("--stack", required=True)
    p.add_argument("--dir", help=PROJECT_DIR_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_plan)

    p = sub.add_parser("verify", help="check the live cluster against the stack (read-only)")
    p.add_argument("--stack", required=True)
    p.add_argument("--kubeconfig", metavar="PATH", help="default: $KUBECONFIG, ~/.kube/config, in-cluster")
    p.add_argument("--context", metavar="NAME", help="a context of the kubeconfig (default: its current one)")
    p.add_argument("--json", action="store_true", help="the report as JSON: ok, findings, pools")
    p.add_argument("--dir", help=PROJECT_DIR_HELP)
    p.set_defaults(run=_verify)

    p = sub.add_parser("render", help="run the program offline and write every resource and manifest")
    p.add_argument("--stack", required=True)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--dir", help=PROJECT_DIR_HELP)
    _chart_arguments(p)
    p.set_defaults(run=_render)

    p = sub.add_parser("check", help="render the stack and run the policy pack over it as the CLI does")
    p.add_argument("--stack", required=True)
    p.add_argument("--policy-config", metavar="FILE", help="a --policy-pack-config JSON file")
    p.add_argument("--dir", help=PROJECT_DIR_HELP)
    _chart_arguments(p)
    p.set_defaults(run=_check)

    advise_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if "dir" in args:  # the commands that work on a Pulumi project
            args.dir = str(project_dir(args.dir))
        code: int = args.run(args, out or sys.stdout)
        return code
    except (_UsageError, NoProjectError) as err:
        sys.stderr.write(f"{err}\n")
        return 2
    except GpushareError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{args.command}: interrupted (SIGINT); nothing was written\n")
        return 128 + signal.SIGINT
    except Terminated:
        sys.stderr.write(f"{args.command}: terminated (SIGTERM); nothing was written\n")
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        # `python -m gpushare ... | head`: the reader left; not an error worth a traceback.
        sys.stderr.close()
        return 0
