"""Where `verify` and `measure` read GPU memory from (the command-line options that say so are
`gpushare.cli.arguments.add_source_arguments`).

No Kubernetes client here: the CLI imports this module for every command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from gpushare.errors import GpushareError
from gpushare.verify.memory_exporters import NamedExporter
from gpushare.verify.memory_series import DEFAULT_TKE_GPU_LABEL

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
