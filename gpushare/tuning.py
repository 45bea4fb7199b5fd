"""The one tuning rule: replicas = floor(ceiling x memory / measured).

Time-slicing gives no memory isolation, so a GPU shared N ways must hold N copies of the largest
process. `ceiling` keeps headroom for fragmentation and the CUDA context. Below 2 replicas sharing is
off: the device plugin rejects `replicas < 2`, so no time-slicing entry may be emitted at all.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from gpushare.catalog import GpuModel
from gpushare.errors import GpushareError

DEFAULT_CEILING = 0.9
MIN_SHARED_REPLICAS = 2
# The plausibility floor of a per-process measurement. A CUDA context alone takes a few hundred MiB of GPU
# memory before the process allocates anything (CUDA 12 with lazy module loading: roughly 250-500 MiB on
# Turing to Hopper GPUs, as nvidia-smi's per-process column shows it), so a smaller figure is a misreading
# (a MiB/GiB slip, a process caught before it initialised CUDA), and sizing replicas from it oversubscribes
# the GPU massively: `measuredMiB: 1` would give an L20 41 461 replicas.
MIN_PLAUSIBLE_PROCESS_MIB = 256
# The ceiling on replicas per GPU: the kubelet runs at most 110 pods per node by default (`--max-pods`,
# also Kubernetes' documented limit for large clusters), so slots on one GPU beyond that can never all
# hold a pod; the tuning rule never advertises more.
MAX_REPLICAS_PER_GPU = 110


@dataclass(frozen=True)
class Tuning:
    """The result of the tuning rule for one GPU (or one MIG instance) and one measurement."""

    gpu: str
    mig_profile: str | None
    memory_mib: int
    measured_mib: int
    ceiling: float
    replicas: int

    @property
    def shared(self) -> bool:
        return self.replicas >= MIN_SHARED_REPLICAS

    @property
    def slots(self) -> int:
        """Schedulable slots on one GPU (or MIG instance): 1 when sharing is off."""
        return self.replicas if self.shared else 1

    @property
    def utilization(self) -> float:
        """Share of the memory the slots use when every slot runs the measured process."""
        return self.slots * self.measured_mib / self.memory_mib

    @property
    def headroom_mib_per_slot(self) -> float:
        return self.memory_mib / self.slots - self.measured_mib

    def as_json(self) -> dict[str, object]:
        return {
            "gpu": self.gpu,
            "migProfile": self.mig_profile,
            "memoryMiB": self.memory_mib,
            "measuredMiB": self.measured_mib,
            "ceiling": self.ceiling,
            "replicas": self.replicas,
            "shared": self.shared,
            "utilization": round(self.utilization, 4),
            "headroomMiBPerSlot": round(self.headroom_mib_per_slot, 1),
        }


def check_ceiling(ceiling: float) -> None:
    if math.isnan(ceiling):
        raise GpushareError(f"utilization ceiling must be a number in (0, 1], got {ceiling}")
    if not 0 < ceiling <= 1:
        raise GpushareError(f"utilization ceiling must be in (0, 1], got {ceiling}")


def measurement_problem(measured_mib: int) -> str | None:
    """Why `measured_mib` cannot be a process's GPU memory (below the plausibility floor), or None."""
    if measured_mib < MIN_PLAUSIBLE_PROCESS_MIB:
        return (
            f"{measured_mib} MiB is below {MIN_PLAUSIBLE_PROCESS_MIB} MiB, less than a CUDA context alone "
            "takes: a misreading (MiB for GiB?); measure the largest process with "
            "nvidia-smi --query-compute-apps=used_memory"
        )
    return None


def check_measured(measured_mib: int) -> None:
    problem = measurement_problem(measured_mib)
    if problem:
        raise GpushareError(f"measured memory: {problem}")


def max_replicas(memory_mib: int, measured_mib: int, ceiling: float) -> int:
    """floor(ceiling x memory / measured), computed exactly (no float rounding at the boundary), and at most
    MAX_REPLICAS_PER_GPU."""
    check_ceiling(ceiling)
    check_measured(measured_mib)
    return min(MAX_REPLICAS_PER_GPU, math.floor(Fraction(str(ceiling)) * memory_mib / measured_mib))


