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


# What `measure --write` takes as evidence (docs/measurement-loop.md): one instant reading is not a
# measurement (a pod that has not reached its peak yet, or a spike), so only a peak over a window is written.
MIN_WRITE_WINDOW_SECONDS = 3600  # --prometheus with --window 1h or longer
MIN_WRITE_SCRAPES = 5  # or --scrapes 5 or more through the pod proxy, --interval apart
MIN_WRITE_SAMPLES = 5  # and at least this many samples of each measured node's series
MAX_SCRAPES = 60
MIN_INTERVAL_SECONDS, MAX_INTERVAL_SECONDS = 10.0, 3600.0
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def window_seconds(window: str) -> float:
    """A Prometheus duration in seconds (`1h30m` is 5400)."""
    return sum(
        int(number) * _UNIT_SECONDS[unit] for number, unit in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", window)
    )
