"""The classes of wrong verdicts, hangs and crashes an adversarial review found (#27), through every
command that reads a stack (plan, render, check, verify): one line naming the file and key, non-zero exit,
no traceback, nothing written. Crashes (a signal) and hangs (a FIFO) run as real subprocesses.

Every expected line is written down here. Where a number is in it, the comment says where it comes from.
"""

from __future__ import annotations

import copy
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.cli.main import main

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROD = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
STAGING = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())  # gpu-operator, MIG pool h20
HELM_MIG = yaml.safe_load(
    (PROJECT_DIR / "tests" / "fixtures" / "stacks" / "Pulumi.helm-mig.yaml").read_text()
)
PROD_TEXT = (PROJECT_DIR / "Pulumi.prod.yaml").read_bytes()
F = "Pulumi.bad.yaml"
SUBPROCESS_TIMEOUT = 60  # a guard against a hang, far above what a refusal needs
COMMANDS = {
    "plan": ["plan", "--stack", "bad"],
    "render": ["render", "--stack", "bad", "--out", "out"],
    "check": ["check", "--stack", "bad"],
    "verify": ["verify", "--stack", "bad", "--kubeconfig", "/nonexistent/kubeconfig"],
}
TAG_RULE = "is not allowed here (only strings, numbers, booleans, null, lists and mappings)"
FLOOR = (
    "MiB is below 256 MiB, less than a CUDA context alone takes: a misreading (MiB for GiB?); measure the "
    "largest process with nvidia-smi --query-compute-apps=used_memory"
)
UNTOLERATED = (
    "the plugin would never run on this pool's nodes (0 slots); use mode daemonsets or helm (they "
    "tolerate every pool taint) or drop the taint"
)
TOO_DEEP = f"{F}: not valid YAML: nested more than 32 levels deep"


@dataclass(frozen=True)
class Case:
    id: str
    expected: str
    base: dict[str, Any] | None = None
    edit: Callable[[dict[str, Any]], None] | None = None
    text: bytes | None = None


