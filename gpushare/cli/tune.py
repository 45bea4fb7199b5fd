"""`python -m gpushare tune`: the tuning rule for one GPU model (or MIG instance) from a measurement."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gpushare import catalog, input_files
from gpushare.cli.arguments import add_command, gpu_model, positive_mib, utilization_ceiling
from gpushare.errors import GpushareError, UsageError
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


def add_parser(sub: Any) -> None:
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
