"""components/gpu_operator_release.py: in gpu-operator mode the operator's Helm release waits for the
patch that parks TKE's own plugin (#32: both serve the kubelet's device-plugin socket, and the departing
one deletes it when it stops). The staging stack (gpu-operator mode) with `managedPlugin.action: park`
instead of its `optOut`, run as `make render` runs it (the recorded registrations are resources.json's)."""

from __future__ import annotations

import json

from conftest import PROJECT_DIR

from gpushare.offline.mock_run import run_program
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.stack_files import load_stack_config

RELEASE = "kubernetes:helm.sh/v3:Release"
PATCH = "kubernetes:apps/v1:DaemonSetPatch"


def test_the_operators_release_depends_on_the_patch_of_tkes_plugin() -> None:
    config, secret_keys = load_stack_config(PROJECT_DIR, "staging")
    sharing = json.loads(config["gpushare:sharing"])
    sharing["devicePlugin"]["managedPlugin"] = {"action": "park"}
    config["gpushare:sharing"] = json.dumps(sharing)
    run = run_program(
        PROJECT_DIR, stack="staging", config=config, secret_keys=secret_keys, mocks=program_mocks()
    )
    (patch,) = [r for r in run.resources if r.type == PATCH]
    (release,) = [r for r in run.resources if r.type == RELEASE]
    assert release.name == "gpushare-gpu-operator-release"
    assert patch.urn in release.dependencies
