"""Tests that fail for the right reasons (issue #14): each one pins a behaviour that a small semantic
change once slipped past the suite, with the expected value written down by hand.

The fixture stack tests/fixtures/stacks/Pulumi.guards.yaml holds the shapes the repo's stacks never take:
a 4 x T4 node, pools whose measurement leaves 1 and 0 replicas, a MIG pool that is not time-sliced, a
multi-profile MIG pool on a 4 x H20 node, a per-pool `protect` override and a device plugin left to its
defaults. The real program runs over it once (under the offline mocks) and the guards read its output.

Hand arithmetic used below (memory from the catalog, which cites nvidia-smi; ceiling 0.9 by default):
- T4 15360 MiB, 0.9 x 15360 = 13824:  4401 MiB -> floor(3.14) = 3;  7000 -> floor(1.97) = 1;
  14000 -> floor(0.987) = 0.
- H20 MIG 1g.12gb 11264 MiB (GH200's -lgip), 0.9 x 11264 = 10137.6: 4621 MiB -> floor(2.19) = 2.
- H20 MIG 3g.48gb 48 decimal GB = 48e9 / 2^20 = 45776 MiB, 0.9 x 45776 = 41198.4: 4621 -> floor(8.92) = 8.
- H20 MIG 1g.24gb 22138 MiB (H100 NVL's -lgip), 0.9 x 22138 = 19924.2: 4621 -> floor(4.31) = 4.
- L20 46068 MiB, 0.9 x 46068 = 41461.2: 4621 MiB -> floor(8.97) = 8.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, PROJECT_DIR
from test_policies import Res, all_messages, engine_value, mandatory, messages_of

from gpushare import catalog, kube_names
from gpushare.cli.main import main
from gpushare.errors import ConfigError
from gpushare.offline.recorded import RecordedResource
from gpushare.offline.render import RenderError, StackRun, render_files, run_stack
from gpushare.plan import build_plan
from gpushare.stack.loading import load_stack_file
from gpushare.stack.plugin_settings import DevicePlugin
from gpushare.tuning import tune

GUARDS_STACK = FIXTURES / "stacks" / "Pulumi.guards.yaml"
SCHEMA = "1.30.0"
CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
DAEMON_SET_TYPE = "kubernetes:apps/v1:DaemonSet"
NODE_POOL_TYPE = "tencentcloud:Kubernetes/nodePool:NodePool"
# What TKE's own DaemonSet runs (the seed); the daemonsets mode's default image.
TKE_IMAGE_0_14_5 = "sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5"


@pytest.fixture(scope="module")
def guards_run(tmp_path_factory: pytest.TempPathFactory) -> StackRun:
    """The real program over the guards stack, once: the program and its stack file, nothing else."""
    project = tmp_path_factory.mktemp("guards")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_DIR / name, project / name)
    shutil.copytree(
        PROJECT_DIR / "components", project / "components", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(GUARDS_STACK, project / GUARDS_STACK.name)
    return run_stack(project, "guards")


def recorded(run: StackRun, type_: str, name: str) -> RecordedResource:
    return run.run.resource(type_, name)


def config_data(run: StackRun) -> dict[str, str]:
    data: dict[str, str] = recorded(run, CONFIG_MAP_TYPE, "gpushare-config-configmap").inputs["data"]
    return data


# --------------------------------------------------------------------------------------------------------
# The tuning rule at 0 replicas


def test_a_process_larger_than_the_ceiling_gets_0_replicas_and_one_exclusive_slot() -> None:
    tuning = tune(catalog.gpu("T4"), 14000)  # 0.9 x 15360 = 13824 < 14000: floor(0.987) = 0
    assert tuning.replicas == 0
    assert not tuning.shared
    assert tuning.slots == 1  # exclusive: one pod per GPU, not zero
    assert tuning.headroom_mib_per_slot == 1360  # 15360 / 1 - 14000
    assert tuning.as_json()["utilization"] == 0.9115  # 14000 / 15360 = 0.91146
    assert tuning.as_json()["replicas"] == 0


def test_tune_command_on_a_process_larger_than_the_ceiling() -> None:
    out = io.StringIO()
    assert main(["tune", "--gpu", "T4", "--measured-mib", "14000", "--json"], out) == 0
    result = json.loads(out.getvalue())
    assert (result["replicas"], result["shared"], result["headroomMiBPerSlot"]) == (0, False, 1360.0)


# --------------------------------------------------------------------------------------------------------
# Catalog facts no other test pins


def test_a30_profile_ids_and_placements() -> None:
    # shared/reference/nvidia-device-plugin-and-mig.md section C: 1g.6gb ID14 x4 {0,1,2,3}:1,
    # 1g.6gb+me ID21 x1, 2g.12gb ID5 x2 {0,2}:2, 2g.12gb+me ID6 x1, 4g.24gb ID0 x1 {0}:4.
    a30 = catalog.gpu("A30")
    assert (a30.compute_slices, a30.memory_slices) == (4, 4)
    assert [
        (p.name, p.id, p.max_instances, p.placement_starts, p.placement_size) for p in a30.mig_profiles
    ] == [
        ("1g.6gb", 14, 4, (0, 1, 2, 3), 1),
        ("1g.6gb+me", 21, 1, (0, 1, 2, 3), 1),
        ("2g.12gb", 5, 2, (0, 2), 2),
        ("2g.12gb+me", 6, 1, (0, 2), 2),
        ("4g.24gb", 0, 1, (0,), 4),
    ]
    assert not any(p.id_inferred for p in a30.mig_profiles)


def test_a100_80gb_instance_memory_is_the_captures() -> None:
    # -lgip on A100 80GB PCIe, driver 515.86.01: 9.50 / 19.50 / 39.25 / 79.00 GiB, x 1024 = 9728 / 19968 /
    # 40192 / 80896 MiB (+me as its base profile). 1g.20gb was not captured: 20e9 / 2^20 = 19073.5 -> 19073.
    a100 = catalog.gpu("A100-80GB")
    assert {p.name: (p.memory_mib, p.memory_inferred) for p in a100.mig_profiles} == {
        "1g.10gb": (9728, False),
        "1g.10gb+me": (9728, False),
        "1g.20gb": (19073, True),
        "2g.20gb": (19968, False),
        "3g.40gb": (40192, False),
        "4g.40gb": (40192, False),
        "7g.80gb": (80896, False),
    }


# --------------------------------------------------------------------------------------------------------
# The plan of the degenerate pools


@pytest.fixture(scope="module")
def guards_plan() -> Any:
    return build_plan(load_stack_file(GUARDS_STACK, today=date(2026, 1, 15)))


def test_a_multi_gpu_pool_counts_gpus_not_nodes(guards_plan: Any) -> None:
    t4x4 = guards_plan.pool("t4x4")
    assert t4x4.gpus == 8  # 2 nodes x 4 T4
    assert t4x4.replicas == 3
    assert t4x4.slots == 24  # 8 GPUs x 3
    assert t4x4.memory_total_mib == 122880  # 8 x 15360


def test_pools_whose_measurement_leaves_1_or_0_replicas_share_nothing(guards_plan: Any) -> None:
    for name in ("t4-one", "t4-zero"):  # floor(1.97) = 1 and floor(0.987) = 0
        pool = guards_plan.pool(name)
        assert pool.shared == ()
        assert (pool.replicas, pool.slots_per_gpu, pool.slots) == (1, 1, 1)


def test_a_mig_pool_without_time_slicing_has_one_slot_per_instance(guards_plan: Any) -> None:
    whole = guards_plan.pool("h20-whole")
    assert whole.mig_strategy == "single"
    assert whole.shared == ()
    assert whole.mig_instances_per_gpu == 7
    assert whole.slots_per_gpu == 7  # 7 x 1g.12gb, each one slot
    assert whole.replicas == 1
    assert whole.slots == 28  # 4 H20 x 7


def test_a_multi_profile_mig_pool_reports_each_profile(guards_plan: Any) -> None:
    mixed = guards_plan.pool("h20-mixed")
    assert mixed.mig_strategy == "mixed"
    assert {s.resource: s.tuning.replicas for s in mixed.shared} == {
        "nvidia.com/mig-1g.12gb": 2,
        "nvidia.com/mig-3g.48gb": 8,
    }
    # No one replica count describes 3 x 2 + 1 x 8: neither the largest nor the smallest, so none.
    assert mixed.replicas is None
    assert [(m.profile, m.instances_per_gpu, m.replicas, m.slots_per_gpu) for m in mixed.mig_profiles] == [
        ("1g.12gb", 3, 2, 6),
        ("3g.48gb", 1, 8, 8),
    ]
    assert mixed.slots_per_gpu == 14  # 3 x 2 + 1 x 8
    assert mixed.slots == 56  # 4 H20 x 14


def test_slots_before_count_gpus(guards_plan: Any) -> None:
    # Without sharing one pod per GPU: 8 + 1 + 1 + 4 + 4 = 18 (per node it would be 2+1+1+1+1 = 6).
    assert guards_plan.slots_before == 18
    assert guards_plan.total_slots == 24 + 1 + 1 + 28 + 56


# --------------------------------------------------------------------------------------------------------
# The same pools through plan -> entries -> the real program


def test_the_program_writes_each_pools_config_as_worked_out_by_hand(guards_run: StackRun) -> None:
    data = config_data(guards_run)
    exclusive = "version: v1\nflags:\n  migStrategy: none\n"
    assert data["t4-one"] == exclusive  # 1 replica: no timeSlicing entry (the plugin refuses replicas < 2)
    assert data["t4-zero"] == exclusive
    assert data["h20-whole"] == "version: v1\nflags:\n  migStrategy: single\n"
    assert data["t4x4"] == (
        "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
        "    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"
    )
    assert data["h20-mixed"] == (
        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
        "    failRequestsGreaterThanOne: true\n    resources:\n"
        "    - name: nvidia.com/mig-1g.12gb\n      replicas: 2\n"
        "    - name: nvidia.com/mig-3g.48gb\n      replicas: 8\n"
    )


def test_the_programs_capacity_output_is_the_hand_worked_plan(guards_run: StackRun) -> None:
    outputs = guards_run.run.stack_outputs
    assert (outputs["totalSlots"], outputs["slotsBefore"]) == (110, 18)
    pools = {p["name"]: p for p in outputs["capacity"]["pools"]}
    assert {name: (p["gpus"], p["replicas"], p["slots"], p["slotsBefore"]) for name, p in pools.items()} == {
        "t4x4": (8, 3, 24, 8),
        "t4-one": (1, 1, 1, 1),
        "t4-zero": (1, 1, 1, 1),
        "h20-whole": (4, 1, 28, 4),
        "h20-mixed": (4, None, 56, 4),
    }
    assert pools["h20-whole"]["migInstancesPerGpu"] == 7
    assert pools["h20-mixed"]["migProfiles"] == [
        {"profile": "1g.12gb", "instancesPerGpu": 3, "replicas": 2, "slotsPerGpu": 6},
        {"profile": "3g.48gb", "instancesPerGpu": 1, "replicas": 8, "slotsPerGpu": 8},
    ]


def test_the_daemonsets_mode_defaults_to_tkes_own_plugin_image(guards_run: StackRun) -> None:
    # The stack names no version and no image: daemonsets mode runs what TKE ships, v0.14.5.
    for pool in ("t4x4", "t4-one", "h20-mixed"):
        spec = recorded(guards_run, DAEMON_SET_TYPE, f"gpushare-plugins-{pool}").inputs["spec"]
        assert spec["template"]["spec"]["containers"][0]["image"] == TKE_IMAGE_0_14_5


def test_plugin_version_and_image_defaults_per_mode() -> None:
    daemonsets = DevicePlugin.model_validate({"mode": "daemonsets"})
    assert (daemonsets.plugin_version, daemonsets.plugin_image) == ("0.14.5", TKE_IMAGE_0_14_5)
    helm = DevicePlugin.model_validate({"mode": "helm"})
    assert (helm.plugin_version, helm.plugin_image) == ("0.17.1", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1")
    newer = DevicePlugin.model_validate({"mode": "daemonsets", "version": "0.17.1"})
    assert newer.plugin_image == "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"  # TKE ships only v0.14.5


def test_a_pools_protect_overrides_the_stacks_protect_pools(guards_run: StackRun) -> None:
    # protectPools: true; only t4-one says `protect: false`.
    protected = {
        r.name: (r.protect, r.inputs["deletionProtection"])
        for r in guards_run.run.resources
        if r.type == NODE_POOL_TYPE
    }
    assert protected == {
        "gpushare-t4x4-pool": (True, True),
        "gpushare-t4-one-pool": (False, False),
        "gpushare-t4-zero-pool": (True, True),
        "gpushare-h20-whole-pool": (True, True),
        "gpushare-h20-mixed-pool": (True, True),
    }


# --------------------------------------------------------------------------------------------------------
# Stack values the repo's stacks never write


def _guards_document() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(GUARDS_STACK.read_text())
    return document


def _load_error(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path, today=date(2026, 1, 15))
    return str(caught.value)


def test_a_pool_named_any_is_refused(tmp_path: Path) -> None:
    document = _guards_document()
    document["config"]["gpushare:pools"][1]["name"] = "any"
    assert _load_error(tmp_path, document).startswith(
        "Pulumi.bad.yaml: gpushare:pools[1].name: 'any' must be a lowercase RFC 1123 label"
    )


@pytest.mark.parametrize(
    ("nodes", "shown"),
    [
        ({"min": 1, "max": 3, "desired": 4}, "1 <= 4 <= 3"),
        ({"min": 2, "max": 3, "desired": 1}, "2 <= 1 <= 3"),
    ],
)
def test_desired_nodes_outside_min_max_are_refused(tmp_path: Path, nodes: dict[str, int], shown: str) -> None:
    document = _guards_document()
    document["config"]["gpushare:pools"][0]["nodes"] = nodes
    assert _load_error(tmp_path, document) == (
        f"Pulumi.bad.yaml: gpushare:pools[0].nodes: need min <= desired <= max, got {shown}"
    )


def test_desired_nodes_at_min_and_at_max_are_accepted(tmp_path: Path) -> None:
    for nodes in ({"min": 2, "max": 3, "desired": 2}, {"min": 2, "max": 3, "desired": 3}):
        document = _guards_document()
        document["config"]["gpushare:pools"][0]["nodes"] = nodes
        path = tmp_path / "Pulumi.edge.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        assert load_stack_file(path, today=date(2026, 1, 15)).pools[0].nodes.desired == nodes["desired"]


# --------------------------------------------------------------------------------------------------------
# The secret-leak guard of `render`, on the real program's output


def _with_resources(run: StackRun, *changed: RecordedResource) -> Any:
    by_urn = {r.urn: r for r in changed}
    resources = [by_urn.pop(r.urn, r) for r in run.run.resources]
    return dataclasses.replace(run.run, resources=resources + list(by_urn.values()))


def _config_map_with(run: StackRun, key: str, value: str) -> RecordedResource:
    cm = recorded(run, CONFIG_MAP_TYPE, "gpushare-config-configmap")
    inputs = json.loads(json.dumps(cm.inputs))
    inputs["data"][key] = value
    return dataclasses.replace(cm, inputs=inputs)


def _secret_holding(run: StackRun, key: str, value: str) -> RecordedResource:
    """A Secret whose `stringData[key]` is secret, registered next to the program's resources."""
    cm = recorded(run, CONFIG_MAP_TYPE, "gpushare-config-configmap")
    return dataclasses.replace(
        cm,
        type="kubernetes:core/v1:Secret",
        name="tls",
        urn=cm.urn.replace("ConfigMap::gpushare-config-configmap", "Secret::tls"),
        inputs={
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "tls", "namespace": "kube-system"},
            "stringData": {key: value},
        },
        secret_input_paths=[f'stringData["{key}"]'],
    )


PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "-----END PRIVATE KEY-----\n"
)


def test_the_untouched_run_renders(guards_run: StackRun) -> None:
    # The placeholder kubeconfig is a secret input of the kubernetes provider: redacted, not a leak.
    files = render_files(guards_run.run, SCHEMA)
    assert "offline.invalid" not in "".join(files.values())


def test_a_multi_line_kubeconfig_copied_to_a_configmap_stops_the_render(guards_run: StackRun) -> None:
    provider = recorded(guards_run, "pulumi:providers:kubernetes", "kubernetes")
    assert provider.secret_input_paths == ["kubeconfig"]
    kubeconfig = provider.inputs["kubeconfig"]
    assert kubeconfig.count("\n") > 5  # multi-line: only its JSON-escaped form is in resources.json
    leaked = _with_resources(guards_run, _config_map_with(guards_run, "kubeconfig", kubeconfig))
    with pytest.raises(
        RenderError, match=r"^.*: would contain a secret in clear text \(pulumi:providers:kube"
    ):
        render_files(leaked, SCHEMA)


def test_a_multi_line_pem_copied_to_a_configmap_stops_the_render(guards_run: StackRun) -> None:
    secret = _secret_holding(guards_run, "tls.key", PEM)
    assert render_files(_with_resources(guards_run, secret), SCHEMA)  # kept at its secret path: fine
    leaked = _with_resources(guards_run, secret, _config_map_with(guards_run, "cert", PEM))
    with pytest.raises(RenderError, match=r'kubernetes:core/v1:Secret tls input stringData\["tls.key"\]'):
        render_files(leaked, SCHEMA)


