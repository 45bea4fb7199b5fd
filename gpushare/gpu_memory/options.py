"""Where `verify` and `measure` read GPU memory from, and the command-line options that say so.

No Kubernetes client here: the CLI builds its parsers from this module for every command.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from gpushare.errors import GpushareError
from gpushare.gpu_memory.exporters import NamedExporter, parse_named
from gpushare.gpu_memory.series import DEFAULT_TKE_GPU_LABEL

# Prometheus durations, as its query language spells them.
WINDOW = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


@dataclass(frozen=True)
class MemorySource:
    """Where GPU memory is read from: exporter pods (found, or `named`), or a Prometheus HTTP API."""

    prometheus: str | None = None
    named: tuple[NamedExporter, ...] = ()
    tke_gpu_label: str = DEFAULT_TKE_GPU_LABEL
    window: str | None = None

    def __post_init__(self) -> None:
        if self.window is not None and not WINDOW.match(self.window):
            raise GpushareError(f"--window {self.window!r}: not a Prometheus duration (e.g. 7d, 12h, 90m)")
        if self.window is not None and self.prometheus is None:
            raise GpushareError("--window needs --prometheus: an exporter page holds only the current value")
        if self.prometheus is not None and urlsplit(self.prometheus).scheme not in ("http", "https"):
            raise GpushareError(f"--prometheus {self.prometheus!r}: expected an http:// or https:// URL")


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
