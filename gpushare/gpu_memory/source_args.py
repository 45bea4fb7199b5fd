"""The command-line options that say where `verify` and `measure` read GPU memory from."""

from __future__ import annotations

import argparse

from gpushare.gpu_memory.exporters import parse_named
from gpushare.gpu_memory.live import MemorySource
from gpushare.gpu_memory.series import DEFAULT_TKE_GPU_LABEL


def add_source_arguments(parser: argparse.ArgumentParser, *, window: bool = False) -> None:
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="read GPU memory from this Prometheus HTTP API instead of the exporter pods (e.g. through the "
        "API server: https://API/api/v1/namespaces/monitoring/services/prometheus-k8s:9090/proxy)",
    )
    parser.add_argument(
        "--exporter",
        action="append",
        metavar="NAMESPACE/NAME[:PORT]",
        help="a GPU memory exporter DaemonSet (or pod) to scrape besides the well-known ones (repeatable)",
    )
    parser.add_argument(
        "--tke-gpu-label",
        default=DEFAULT_TKE_GPU_LABEL,
        metavar="LABEL",
        help="the label telling GPUs apart on TKE's nvidia-gpu-exporter page (UNVERIFIED: its labels are "
        f"not documented; default {DEFAULT_TKE_GPU_LABEL})",
    )
    if window:
        parser.add_argument(
            "--window",
            metavar="DURATION",
            help="with --prometheus: the peak over this window (a Prometheus duration such as 7d)",
        )


def source_from_args(args: argparse.Namespace) -> MemorySource:
    """The `MemorySource` the options name; `GpushareError` for a malformed one."""
    return MemorySource(
        prometheus=args.prometheus,
        named=tuple(parse_named(value) for value in args.exporter or ()),
        tke_gpu_label=args.tke_gpu_label,
        window=getattr(args, "window", None),
    )