def test_a_six_character_secret_is_looked_for(guards_run: StackRun) -> None:
    # 6 characters is the guard's minimum: shorter values ("true", "v1") would match everywhere.
    secret = _secret_holding(guards_run, "token", "Zq7#kP")
    leaked = _with_resources(guards_run, secret, _config_map_with(guards_run, "copy", "Zq7#kP"))
    with pytest.raises(RenderError, match="would contain a secret in clear text"):
        render_files(leaked, SCHEMA)
    five = _secret_holding(guards_run, "token", "Zq7#k")
    assert render_files(
        _with_resources(guards_run, five, _config_map_with(guards_run, "copy", "Zq7#k")), SCHEMA
    )


# --------------------------------------------------------------------------------------------------------
# Policies on the real program's output


def as_policy_resources(run: StackRun) -> list[Res]:
    return [
        Res(r.type, r.name, engine_value(r.inputs), "guards")
        for r in run.run.resources
        if r.custom and r.type
    ]


@pytest.fixture
def guards_env(monkeypatch: pytest.MonkeyPatch, guards_run: StackRun) -> Iterator[None]:
    """PULUMI_CONFIG as the CLI would pass the guards stack to the pack."""
    monkeypatch.setenv("PULUMI_STACK", "guards")
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(guards_run.raw_config))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", "[]")
    yield


