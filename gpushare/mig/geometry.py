"""Does a set of MIG GPU instances fit on one GPU, and which `nvidia-smi` command creates it?

The rules are those of shared/reference/nvidia-device-plugin-and-mig.md section C:
- the instances' compute slices add up to at most the GPU's (7 on A100/H100/H20, 4 on A30);
- no profile is used more often than its `max_instances`;
- at most one `+me` (media extensions) instance per GPU;
- every instance gets a start from its profile's `placement_starts` so that the memory-slice ranges
  `[start, start + placement_size)` do not overlap (this is what `nvidia-smi mig -lgipp` lists).

Everything here is pure Python; the GPU facts come from `gpushare.catalog`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpushare.catalog import GPUS, GpuModel, MigProfile
from gpushare.errors import GpushareError

# A GPU-instance profile name starts with its compute slice count: `3g.48gb` is 3 slices
# (MIG User Guide, "MIG Device Names"). tests/test_mig_geometry.py checks the catalog agrees.
_COMPUTE_PREFIX = re.compile(r"^([0-9]+)g\.")  # ASCII digits, as nvidia-smi and mig-parted write them
_SIZES = re.compile(r"^([0-9]+)g\.([0-9]+)gb")


class MigLayoutError(GpushareError):
    """A MIG layout that cannot be created on the GPU; the message names the profile and the reason."""


@dataclass(frozen=True)
class Placement:
    """One GPU instance and the memory slices `[start, start + size)` it occupies."""

    profile: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}"


@dataclass(frozen=True)
class MigLayout:
    """A feasible set of GPU instances on one GPU, ordered by memory-slice start."""

    gpu: str
    placements: tuple[Placement, ...]

    def counts(self) -> dict[str, int]:
        """Instances per profile, larger profiles first (the order `fit_layout` reasons in)."""
        counts: dict[str, int] = {}
        for name in sorted((p.profile for p in self.placements), key=_name_order):
            counts[name] = counts.get(name, 0) + 1
        return counts

    @property
    def instances(self) -> int:
        return len(self.placements)

    @property
    def used_compute_slices(self) -> int:
        return sum(_compute_slices_in_name(p.profile) for p in self.placements)

    @property
    def used_memory_slices(self) -> int:
        return sum(p.size for p in self.placements)


def fit_layout(gpu: GpuModel, counts: Mapping[str, int]) -> MigLayout:
    """Place `counts` (profile name -> instances on one GPU) on `gpu` or raise `MigLayoutError`.

    Checks run cheapest-and-clearest first (names, counts, per-profile limits, `+me`, slice budgets)
    so that the error names the real problem; the placement search runs last.
    """
    requested = _resolve(gpu, counts)
    _check_instance_limits(requested)
    _check_media_extensions(gpu, requested)
    _check_budget(requested, "compute", gpu.compute_slices)
    _check_budget(requested, "memory", gpu.memory_slices)
    placements = _place(gpu, requested)
    return MigLayout(gpu.key, tuple(sorted(placements, key=lambda p: (p.start, _name_order(p.profile)))))


def creation_order(gpu: GpuModel, counts: Mapping[str, int]) -> list[str]:
    """The layout's GPU-instance profile NAMES in the order to create them (`nvidia-smi mig -cgi` takes
    names, so no inferred profile ID is involved).

    Order: the 3-slice profile first, because of the MIG User Guide known issue about creating it (ID 9)
    after other profiles; then larger profiles before smaller ones so that big instances are not blocked
    by small ones the driver placed first.
    """
    layout = fit_layout(gpu, counts)
    by_name = {p.name: p for p in gpu.mig_profiles}
    return [p.name for p in sorted((by_name[p.profile] for p in layout.placements), key=_creation_order)]


def creation_orders(gpu: GpuModel, counts: Mapping[str, int]) -> list[list[str]]:
    """The orders worth trying, first `creation_order`, then the layout's own placements from the lowest
    memory slice up. `nvidia-smi mig -cgi` lets the driver choose each instance's placement, and which
    one it chooses is not documented: 6 x 1g.12gb + 1g.24gb on H20 fits only with the 1g.24gb at slice 6,
    which a driver taking the lowest free slice gives only when the 1g.12gb are created first. NVIDIA's
    MIG manager likewise tries orderings until one applies."""
    layout = fit_layout(gpu, counts)
    orders = [creation_order(gpu, counts), [p.profile for p in layout.placements]]
    return [order for i, order in enumerate(orders) if order not in orders[:i]]


# --- checks -------------------------------------------------------------------------------------------


def _resolve(gpu: GpuModel, counts: Mapping[str, int]) -> list[tuple[MigProfile, int]]:
    if not gpu.mig_capable:
        raise MigLayoutError(f"{gpu.key} does not support MIG")
    if not counts:
        raise MigLayoutError(f"{gpu.key}: empty MIG layout: give at least one profile and its count")
    by_name = {p.name: p for p in gpu.mig_profiles}
    requested: list[tuple[MigProfile, int]] = []
    for name, count in counts.items():
        # bool is an int subclass; `True` as a count is a mistake, not 1.
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise MigLayoutError(f"{name}: count must be a positive integer, got {count!r}")
        profile = by_name.get(name)
        if profile is None:
            raise MigLayoutError(_unknown_profile_message(gpu, name))
        requested.append((profile, count))
    requested.sort(key=lambda item: _size_order(item[0]))
    return requested


def _unknown_profile_message(gpu: GpuModel, name: str) -> str:
    known = ", ".join(p.name for p in gpu.mig_profiles)
    message = f"unknown profile {name} for {gpu.key} (known: {known})"
    # Suggest same-compute-size profiles: the usual mistake is another GPU's memory size (3g.47gb on H20).
    prefix = _COMPUTE_PREFIX.match(name)
    wants_me = "+me" in name
    similar = [
        p.name
        for p in gpu.mig_profiles
        if prefix and p.name.startswith(prefix.group(0)) and p.media_extensions == wants_me
    ]
    if similar:
        message += f"; did you mean {' or '.join(similar)}?"
    owners = [
        m.key for m in GPUS.values() if m.key != gpu.key and any(p.name == name for p in m.mig_profiles)
    ]
    if owners:
        message += f" ({name} is a profile of {', '.join(owners)})"
    return message


def _check_instance_limits(requested: Sequence[tuple[MigProfile, int]]) -> None:
    for profile, count in requested:
        if count > profile.max_instances:
            raise MigLayoutError(f"{profile.name} x{count}: at most {profile.max_instances} per GPU")


def _check_media_extensions(gpu: GpuModel, requested: Sequence[tuple[MigProfile, int]]) -> None:
    with_me = [(p, n) for p, n in requested if p.media_extensions]
    if sum(n for _, n in with_me) > 1:
        listed = ", ".join(_label(p, n) for p, n in with_me)
        raise MigLayoutError(
            f"{gpu.key}: at most one +me profile per GPU (the media engines go to one instance), got {listed}"
        )


def _check_budget(requested: Sequence[tuple[MigProfile, int]], kind: str, total: int) -> None:
    left = total
    for profile, count in requested:
        per_instance = profile.compute_slices if kind == "compute" else profile.memory_slices
        need = per_instance * count
        if need > left:
            raise MigLayoutError(
                f"{_label(profile, count)}: needs {need} {kind} slice{'s' if need != 1 else ''}, "
                f"only {left} of {total} left"
            )
        left -= need


def _place(gpu: GpuModel, requested: Sequence[tuple[MigProfile, int]]) -> list[Placement]:
    """Backtracking over placement starts: larger profiles first, lowest start first (deterministic).

    At most 7 instances with at most 7 starts each, and instances of one profile take increasing starts
    (they are interchangeable), so the search is tiny.
    """
    instances = [profile for profile, count in requested for _ in range(count)]
    used = [False] * gpu.memory_slices
    chosen: list[Placement] = []
    stuck: list[tuple[int, MigProfile, tuple[Placement, ...]]] = []  # deepest dead end, for the message

    def free(start: int, size: int) -> bool:
        return start + size <= len(used) and not any(used[start : start + size])

    def mark(start: int, size: int, value: bool) -> None:
        for index in range(start, start + size):
            used[index] = value

    def search(depth: int) -> bool:
        if depth == len(instances):
            return True
        profile = instances[depth]
        lowest = chosen[-1].start + 1 if depth and instances[depth - 1] is profile else 0
        for start in profile.placement_starts:
            if start < lowest or not free(start, profile.placement_size):
                continue
            mark(start, profile.placement_size, True)
            chosen.append(Placement(profile.name, start, profile.placement_size))
            if search(depth + 1):
                return True
            chosen.pop()
            mark(start, profile.placement_size, False)
        if not stuck or depth > stuck[0][0]:
            stuck[:] = [(depth, profile, tuple(chosen))]
        return False

    if not search(0):
        _, profile, partial = stuck[0]
        starts = ",".join(str(s) for s in profile.placement_starts)
        after = ", ".join(str(p) for p in partial) or "nothing"
        raise MigLayoutError(
            f"{gpu.key}: placements overlap: no free memory slices for {profile.name} "
            f"(starts {starts}, {profile.placement_size} slice(s) each) after placing {after}"
        )
    return chosen


# --- ordering helpers -------------------------------------------------------------------------------------


def _label(profile: MigProfile, count: int) -> str:
    return profile.name if count == 1 else f"{profile.name} x{count}"


def _size_order(profile: MigProfile) -> tuple[int, int, bool, str]:
    return (-profile.compute_slices, -profile.memory_slices, profile.media_extensions, profile.name)


def _creation_order(profile: MigProfile) -> tuple[bool, tuple[int, int, bool, str]]:
    return (profile.compute_slices != 3, _size_order(profile))


def _compute_slices_in_name(name: str) -> int:
    match = _COMPUTE_PREFIX.match(name)
    if match is None:
        raise MigLayoutError(f"not a GPU-instance profile name: {name!r}")
    return int(match.group(1))


def _name_order(name: str) -> tuple[int, int, str]:
    match = _SIZES.match(name)
    return (-int(match.group(1)), -int(match.group(2)), name) if match else (0, 0, name)
