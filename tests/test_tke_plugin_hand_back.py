"""TKE's device plugin handed back: what the program registers so that leaving gpushare (or moving from
park/adopt to optOut) leaves `kube-system/nvidia-device-plugin-daemonset` as TKE shipped it.

Deleting a server-side-apply patch gives up the fields it owns, and a forced patch owns what it took from
TKE whole: a pod's nodeSelector is an atomic map, a container's args an atomic list. Deleted, the park or
adopt patch would leave TKE's DaemonSet with no nodeSelector (and, after adopt, no args): the real-engine
tests (tests/test_engine_tke_plugin.py) show it on an API server. So every patch is retained on delete,
applied under one field manager, and `managedPlugin: {action: optOut, handBack: true}` applies TKE's own
values under that manager (retained too), which drops whatever park or adopt set beyond them. Park also
sets TKE's args, so that adopt -> park gives them back. TKE's values are the seed's record of the cluster
(`../shared/seed`: plugin v0.14.5 started with `--mig-strategy=single --fail-on-init-error=false
--pass-device-specs=true`, no `--config-file`; nodeSelector `nvidia-device-enable=enable`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from test_program import run_document, run_stack

from gpushare.errors import ConfigError
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.resource_types import DAEMON_SET_PATCH, NODE_POOL
from gpushare.stack.loading import from_config_values

FIELD_MANAGER = "gpushare-tke-device-plugin"
SEED_TKE_ARGS = ["--mig-strategy=single", "--fail-on-init-error=false", "--pass-device-specs=true"]


def _patches(run: ProgramRun) -> list[RecordedResource]:
    return [r for r in run.resources if r.type == DAEMON_SET_PATCH]


def _document(stack: str, managed: dict[str, Any]) -> dict[str, Any]:
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    document = copy.deepcopy(document)
    document["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = managed
    return document


def test_the_adopt_patch_is_retained_on_delete_under_gpushares_field_manager() -> None:
    [patch] = _patches(run_stack("prod"))  # prod adopts TKE's DaemonSet for t4
    assert patch.name == "gpushare-managed-plugin-patch"
    assert patch.retain_on_delete is True
    assert patch.inputs["metadata"]["annotations"] == {
        "gpushare.io/cluster": "cls-prod0001",  # whose patch it is (issue 34's identity)
        "gpushare.io/stack": "prod",
        "pulumi.com/patchForce": "true",
        "pulumi.com/patchFieldManager": FIELD_MANAGER,
    }


def test_the_park_patch_is_retained_and_sets_tkes_args_under_the_same_field_manager(tmp_path: Path) -> None:
    """Parking takes TKE's whole nodeSelector (an atomic map): deleted for real, it would leave none."""
    [patch] = _patches(run_document(_document("prod", {"action": "park"}), tmp_path))
    assert patch.retain_on_delete is True
    assert patch.inputs["spec"] == {
        "template": {
            "spec": {
                "nodeSelector": {"gpushare.io/managed-plugin": "parked"},
                "containers": [{"name": "nvidia-device-plugin-ctr", "args": SEED_TKE_ARGS}],
            }
        }
    }
    assert patch.inputs["metadata"]["annotations"]["pulumi.com/patchFieldManager"] == FIELD_MANAGER


def test_plain_opt_out_patches_nothing(tmp_path: Path) -> None:
    assert _patches(run_document(_document("prod", {"action": "optOut"}), tmp_path)) == []


def test_hand_back_applies_tkes_own_values_under_the_same_field_manager(tmp_path: Path) -> None:
    run = run_document(_document("prod", {"action": "optOut", "handBack": True}), tmp_path)
    [patch] = _patches(run)
    assert patch.name == "gpushare-managed-plugin-hand-back"
    assert patch.retain_on_delete is True
    # Exactly these fields: the parked selector key, the config volume and mount and the checksum annotation
    # that park/adopt applied under this manager are absent, so the API server removes them.
    assert patch.inputs == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "namespace": "kube-system",
            "annotations": {"pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": FIELD_MANAGER},
        },
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"nvidia-device-enable": "enable"},
                    "containers": [{"name": "nvidia-device-plugin-ctr", "args": SEED_TKE_ARGS}],
                }
            }
        },
    }
    # After every pool is relabelled `nvidia-device-enable=disable`, so TKE's plugin does not return to them.
    pools = [r for r in run.resources if r.type == NODE_POOL]
    assert {p.inputs["labels"]["nvidia-device-enable"] for p in pools} == {"disable"}
    # (the component holding the patch depends on every node pool, as the existing patches on the ConfigMap)
    holder = next(r for r in run.resources if r.urn == patch.parent)
    assert holder.dependencies == sorted(p.urn for p in pools)


def test_hand_back_takes_the_stacks_own_args_and_container_name(tmp_path: Path) -> None:
    managed = {
        "action": "optOut",
        "handBack": True,
        "tkeArgs": ["--fail-on-init-error=false"],
        "containerName": "ctr",
    }
    [patch] = _patches(run_document(_document("staging", managed), tmp_path))
    assert patch.inputs["spec"]["template"]["spec"]["containers"] == [
        {"name": "ctr", "args": ["--fail-on-init-error=false"]}
    ]


@pytest.mark.parametrize("action", ["park", "adopt"])
def test_hand_back_belongs_to_opt_out_only(action: str) -> None:
    document = _document(
        "prod", {"action": action, "handBack": True, **({"pool": "t4"} if action == "adopt" else {})}
    )
    with pytest.raises(ConfigError, match=r"handBack. only applies to action optOut"):
        from_config_values(document["config"], stack="prod", source="Pulumi.prod.yaml")


@pytest.mark.e2e
def test_a_stack_handing_tkes_plugin_back_passes_the_pack(tmp_path: Path) -> None:
    from gpushare.offline.check import check_stack

    for entry in ("Pulumi.yaml", "__main__.py", "components", "policies"):
        (tmp_path / entry).symlink_to(PROJECT_DIR / entry)
    document = _document("prod", {"action": "optOut", "handBack": True})
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    result = check_stack(tmp_path, "prod")
    assert result.report.mandatory == []
    assert {d.policy_name for d in result.report.advisory} == {
        "plugin-image-pinned",
        "time-slicing-measurement-fresh",
    }