def test_the_guards_stack_passes_every_mandatory_policy(
    guards_run: StackRun, guards_env: None, fixed_today: Callable[[date], None]
) -> None:
    fixed_today(date(2025, 6, 2))  # the day after the measurements: fresh
    found = all_messages(as_policy_resources(guards_run))
    assert mandatory(found) == {}
    # Advised only: the tag-only default image of TKE's plugin, and h20-mixed's layout on purpose (a
    # multi-profile layout that yields fewer slots than the recommended 6 x 1g.12gb + 1 x 1g.24gb).
    assert set(found) <= {"plugin-image-pinned", "mig-layout-underused"}
    (underused,) = found["mig-layout-underused"]
    assert "(h20-mixed): MIG layout 3x 1g.12gb + 1x 3g.48gb yields 14 slot(s) in 4 instance(s)" in underused


def test_gpu_pool_labels_require_the_plugin_config_label(guards_run: StackRun, guards_env: None) -> None:
    resources = as_policy_resources(guards_run)
    assert messages_of("gpu-pool-labels", resources) == []
    pool = next(r for r in resources if r.name == "gpushare-t4x4-pool")
    del pool.props["labels"][kube_names.LABEL_PLUGIN_CONFIG]
    (message,) = messages_of("gpu-pool-labels", resources)
    assert message == (
        "node pool t4x4 (T4) lacks the label(s) its device plugin selects on: nvidia.com/device-plugin.config."
    )


