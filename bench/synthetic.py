"""Synthetic fleets of GPU pools, and a throw-away project directory to render and check them in.

A synthetic stack mixes three pool kinds in a fixed rotation: L20 time-slicing (PNV5b.8XLARGE96), T4
time-slicing (GN7.2XLARGE32) and H20 partitioned by MIG with time-sliced instances (an instance type
outside the catalog, so `gpusPerNode: 1`). Measurements, node counts and MIG layouts vary between pools
so that replica counts and config entries differ, as they would in a real fleet; everything is a pure
function of (pools, mode, measured_at), so two runs render the same stack.

Pools carry no `source` string by default. The CLI hands a pack (and the language host a program) the
whole stack config in one environment variable, `PULUMI_CONFIG`, and Linux refuses to start a process
with any single environment string over 128 KiB (MAX_ARG_STRLEN): with prod-style provenance strings a
500-pool stack is past that and cannot be checked at all (`config_env_bytes`, `max_pools_under_limit`).

The project directory links the real program (`Pulumi.yaml`, `__main__.py`, `components/`, `gpushare/`)
and holds a `policies/` of links to the real pack's files plus a `venv` link, and `empty_pack/`, a copy
of `bench/empty_pack`; both packs get the same interpreter (see `pack_venv`), so a check against either
differs only in the rules.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from gpushare.offline.stack_files import load_stack_config

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
BENCH_DIR: Final = Path(__file__).resolve().parent
EMPTY_PACK_SOURCE: Final = BENCH_DIR / "empty_pack"
PROGRAM_ENTRIES: Final = ("Pulumi.yaml", "__main__.py", "components", "gpushare")
POLICY_DIR: Final = "policies"
EMPTY_PACK_DIR: Final = "empty_pack"
PACK_VENV: Final = "venv"

PluginMode = Literal["daemonsets", "helm"]
PLUGIN_MODES: Final[tuple[PluginMode, ...]] = ("daemonsets", "helm")

# Well inside the policy pack's measurement-age limit (180 days by default) on the day of the run.
MEASUREMENT_AGE_DAYS: Final = 30
H20_INSTANCE_TYPE: Final = "PNV6.8XLARGE128"  # not in the catalog (family UNVERIFIED): states gpusPerNode
# (layout, layoutName): both fit an H20's 7 compute / 8 memory slices; the 2g.24gb instances hold 22138 MiB.
_H20_LAYOUTS: Final[tuple[tuple[dict[str, int], str | None], ...]] = (
    ({"1g.12gb": 7}, "all-1g.12gb"),
    ({"2g.24gb": 3}, None),
)
_KINDS: Final = ("l20", "t4", "h20")
MAX_POOL_NAME: Final = 25


@dataclass(frozen=True)
class SyntheticStack:
    name: str
    pools: int
    mode: PluginMode

    @property
    def file_name(self) -> str:
        return f"Pulumi.{self.name}.yaml"


def stack_name(pools: int, mode: PluginMode) -> str:
    return f"bench-{pools}-{mode}"


def pool_name(kind: str, index: int) -> str:
    """`l20-0007`: unique, an RFC 1123 label, and short enough for the stack model (25 characters)."""
    name = f"{kind}-{index:04d}"
    if len(name) > MAX_POOL_NAME:
        raise ValueError(f"pool name {name!r} is longer than {MAX_POOL_NAME} characters")
    return name


def _pool(index: int, measured_at: str, sources: bool) -> dict[str, Any]:
    kind = _KINDS[index % len(_KINDS)]
    # Spread measurements and sizes over a few values so that pools tune to different replica counts.
    spread = (index * 7) % 5
    desired = 1 + index % 3
    nodes = {"min": 0, "max": desired + 1, "desired": desired}
    provenance = {"measuredAt": measured_at}
    if sources:  # about as long as the seed stacks' own provenance strings
        provenance["source"] = f"nvidia-smi --query-compute-apps on a node of pool {index}, inference service"
    if kind == "l20":
        return {
            "name": pool_name(kind, index),
            "gpu": "L20",
            "instanceType": "PNV5b.8XLARGE96",
            "nodes": nodes,
            "sharing": {
                "mode": "time-slicing",
                "measuredMiB": 3000 + 900 * spread,
                **provenance,
            },
        }
    if kind == "t4":
        return {
            "name": pool_name(kind, index),
            "gpu": "T4",
            "instanceType": "GN7.2XLARGE32",
            "nodes": nodes,
            "sharing": {
                "mode": "time-slicing",
                "measuredMiB": 2000 + 500 * spread,
                **provenance,
            },
        }
    layout, layout_name = _H20_LAYOUTS[(index // len(_KINDS)) % len(_H20_LAYOUTS)]
    sharing: dict[str, Any] = {
        "mode": "mig",
        "migLayout": dict(layout),
        "timeSlicing": {"measuredMiB": 2500 + 400 * spread, **provenance},
    }
    if layout_name:
        sharing["layoutName"] = layout_name
    return {
        "name": pool_name(kind, index),
        "gpu": "H20",
        "instanceType": H20_INSTANCE_TYPE,
        "gpusPerNode": 1,
        "nodes": nodes,
        "sharing": sharing,
    }


def default_measured_at(today: dt.date | None = None) -> str:
    return ((today or dt.date.today()) - dt.timedelta(days=MEASUREMENT_AGE_DAYS)).isoformat()


def stack_document(
    pools: int, mode: PluginMode, *, measured_at: str | None = None, sources: bool = False
) -> dict[str, Any]:
    """A `Pulumi.<stack>.yaml` document with `pools` GPU pools and the device plugin in `mode`;
    `sources` adds a provenance string to every measurement, as the seed stacks have."""
    if pools < 1:
        raise ValueError("a stack needs at least one pool")
    when = measured_at or default_measured_at()
    if mode == "daemonsets":
        device_plugin: dict[str, Any] = {
            "mode": "daemonsets",
            "version": "0.14.5",
            "managedPlugin": {"action": "park"},
        }
    else:
        device_plugin = {
            "mode": "helm",
            "version": "0.17.1",
            "gfdEnabled": False,
            "managedPlugin": {"action": "park"},
        }
    return {
        "config": {
            "tencentcloud:region": "ap-singapore",
            "gpushare:cluster": {
                "id": "cls-bench0001",
                "vpcId": "vpc-bench0001",
                "subnetIds": ["subnet-bench0001"],
                "kubernetesVersion": "1.30",
            },
            "gpushare:sharing": {"utilizationCeiling": 0.9, "devicePlugin": device_plugin},
            "gpushare:pools": [_pool(index, when, sources) for index in range(pools)],
        }
    }


def write_stack(
    project_dir: Path, pools: int, mode: PluginMode, *, measured_at: str | None = None
) -> SyntheticStack:
    stack = SyntheticStack(stack_name(pools, mode), pools, mode)
    text = yaml.safe_dump(stack_document(pools, mode, measured_at=measured_at), sort_keys=False)
    (project_dir / stack.file_name).write_text(
        f"# Synthetic benchmark stack: {pools} GPU pools, device plugin mode {mode} (bench/synthetic.py).\n{text}"
    )
    return stack


def pack_venv() -> Path:
    """The virtualenv both packs run in: the real pack's own (`policies/venv`) when it exists, else the
    environment running the benchmark (the project venv, which holds policies/requirements.txt too)."""
    own = REPO_ROOT / POLICY_DIR / PACK_VENV
    if (own / "bin" / "python").exists():
        return own
    return Path(sys.prefix)


def _link(target: Path, link: Path) -> None:
    link.symlink_to(target, target_is_directory=target.is_dir())


def make_project(project_dir: Path, *, copy_stacks: Sequence[str] = ()) -> Path:
    """Fill `project_dir` (created if missing) with links to the real program and the two packs.

    `copy_stacks` are stack names whose `Pulumi.<stack>.yaml` is copied from the repository.
    """
    project_dir.mkdir(parents=True, exist_ok=True)
    for name in PROGRAM_ENTRIES:
        _link(REPO_ROOT / name, project_dir / name)
    venv = pack_venv()
    policies = project_dir / POLICY_DIR
    policies.mkdir()
    for entry in sorted((REPO_ROOT / POLICY_DIR).iterdir()):
        if entry.name in (PACK_VENV, "__pycache__"):
            continue
        _link(entry, policies / entry.name)
    _link(venv, policies / PACK_VENV)
    empty = project_dir / EMPTY_PACK_DIR
    empty.mkdir()
    for entry in sorted(EMPTY_PACK_SOURCE.iterdir()):
        if entry.is_file() and entry.name != "PulumiPolicy.yaml":
            shutil.copyfile(entry, empty / entry.name)
    # The copy names the same virtualenv as the real pack; bench/empty_pack itself names none.
    project_doc = yaml.safe_load((EMPTY_PACK_SOURCE / "PulumiPolicy.yaml").read_text())
    project_doc["runtime"] = {"name": "python", "options": {"toolchain": "pip", "virtualenv": PACK_VENV}}
    (empty / "PulumiPolicy.yaml").write_text(yaml.safe_dump(project_doc, sort_keys=False))
    _link(venv, empty / PACK_VENV)
    for stack in copy_stacks:
        shutil.copyfile(REPO_ROOT / f"Pulumi.{stack}.yaml", project_dir / f"Pulumi.{stack}.yaml")
    return project_dir


def remove_project(project_dir: Path) -> None:
    """Remove a project made by `make_project`: the links go, their targets stay."""
    if project_dir.exists():
        shutil.rmtree(project_dir)  # rmtree unlinks symlinks, it never follows them


# --------------------------------------------------------------------------------------------------
# The size of the config a pack (or the program, under the real CLI) gets in its environment

ENV_STRING_LIMIT: Final = 32 * 4096
"""MAX_ARG_STRLEN on Linux: the longest single argument or `NAME=value` environment string execve takes."""


def config_env_bytes(project_dir: Path, stack: str) -> int:
    """Bytes of `PULUMI_CONFIG=<json>` as `gpushare.offline.policy_driver` (like the CLI) puts it in the pack's
    environment for this stack file, terminating NUL included."""
    config, _ = load_stack_config(project_dir, stack)
    return len(f"PULUMI_CONFIG={json.dumps(dict(config))}".encode()) + 1


def max_pools_under_limit(scratch_dir: Path, *, sources: bool, mode: PluginMode = "helm") -> int:
    """The largest synthetic stack (`sources` or not) whose config still fits `ENV_STRING_LIMIT`.

    The size grows linearly with the pools: extrapolate from two probes, then probe exactly around the
    estimate. Writes probe stack files into `scratch_dir` (a project made by `make_project`).
    """
    sizes: dict[int, int] = {}

    def size(pools: int) -> int:
        if pools not in sizes:
            name = f"probe-{pools}-{'sources' if sources else 'terse'}"
            document = stack_document(pools, mode, sources=sources)
            (scratch_dir / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
            sizes[pools] = config_env_bytes(scratch_dir, name)
        return sizes[pools]

    per_pool = (size(60) - size(30)) / 30
    pools = max(int(30 + (ENV_STRING_LIMIT - size(30)) / per_pool), 1)
    while pools > 1 and size(pools) > ENV_STRING_LIMIT:
        pools -= 1
    while size(pools + 1) <= ENV_STRING_LIMIT:
        pools += 1
    return pools