def tune(
    gpu: GpuModel,
    measured_mib: int,
    ceiling: float = DEFAULT_CEILING,
    mig_profile: str | None = None,
) -> Tuning:
    """Tune one GPU model, or one of its MIG profiles (then the memory is the instance's)."""
    if mig_profile is None:
        memory = gpu.memory_mib
        where = f"{gpu.key} ({memory} MiB)"
    else:
        memory = gpu.mig_profile(mig_profile).memory_mib
        where = f"{gpu.key} MIG {mig_profile} ({memory} MiB)"
    check_measured(measured_mib)
    if measured_mib > memory:
        raise GpushareError(f"measured {measured_mib} MiB does not fit {where}")
    return Tuning(
        gpu=gpu.key,
        mig_profile=mig_profile,
        memory_mib=memory,
        measured_mib=measured_mib,
        ceiling=ceiling,
        replicas=max_replicas(memory, measured_mib, ceiling),
    )


# At most 15 digits: no GPU has that many MiB, and Python refuses to convert very long digit strings.
_MIB = re.compile(r"^\s*([0-9]{1,15})\s*MiB\s*$", re.IGNORECASE)


# nvidia-smi takes `used_memory` (or `used_gpu_memory`) as the query name and heads the column
# `used_gpu_memory [MiB]` (`[MiB]` dropped with `nounits`).
_MEMORY_COLUMN_NAMES = frozenset({"used_memory", "used_gpu_memory"})


def _memory_column(header: list[str]) -> int:
    """The index of the header's used-memory column; a header without one is refused rather than read
    from its last column, which may be a pid or a process name."""
    for index, cell in enumerate(header):
        if cell.strip().lower().removesuffix("[mib]").strip() in _MEMORY_COLUMN_NAMES:
            return index
    raise GpushareError(
        f"no used_memory column in the nvidia-smi header {','.join(header)[:80]!r}: "
        "run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
    )


def largest_process_mib(compute_apps_csv: str) -> int:
    """The largest `used_memory` in `nvidia-smi --query-compute-apps=pid,process_name,used_memory
    --format=csv` output (with or without the header, with or without `nounits`)."""
    try:
        rows = [
            row for row in csv.reader(io.StringIO(compute_apps_csv)) if row and any(c.strip() for c in row)
        ]
    except csv.Error as err:
        raise GpushareError(f"not nvidia-smi CSV output: {err}") from None
    if rows and not rows[0][-1].strip()[:1].isdigit():
        header = rows[0]
        rows = rows[1:]
        column = _memory_column(header)
    else:
        column = -1
    values = []
    for row in rows:
        if column >= len(row):
            raise GpushareError(
                f"a row without a used_memory column in nvidia-smi output: {','.join(row)[:80]!r}"
            )
        cell = row[column].strip()
        match = _MIB.match(cell)
        if match:
            values.append(int(match.group(1)))
        elif cell.isascii() and cell.isdigit() and len(cell) <= 15:
            values.append(int(cell))
        else:
            raise GpushareError(f"unreadable used_memory value {cell[:40]!r} in nvidia-smi output")
    if not values:
        raise GpushareError("no compute processes in the nvidia-smi output")
    return max(values)


# No `\s*\n\s*`: on a long run of newlines that backtracks quadratically (a 1 MiB file took hours).
_FB_TOTAL = re.compile(
    r"FB Memory Usage[ \t]*\r?\n[ \t]*Total[ \t]*:[ \t]*([0-9]{1,15})[ \t]*MiB", re.IGNORECASE
)


def total_memory_mib(nvidia_smi_q: str) -> int:
    """The GPU's `FB Memory Usage / Total` from `nvidia-smi -q`."""
    match = _FB_TOTAL.search(nvidia_smi_q)
    if not match:
        raise GpushareError("no 'FB Memory Usage / Total' in the nvidia-smi -q output")
    return int(match.group(1))