def _with_replicas(resources: list[Res], key: str, resource: str, replicas: int) -> list[Res]:
    changed = json.loads(json.dumps([r.props for r in resources]))
    out = [Res(r.type, r.name, props, r.stack) for r, props in zip(resources, changed, strict=True)]
    cm = next(r for r in out if r.name == "gpushare-config-configmap")
    text = cm.props["data"][key]
    marker = f"- name: {resource}\n      replicas: "
    start = text.index(marker) + len(marker)
    end = text.index("\n", start)
    cm.props["data"][key] = text[:start] + str(replicas) + text[end:]
    return out


@pytest.mark.parametrize(
    ("key", "resource", "tuned"),
    [
        ("t4x4", "nvidia.com/gpu", 3),  # floor(0.9 x 15360 / 4401) = 3
        ("h20-mixed", "nvidia.com/mig-1g.12gb", 2),  # floor(0.9 x 11264 / 4621) = 2
        ("h20-mixed", "nvidia.com/mig-3g.48gb", 8),  # floor(0.9 x 45776 / 4621) = 8
    ],
)
def test_the_packs_tuned_maximum_is_the_hand_worked_number(
    guards_run: StackRun, guards_env: None, key: str, resource: str, tuned: int
) -> None:
    resources = as_policy_resources(guards_run)
    cm = [r for r in resources if r.name == "gpushare-config-configmap"]
    assert messages_of("time-slicing-replicas-tuned", cm) == []
    over = [r for r in _with_replicas(resources, key, resource, tuned + 1) if r.name == cm[0].name]
    (message,) = messages_of("time-slicing-replicas-tuned", over)
    assert f"{resource} replicas {tuned + 1} exceeds the tuned maximum {tuned} = floor(0.9 x" in message
