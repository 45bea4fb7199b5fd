"""`python -m gpushare`: GPU sharing on TKE as reviewed code, from a shell — the GPU catalog, the tuning
rule, MIG layout advice, the capacity plan of a stack, validators for NVIDIA's config files, an offline
render and policy check of the Pulumi program, and a read-only check of the live cluster.

Bad input ends in one line on stderr naming the file and key and what to do, never a traceback.
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

from gpushare import advise_cli, catalog, device_plugin, input_files, measure_cli, mig_parted, validate_cli
from gpushare.cli_arguments import (
    add_command,
    cluster_arguments,
    gpu_model,
    positive_mib,
    stack_arguments,
    utilization_ceiling,
)
from gpushare.config_size import warn_config_size
from gpushare.errors import EXIT_CODES_HELP, GpushareError, UsageError
from gpushare.gpu_memory.options import add_source_arguments
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.project_dir import NoProjectError, project_dir
from gpushare.stack_config import load_stack
from gpushare.tuning import (
    DEFAULT_CEILING,
    MAX_REPLICAS_PER_GPU,
    largest_process_mib,
    total_memory_mib,
    tune,
)


def _from_file(path: str, read: Callable[[str], int]) -> int:
    """What `read` finds in a file `tune` is given; every problem is one line naming the file (exit 2 when
    it cannot be read as text, 1 when its content is not what was expected)."""
    try:
        text = input_files.read_text(path)
    except input_files.InputFileError as err:
        raise UsageError(err.message, source=path) from None
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
    # argparse refuses both at once and neither (a mutually exclusive, required group).
    measured = args.measured_mib
    if args.from_nvidia_smi:
        measured = _from_file(args.from_nvidia_smi, largest_process_mib)
    if args.gpu_total_from:
        reported = _from_file(args.gpu_total_from, total_memory_mib)
        if reported != model.memory_mib:
            sys.stderr.write(
                f"warning: nvidia-smi reports {reported} MiB, the catalog says {model.memory_mib} MiB for "
                f"{model.key}; tuning uses the catalog (the policy pack does too)\n"
            )
    if args.mig_profile is not None:
        try:
            model.mig_profile(args.mig_profile)
        except GpushareError as err:
            raise UsageError(f"--mig-profile: {err.message}") from None
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
            f"headroom ~{int(result.headroom_mib_per_slot)} MiB per slot"
            + (
                f" (at most {MAX_REPLICAS_PER_GPU} per GPU: the kubelet's default max pods per node)"
                if result.replicas == MAX_REPLICAS_PER_GPU
                else ""
            )
            + "\n"
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
    parser = argparse.ArgumentParser(
        prog="python -m gpushare",
        description=__doc__,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="python -m gpushare COMMAND --help for its own"
    )

    p = add_command(
        sub,
        "catalog",
        "the GPU catalog",
        "Every GPU model gpushare knows (architecture, compute capability, memory, MIG profiles) and the "
        "Tencent instance types that carry them: the one source of the facts tuning and the policies use.",
    )
    p.add_argument("--json", action="store_true", help="the catalog as JSON, MIG profile details included")
    p.set_defaults(run=cmd_catalog)

    p = add_command(
        sub,
        "validate",
        "validate device-plugin or mig-parted config files",
        "Judge config files as NVIDIA's programs read them: plain files, ConfigMap manifests (each data key "
        "a config file) and `kubectl get -o yaml` Lists. A file that is not a config of that kind (Helm "
        "values, a Deployment) is invalid.",
    )
    kinds = p.add_subparsers(
        dest="kind", required=True, metavar="KIND", help="which kind of config the files hold"
    )
    k = add_command(
        kinds,
        "device-plugin-config",
        "NVIDIA k8s-device-plugin config files",
        "One verdict per file or ConfigMap data key: `valid` exactly when the plugin version would start "
        "with the file; warnings for what it accepts but ignores.",
    )
    k.add_argument("files", nargs="+", metavar="FILE", help="config files or manifests holding ConfigMaps")
    k.add_argument(
        "--plugin-version",
        choices=device_plugin.PLUGIN_VERSIONS,
        default="0.14.5",
        help="the plugin release to judge as (default: 0.14.5, TKE's)",
    )
    k.add_argument(
        "--mps-root",
        metavar="PATH",
        help=f"MPS_ROOT as NVIDIA's charts set it (their default: {device_plugin.CHART_MPS_ROOT})",
    )
    k.set_defaults(run=cmd_validate)
    k = add_command(
        kinds,
        "mig-config",
        "NVIDIA mig-parted config files",
        "One verdict per file or ConfigMap data key: `valid` when `nvidia-mig-parted assert --valid-config` "
        "would accept it (and every layout fits --gpu when given).",
    )
    k.add_argument("files", nargs="+", metavar="FILE", help="config files or manifests holding ConfigMaps")
    k.add_argument("--gpu", type=gpu_model, help="every mig-devices entry must also fit this GPU model")
    k.set_defaults(run=cmd_validate)

    p = add_command(
        sub,
        "tune",
        "replicas from a measurement: floor(ceiling x memory / measured)",
        "The tuning rule for one GPU model (or one MIG instance): how many copies of the largest measured "
        "process fit. Give the measurement as a number or as nvidia-smi's CSV, not both.",
    )
    p.add_argument("--gpu", required=True, type=gpu_model, help="GPU model key from the catalog")
    measurement = p.add_mutually_exclusive_group(required=True)
    measurement.add_argument(
        "--measured-mib", type=positive_mib, metavar="MIB", help="largest process's GPU memory in MiB"
    )
    measurement.add_argument(
        "--from-nvidia-smi",
        metavar="FILE",
        help="nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv output",
    )
    p.add_argument(
        "--ceiling",
        type=utilization_ceiling,
        default=DEFAULT_CEILING,
        metavar="C",
        help=f"share of GPU memory the replicas may use, 0 < C <= 1 (default: {DEFAULT_CEILING})",
    )
    p.add_argument("--mig-profile", help="tune one MIG instance of this profile instead of the whole GPU")
    p.add_argument("--gpu-total-from", metavar="FILE", help="nvidia-smi -q output, to check the GPU's total")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p.set_defaults(run=cmd_tune)

    p = add_command(
        sub,
        "plan",
        "the capacity plan of a stack",
        "Replicas, slots and memory per pool of a stack, from its measurements and the catalog (no Pulumi, "
        "no cluster): the table `render` prints and writes to capacity.json.",
    )
    stack_arguments(p)
    p.add_argument("--json", action="store_true", help="the plan as JSON, as capacity.json holds it")
    p.set_defaults(run=cmd_plan)

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
    p.set_defaults(run=_verify)

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
    _chart_arguments(p)
    p.set_defaults(run=_render)

    p = add_command(
        sub,
        "check",
        "render the stack and run the policy pack over it as the CLI does",
        "Render the stack, start the policy pack as `pulumi preview --policy-pack policies` does and drive "
        "it over its gRPC analyzer protocol; mandatory violations exit 1.",
    )
    stack_arguments(p)
    p.add_argument("--policy-config", metavar="FILE", help="a --policy-pack-config JSON file")
    _chart_arguments(p)
    p.set_defaults(run=_check)

    advise_cli.add_parser(sub)
    measure_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if "dir" in args:  # the commands that work on a Pulumi project
            args.dir = str(project_dir(args.dir))
        code: int = args.run(args, out or sys.stdout)
        return code
    except NoProjectError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    except GpushareError as err:
        sys.stderr.write(f"{err}\n")
        return err.exit_code
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