def _pool(index: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda config: config["gpushare:pools"][index].__setitem__(key, value)


def _nested(text: bytes) -> bytes:
    return b"config:\n  gpushare:pools: " + text + b"\n"


CASES = [
    # (3) One anchored rule: Python's `$` also matches before a final newline.
    Case(
        "name-trailing-newline",
        f"{F}: gpushare:pools[1].name: 't4\\n' must be a lowercase RFC 1123 label (it becomes a ConfigMap key "
        "and a label value) and not 'any' (the fallback key)",
        PROD,
        _pool(1, "name", "t4\n"),
    ),
    Case(
        "label-value-trailing-newline",
        f"{F}: gpushare:pools[0].labels.team: 'nlp\\n' is not a label value (at most 63 characters of "
        "letters, digits, '-', '_' and '.', alphanumeric at both ends)",
        PROD,
        _pool(0, "labels", {"team": "nlp\n"}),
    ),
    Case(
        "image-trailing-newline",
        f"{F}: gpushare:sharing.devicePlugin.image: 'nvcr.io/nvidia/k8s-device-plugin:v0.17.1\\n' is not an "
        "image reference (registry/repository:tag, repository@sha256:<64 hex> or repository:tag@sha256:<64 "
        "hex>; repository path in lowercase)",
        PROD,
        lambda c: c["gpushare:sharing"]["devicePlugin"].__setitem__(
            "image", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1\n"
        ),
    ),
    Case(
        "region-trailing-newline",
        f"{F}: tencentcloud:region: 'ap-singapore\\n' is not a TencentCloud region (like ap-singapore or "
        "na-siliconvalley)",
        text=PROD_TEXT.replace(
            b"tencentcloud:region: ap-singapore", b'tencentcloud:region: "ap-singapore\\n"'
        ),
    ),
    # ASCII digits where Kubernetes and NVIDIA parse ASCII: full-width digits (U+FF10..U+FF19).
    Case(
        "kubernetes-version-full-width",
        f"{F}: gpushare:cluster.kubernetesVersion: does not match ^1\\.[0-9]+$",
        PROD,
        lambda c: c["gpushare:cluster"].__setitem__("kubernetesVersion", "1.\uff13\uff10"),
    ),
    Case(
        "driver-version-full-width",
        f"{F}: gpushare:pools[0].driver.version: '\uff15\uff13\uff15.\uff11\uff16\uff11.\uff10\uff17' is not a "
        "driver version (ASCII digits and dots, like 535.161.07)",
        STAGING,
        _pool(
            0, "driver", {"name": "NVIDIA", "version": "\uff15\uff13\uff15.\uff11\uff16\uff11.\uff10\uff17"}
        ),
    ),
    # (2) The plan knows what the plugin tolerates: the operator's ClusterPolicy tolerates only
    # nvidia.com/gpu:NoSchedule (helm mode renders the pool taints as tolerations: test_plugin_tolerations).
    Case(
        "operator-gpu-taint-no-execute",
        f"{F}: gpushare:pools[1].taints[0]: nvidia.com/gpu=:NoExecute is not tolerated by the GPU Operator's "
        "ClusterPolicy (daemonsets.tolerations), which tolerates only nvidia.com/gpu:NoSchedule: "
        + UNTOLERATED,
        STAGING,
        _pool(1, "taints", [{"key": "nvidia.com/gpu", "value": "", "effect": "NoExecute"}]),
    ),
    Case(
        "operator-critical-addons-taint",
        f"{F}: gpushare:pools[1].taints[0]: CriticalAddonsOnly=true:NoSchedule is not tolerated by the GPU "
        "Operator's ClusterPolicy (daemonsets.tolerations), which tolerates only nvidia.com/gpu:NoSchedule: "
        + UNTOLERATED,
        STAGING,
        _pool(1, "taints", [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}]),
    ),
    Case(
        "operator-mig-manager-off-on-a-mig-pool",
        f'{F}: gpushare:pools[0].labels["nvidia.com/gpu.deploy.mig-manager"]: false switches off the '
        "mig-manager on this pool's nodes: nothing would partition its GPUs into MIG instances; remove the label",
        STAGING,
        _pool(0, "labels", {"nvidia.com/gpu.deploy.mig-manager": "false"}),
    ),
    Case(
        "operator-device-plugin-off",
        f'{F}: gpushare:pools[1].labels["nvidia.com/gpu.deploy.device-plugin"]: false switches off the '
        "device-plugin on this pool's nodes: no plugin would advertise its slots; remove the label",
        STAGING,
        _pool(1, "labels", {"nvidia.com/gpu.deploy.device-plugin": "false"}),
    ),
    # (4) A key without a namespace is the project's: `pools` after `gpushare:pools` would replace it.
    Case(
        "shadowed-pools",
        f"{F}: gpushare:pools: given twice, as config.gpushare:pools and as config.pools (a key without a "
        "namespace is the project's: both are gpushare:pools); keep one",
        text=PROD_TEXT + b"  pools: []\n",
    ),
    # (5) The plausibility floor: 256 MiB (a CUDA context alone takes a few hundred MiB).
    Case(
        "measured-one-mib",
        f"{F}: gpushare:pools[0].sharing.measuredMiB: 1 {FLOOR}",
        PROD,
        _pool(0, "sharing", {**PROD["config"]["gpushare:pools"][0]["sharing"], "measuredMiB": 1}),
    ),
    Case(
        "mig-time-slicing-measured-255",
        f"{F}: gpushare:pools[0].sharing.timeSlicing.measuredMiB: 255 {FLOOR}",
        STAGING,
        lambda c: c["gpushare:pools"][0]["sharing"]["timeSlicing"].__setitem__("measuredMiB", 255),
    ),
    # (7) NaN is no ceiling.
    Case(
        "ceiling-nan",
        f"{F}: gpushare:sharing.utilizationCeiling: must be a number, not NaN or infinity",
        text=PROD_TEXT.replace(b"utilizationCeiling: 0.9", b"utilizationCeiling: .nan"),
    ),
    # (6) Nesting and tags, before the C parser and the JSON conversion.
    Case("flow-nesting-1000", TOO_DEEP, text=_nested(b"[" * 1000 + b"]" * 1000)),
    Case(
        "block-nesting-2000",
        TOO_DEEP,
        text=b"config:\n"
        + b"".join(b"  " * (i + 1) + b"k%d:\n" % i for i in range(2000))
        + b"  " * 2001
        + b"x\n",
    ),
    Case("nesting-40", TOO_DEEP, text=_nested(b"[" * 40 + b"]" * 40)),
    Case(
        "tag-binary",
        f"{F}: not valid YAML: line 2, column 24: the tag !!binary {TAG_RULE}",
        text=b"config:\n  tencentcloud:region: !!binary YXAtc2luZ2Fwb3Jl\n",
    ),
    Case(
        "tag-set",
        f"{F}: not valid YAML: line 2, column 19: the tag !!set {TAG_RULE}",
        text=_nested(b"!!set {a}"),
    ),
    Case(
        "tag-timestamp",
        f"{F}: not valid YAML: line 2, column 24: the tag !!timestamp {TAG_RULE}",
        text=b"config:\n  tencentcloud:region: !!timestamp 2025-01-01\n",
    ),
]


def _write(case: Case, project: Path) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", project / "Pulumi.yaml")
    path = project / F
    if case.text is not None:
        path.write_bytes(case.text)
        return path
    assert case.base is not None and case.edit is not None
    document = copy.deepcopy(case.base)
    case.edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return path


def test_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_command_refuses_alike(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(case, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for command, argv in COMMANDS.items():
        argv = [str(tmp_path / "out") if part == "out" else part for part in argv]
        code = main([*argv, "--dir", str(tmp_path)], io.StringIO())
        err = capsys.readouterr().err
        assert code != 0, command
        assert "Traceback" not in err, command
        assert err.splitlines() == [case.expected], command
        assert sorted(p.name for p in tmp_path.iterdir()) == before, f"{command} wrote something"


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpushare", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


@pytest.mark.e2e
def test_25000_nested_brackets_are_refused_not_a_segfault(tmp_path: Path) -> None:
    # 50 KB of `[`: libyaml's recursive parser overflowed the C stack (exit 139, no message) before.
    _write(Case("deep", TOO_DEEP, text=_nested(b"[" * 25_000 + b"]" * 25_000)), tmp_path)
    for command in ("plan", "verify"):
        done = _run([*COMMANDS[command], "--dir", str(tmp_path)], tmp_path)
        assert (done.returncode, done.stderr) == (1 if command == "plan" else 2, TOO_DEEP + "\n"), command


def test_a_fifo_as_the_stack_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    os.mkfifo(tmp_path / F)  # nobody ever writes to it: open() for reading would wait forever
    done = _run([*COMMANDS["plan"], "--dir", str(tmp_path)], tmp_path)
    assert (done.returncode, done.stderr) == (
        2,  # unreadable: its content was never judged
        f"{F}: is a FIFO (named pipe), not a regular file; not read\n",
    )
