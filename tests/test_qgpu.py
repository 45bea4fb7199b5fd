"""qGPU pools: the sizing (gpushare/qgpu.py), the stack model's mode `qgpu` and `pools[].native`, the plan,
the stack keys against the pinned SDK's NativeNodePool schema, and what the program registers.

Expected figures are arithmetic from the catalog's allocatable qGPU memory (T4 14 GiB VERIFIED, Tencent's
GPU-CRD page; L20 44 GiB third-party; H20 94 GiB inferred), written out in comments, never recomputed with
the code under test.
"""

from __future__ import annotations

import copy
import inspect
import io
import json
import re
from typing import Any, get_args

import pytest
import tencentcloud_iac_pulumi as tencentcloud
from conftest import PROJECT_DIR

from gpushare import catalog, qgpu
from gpushare.cli import main as cli_main
from gpushare.errors import ConfigError, GpushareError
from gpushare.offline.render import run_stack
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.plugin_configs import plugin_config_entries
from gpushare.pool_offers import pool_offers
from gpushare.resource_types import ADDON, NATIVE_NODE_POOL
from gpushare.stack import native_pool
from gpushare.stack.loading import from_config_values, load_stack_file

F = "Pulumi.t.yaml"


# --------------------------------------------------------------------------------------------------------
# Sizing


@pytest.mark.parametrize(
    ("gpu", "measured", "expected"),
    [
        # 4621 / 0.9 = 5134.4 MiB -> 6 GiB; floor(44 / 6) = 7 slices; 100 / 7 = 14.3 -> core 10.
        ("L20", 4621, (6, 7, 10, 44, "third-party", "memory")),
        # 4401 / 0.9 = 4890 MiB -> 5 GiB; floor(14 / 5) = 2; core 50.
        ("T4", 4401, (5, 2, 50, 14, "verified", "memory")),
        # 6 GiB; floor(94 / 6) = 15; 100 / 15 = 6.7 -> core 5.
        ("H20", 4621, (6, 15, 5, 94, "inferred", "memory")),
        # 1000 / 0.9 = 1111.1 MiB -> 2 GiB; floor(94 / 2) = 47, capped at 16 a card; 100 / 16 = 6.25 -> 5.
        ("H20", 1000, (2, 16, 5, 94, "inferred", "slices")),
        # The T4 boundary: 12902 / 0.9 = 14335.6 MiB -> 14 GiB: one slice, the whole card's compute.
        ("T4", 12902, (14, 1, 100, 14, "verified", "memory")),
        # 12903 / 0.9 = 14336.7 MiB -> 15 GiB: no slice fits in 14.
        ("T4", 12903, (15, 0, 0, 14, "verified", "memory")),
    ],
)
def test_slices_per_card_model(gpu: str, measured: int, expected: tuple[object, ...]) -> None:
    sizing = qgpu.size(catalog.gpu(gpu), measured)
    assert (
        sizing.memory_gib,
        sizing.slots_per_gpu,
        sizing.core_percent,
        sizing.allocatable_gib,
        sizing.allocatable_confidence,
        sizing.bound,
    ) == expected


def test_the_ceiling_is_the_time_slicing_headroom() -> None:
    # At ceiling 1 the slice is the process rounded up: 4621 MiB -> 5 GiB, floor(44 / 5) = 8 slices.
    assert qgpu.size(catalog.gpu("L20"), 4621, 1.0).slots_per_gpu == 8
    # At 0.5: 9242 MiB -> 10 GiB, floor(44 / 10) = 4.
    assert qgpu.size(catalog.gpu("L20"), 4621, 0.5).slots_per_gpu == 4


def test_a_stated_allocatable_figure_wins_and_is_marked_as_the_stacks() -> None:
    sizing = qgpu.size(catalog.gpu("H20"), 4621, allocatable_gib=93)
    # floor(93 / 6) = 15
    assert (sizing.slots_per_gpu, sizing.allocatable_confidence, sizing.inferred) == (15, "stack file", False)


def test_gpus_qgpu_does_not_list_or_whose_figure_is_unknown() -> None:
    with pytest.raises(GpushareError, match=r"^L4 is not on Tencent's qGPU list"):
        qgpu.size(catalog.gpu("L4"), 4621)
    with pytest.raises(GpushareError, match=r"^no allocatable qGPU memory is known for A10: set sharing"):
        qgpu.size(catalog.gpu("A10"), 4621)
    # 22 GiB stated: 6 GiB slices, floor(22 / 6) = 3
    assert qgpu.size(catalog.gpu("A10"), 4621, allocatable_gib=22).slots_per_gpu == 3


@pytest.mark.parametrize(("slots", "core"), [(1, 100), (2, 50), (3, 30), (6, 15), (7, 10), (16, 5), (0, 0)])
def test_core_is_the_card_shared_evenly_in_steps_of_5(slots: int, core: int) -> None:
    assert qgpu.core_percent(slots) == core


def test_every_qgpu_fact_lives_in_the_catalog_with_its_confidence() -> None:
    assert {g: (c.allocatable_gib, c.confidence) for g, c in catalog.QGPU_CARDS.items()} == {
        "T4": (14, "verified"),
        "L20": (44, "third-party"),
        "H20": (94, "inferred"),
    }
    assert (catalog.QGPU_MAX_SLICES_PER_GPU, catalog.QGPU_CORE_STEP, catalog.QGPU_CORE_PER_GPU) == (
        16,
        5,
        100,
    )
    assert catalog.QGPU_DRIVER_SERIES == ("450", "470", "515", "525", "535", "550", "570")


@pytest.mark.parametrize(
    ("core", "problem"),
    [
        ("5", None),
        ("100", None),
        ("160", None),  # over 2 cards, 80 each (component >= v1.1.1)
        ("300", None),  # 3 whole cards
        (
            "250",
            "tke.cloud.tencent.com/qgpu-core: 250 is more than 2 cards (qGPU splits above 100 over at most 2)",
        ),
        ("0", "tke.cloud.tencent.com/qgpu-core: 0 is not a multiple of 5 from 5 (percent of a card)"),
        ("7", "tke.cloud.tencent.com/qgpu-core: 7 is not a multiple of 5 from 5 (percent of a card)"),
        ("50m", "tke.cloud.tencent.com/qgpu-core: 50m is not a multiple of 5 from 5 (percent of a card)"),
    ],
)
def test_the_core_request_rule(core: str, problem: str | None) -> None:
    asked = {qgpu.RESOURCE_CORE: core, qgpu.RESOURCE_MEMORY: "1"}
    assert qgpu.request_problems(asked, asked) == ([problem] if problem else [])


def test_numbers_as_the_engine_sends_them_are_quantities() -> None:
    asked = {qgpu.RESOURCE_CORE: 10.0, qgpu.RESOURCE_MEMORY: 6.0}
    assert qgpu.request_problems(asked, asked, qgpu.size(catalog.gpu("L20"), 4621)) == []


# --------------------------------------------------------------------------------------------------------
# The stack file


def _values(pool: dict[str, Any] | None = None, sharing: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "gpushare:cluster": {
            "id": "cls-q0001",
            "vpcId": "vpc-q0001",
            "subnetIds": ["subnet-q0001"],
            "kubernetesVersion": "1.30",
        },
        "gpushare:sharing": {"devicePlugin": {"mode": "helm"}, **(sharing or {})},
        "gpushare:pools": [
            {
                "name": "l20-qgpu",
                "gpu": "L20",
                "instanceType": "PNV5b.8XLARGE96",
                "nodes": {"min": 0, "max": 2, "desired": 1},
                "native": {
                    "securityGroupIds": ["sg-q0001"],
                    "systemDisk": {"diskType": "CLOUD_BSSD", "diskSize": 100},
                },
                "sharing": {"mode": "qgpu", "schedulePolicy": "fixed-share", "measuredMiB": 4621},
                **(pool or {}),
            }
        ],
    }


def _problems(values: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        from_config_values(values, stack="t", source=F)
    return str(caught.value).splitlines()


def _with(pool_edit: Any, sharing: dict[str, Any] | None = None) -> dict[str, Any]:
    values = _values(sharing=sharing)
    pool_edit(values["gpushare:pools"][0])
    return values


def test_a_qgpu_pool_loads_and_plans() -> None:
    stack = from_config_values(_values(), stack="t", source=F)
    plan = build_plan(stack).pools[0]
    assert (plan.slots_per_gpu, plan.slots, plan.nvidia_plugin) == (7, 7, False)
    # No NVIDIA plugin config names it: only `any` is written.
    assert [e.key for e in plugin_config_entries(build_plan(stack))] == ["any"]
    (offer,) = pool_offers(build_plan(stack))
    assert [(r.resource, r.slots_per_gpu, r.budget_mib) for r in offer.resources] == [
        ("tke.cloud.tencent.com/qgpu-memory", 7, 6144)
    ]
    assert offer.node_labels == {
        "gpushare.io/gpu-model": "L20",
        "gpushare.io/pool": "l20-qgpu",
        "nvidia-device-enable": "disable",
        "qgpu-device-enable": "enable",
        "tke.cloud.tencent.com/qgpu-schedule-policy": "fixed-share",
    }


@pytest.mark.parametrize(
    ("edit", "sharing", "problem"),
    [
        (
            lambda p: p.pop("native"),
            None,
            "gpushare:pools[0].native: required for sharing.mode qgpu (TKE runs qGPU on native nodes only): "
            "securityGroupIds and systemDisk at least",
        ),
        (
            lambda p: p["sharing"].pop("schedulePolicy"),
            None,
            "gpushare:pools[0].sharing.schedulePolicy: required",
        ),
        (
            lambda p: p["sharing"].update(schedulePolicy="fixed"),
            None,
            "gpushare:pools[0].sharing.schedulePolicy: must be one of 'fixed-share', 'burst-share' or "
            "'best-effort', got 'fixed'; did you mean 'fixed-share'?",
        ),
        (
            lambda p: p.update(
                driver={"version": "535.161.07", "name": "NVIDIA-Linux-x86_64-535.161.07.run"}
            ),
            None,
            "gpushare:pools[0].driver: a native node pool has no driver field in the pinned provider: TKE picks "
            "the driver (qGPU needs series 450, 470, 515, 525, 535, 550, 570; see docs/qgpu.md)",
        ),
        (
            lambda p: p.update(nodeOs="tlinux3.1x86_64"),
            None,
            "gpushare:pools[0].nodeOs: a native node pool runs TKE's own image: the pinned provider has no OS field",
        ),
        (
            lambda p: p.update(gpu="L4", instanceType="X.L4", gpusPerNode=1),
            None,
            "gpushare:pools[0].gpu: L4 is not on Tencent's qGPU list (T4, L20/PNV5b, H20/PNV6, V100, A100, A10, "
            "L40S)",
        ),
        (
            lambda p: p.update(gpu="A10", instanceType="X.A10", gpusPerNode=1),
            None,
            "gpushare:pools[0].sharing.allocatableGiB: no allocatable qGPU memory is known for A10: set "
            "sharing.allocatableGiB to what `kubectl get node -o jsonpath='{.status.allocatable}'` shows for "
            "tke.cloud.tencent.com/qgpu-memory",
        ),
        (
            lambda p: p["sharing"].update(measuredMiB=41000),
            None,
            "gpushare:pools[0].sharing.measuredMiB: 41000 MiB at ceiling 0.9 needs a 45 GiB slice, more than "
            "L20's 44 GiB of allocatable qGPU memory: use mode exclusive",
        ),
        (
            lambda p: p.update(labels={"nvidia-device-enable": "enable"}),
            None,
            "gpushare:pools[0].labels.nvidia-device-enable: 'enable' would put TKE's NVIDIA plugin on a qGPU "
            "pool, advertising the cards qGPU slices as nvidia.com/gpu too; gpushare labels qGPU pools "
            "nvidia-device-enable=disable",
        ),
        (
            lambda p: p.update(labels={"qgpu-device-enable": "enable"}),
            None,
            "gpushare:pools[0].labels.qgpu-device-enable: gpushare sets qgpu-device-enable on this pool's "
            "nodes itself; a value here would be overwritten",
        ),
        (
            lambda p: p["native"]["systemDisk"].update(diskType="CLOUD_TSSD"),
            None,
            "gpushare:pools[0].native.systemDisk.diskType: must be one of 'CLOUD_PREMIUM', 'CLOUD_SSD', "
            "'CLOUD_BSSD' or 'CLOUD_HSSD', got 'CLOUD_TSSD'; did you mean 'CLOUD_SSD'?",
        ),
        (
            lambda p: p["native"].update(securityGroupIds=["sg_1"]),
            None,
            "gpushare:pools[0].native.securityGroupIds: 'sg_1' is not a security group id (sg-...)",
        ),
        (
            lambda p: p["native"].update(
                securityGroupIds=[]
            ),  # the provider requires native.security_group_ids (tke-provider.md)
            None,
            "gpushare:pools[0].native.securityGroupIds: needs at least 1 item(s)",
        ),
        (
            lambda p: p["native"].update(secutiryGroupIds=["sg-1"]),
            None,
            "gpushare:pools[0].native.secutiryGroupIds: unknown key; did you mean 'securityGroupIds'?",
        ),
        (
            lambda p: p["native"].update(
                dataDisks=[{"diskType": "CLOUD_BSSD", "diskSize": 200, "mountTarget": "x"}]
            ),
            None,
            "gpushare:pools[0].native.dataDisks[0].mountTarget: 'x' is not an absolute path (like "
            "/var/lib/containerd)",
        ),
        (
            lambda p: p.update(sharing={"mode": "time-slicing", "measuredMiB": 4621}),
            None,
            "gpushare:pools[0].native: only a pool in sharing.mode qgpu is a TKE native node pool",
        ),
        (
            lambda p: (
                p.update(sharing={"mode": "time-slicing", "measuredMiB": 4621}, native=None)
                or p.pop("native")
            ),
            {"qgpu": {"addonVersion": "1.1.3"}},
            "gpushare:sharing.qgpu: no pool is sharing.mode qgpu: remove the key",
        ),
        (
            lambda p: None,
            {"qgpu": {"addonVersion": "latest"}},
            "gpushare:sharing.qgpu.addonVersion: 'latest' is not an add-on version (like 1.1.3)",
        ),
    ],
    ids=[
        "native-missing",
        "policy-missing",
        "policy-misspelt",
        "driver",
        "node-os",
        "gpu-not-listed",
        "figure-unknown",
        "slice-too-big",
        "nvidia-switch-on",
        "qgpu-label-own",
        "system-disk-type",
        "security-group",
        "no-security-group",
        "native-key-misspelt",
        "mount-target",
        "native-without-qgpu",
        "addon-without-qgpu",
        "addon-version",
    ],
)
def test_every_refusal_names_its_key(edit: Any, sharing: dict[str, Any] | None, problem: str) -> None:
    assert _problems(_with(edit, sharing)) == [f"{F}: {problem}"]


def test_adopting_tkes_plugin_for_a_qgpu_pool_is_refused() -> None:
    values = _values(
        sharing={
            "devicePlugin": {"mode": "daemonsets", "managedPlugin": {"action": "adopt", "pool": "l20-qgpu"}}
        }
    )
    assert _problems(values) == [
        f"{F}: gpushare:sharing.devicePlugin.managedPlugin.pool: l20-qgpu is a qGPU pool: no NVIDIA device plugin "
        "may serve it"
    ]


# --------------------------------------------------------------------------------------------------------
# The stack keys against the pinned SDK


def _snake(alias: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", alias).lower()


def _sdk_parameters(cls: type) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"__self__", "self"}


def _sdk_values(cls: type, parameter: str) -> set[str]:
    """The backticked values of one parameter's line in the SDK class's docstring."""
    doc = inspect.getdoc(cls.__init__) or ""
    line = next(line for line in doc.splitlines() if re.search(rf"\] {parameter}:", line))
    return set(re.findall(r"`([A-Za-z_]+)`", line))


@pytest.mark.parametrize(
    ("model", "sdk", "renamed"),
    [
        # instanceChargeType..autoRepair are NativeNodePoolNativeArgs' own names; scalingPolicy is
        # scaling.create_policy; dataDisks/systemDisk are typed classes below.
        (native_pool.NativePool, tencentcloud.kubernetes.NativeNodePoolNativeArgs, {"scaling_policy": None}),
        (native_pool.SystemDisk, tencentcloud.kubernetes.NativeNodePoolNativeSystemDiskArgs, {}),
        (native_pool.DataDisk, tencentcloud.kubernetes.NativeNodePoolNativeDataDiskArgs, {}),
    ],
)
def test_every_native_key_is_an_argument_of_the_sdks_class(
    model: type, sdk: type, renamed: dict[str, str | None]
) -> None:
    keys = {_snake(field.alias or name) for name, field in model.model_fields.items()} - set(renamed)
    assert keys <= _sdk_parameters(sdk)
    assert "create_policy" in _sdk_parameters(tencentcloud.kubernetes.NativeNodePoolNativeScalingArgs)


def test_every_closed_set_is_within_the_sdks_documented_values() -> None:
    native_args = tencentcloud.kubernetes.NativeNodePoolNativeArgs
    assert set(get_args(native_pool.InstanceChargeType)) <= _sdk_values(native_args, "instance_charge_type")
    assert set(get_args(native_pool.MachineType)) <= _sdk_values(native_args, "machine_type")
    scaling = tencentcloud.kubernetes.NativeNodePoolNativeScalingArgs
    assert set(get_args(native_pool.ScalingPolicy)) == _sdk_values(scaling, "create_policy")
    system = tencentcloud.kubernetes.NativeNodePoolNativeSystemDiskArgs
    assert set(get_args(native_pool.SystemDiskType)) == _sdk_values(system, "disk_type")
    data = tencentcloud.kubernetes.NativeNodePoolNativeDataDiskArgs
    assert set(get_args(native_pool.DataDiskType)) == _sdk_values(data, "disk_type")


# --------------------------------------------------------------------------------------------------------
# The plan and what the program registers, on Pulumi.qgpu.yaml


def test_plan_shows_the_qgpu_pool_beside_the_others_with_the_third_party_figure_marked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = io.StringIO()
    assert cli_main.main(["plan", "--stack", "qgpu", "--dir", str(PROJECT_DIR)], out) == 0
    lines = out.getvalue().splitlines()
    assert (
        "l20-qgpu  L20  1      1     7 (qGPU 6 GiB + core 10 per pod, of 44 GiB THIRD-PARTY)  7      "
        "32347/46068            70.2 %  ~1523 MiB      1"
    ) in lines
    assert (
        "t4        T4   1      1     3                                                        3      "
        "13203/15360            86.0 %  ~719 MiB       1"
    ) in lines
    assert (
        "note: pool l20-qgpu: 44 GiB of allocatable qGPU memory per L20 is third-party (camushoilingma/qgpu-demo "
        "@ 22fa0d7: an L20 native node (PNV5b.8XLARGE96) showed 44); `verify` shows the nodes' figure"
    ) in lines
    # 7 slices x 4621 MiB = 32347 of 46068; 6 GiB = 6144 MiB - 4621 = 1523 headroom a slice.
    assert "10 schedulable GPU slots against 2 before sharing." in lines


@pytest.mark.parametrize(
    ("gpu", "instance_type", "marked"),
    [
        ("T4", "GN7.2XLARGE32", ""),
        ("L20", "PNV5b.8XLARGE96", " THIRD-PARTY"),
        ("H20", "PNV6.16XLARGE640", " INFERRED"),
    ],
)
def test_the_capacity_table_marks_what_is_not_verified_per_gpu_model(
    gpu: str, instance_type: str, marked: str
) -> None:
    values = _values({"gpu": gpu, "instanceType": instance_type})
    capacity = capacity_json(build_plan(from_config_values(values, stack="t", source=F)))
    (pool,) = capacity["pools"]  # type: ignore[misc]
    sizing = pool["qgpu"]
    # 4621 MiB at 0.9 -> 6 GiB slices. T4: floor(14 / 6) = 2, core 50; L20: floor(44 / 6) = 7, core 10;
    # H20 (4 cards a node): floor(94 / 6) = 15 a card, core 5.
    expected = {"T4": (2, 6, 50, 14), "L20": (7, 6, 10, 44), "H20": (15, 6, 5, 94)}[gpu]
    assert (
        sizing["slotsPerGpu"],
        sizing["memoryGiB"],
        sizing["corePercent"],
        sizing["allocatableGiB"],
    ) == expected
    assert pool["slots"] == expected[0] * (4 if gpu == "H20" else 1)
    table = capacity_table(capacity)
    assert f"(qGPU {expected[1]} GiB + core {expected[2]} per pod, of {expected[3]} GiB{marked})" in table
    assert ("note: pool l20-qgpu" in table) == bool(marked)


@pytest.fixture(scope="module")
def registered() -> list[Any]:
    return list(run_stack(PROJECT_DIR, "qgpu").run.resources)


def test_the_program_declares_the_addon_once_and_the_native_pool_after_it(registered: list[Any]) -> None:
    (addon,) = [r for r in registered if r.type == ADDON]
    assert addon.inputs == {
        "clusterId": "cls-qgpu0001",
        "addonName": "qgpu",
        "addonVersion": "1.1.3",
        "rawValues": '{"config":{"priority":"binpack"}}',  # plain JSON: the provider encodes it
    }
    assert json.loads(addon.inputs["rawValues"]) == {"config": {"priority": "binpack"}}
    assert addon.ignore_changes == ["rawValues"]
    (pool,) = [r for r in registered if r.type == NATIVE_NODE_POOL]
    assert addon.urn in pool.dependencies
    assert pool.inputs["type"] == "Native"
    assert pool.inputs["labels"] == [
        {"name": "gpushare.io/gpu-model", "value": "L20"},
        {"name": "gpushare.io/pool", "value": "l20-qgpu"},
        {"name": "nvidia-device-enable", "value": "disable"},
        {"name": "nvidia.com/gpu.deploy.operands", "value": "false"},
        {"name": "qgpu-device-enable", "value": "enable"},
        {"name": "tke.cloud.tencent.com/qgpu-schedule-policy", "value": "fixed-share"},
    ]
    native = pool.inputs["native"]
    assert (native["instanceTypes"], native["scaling"], native["replicas"], native["enableAutoscaling"]) == (
        ["PNV5b.8XLARGE96"],
        {"minReplicas": 0, "maxReplicas": 2, "createPolicy": "ZoneEquality"},
        1,
        True,
    )
    assert pool.ignore_changes == ["native.replicas"]


def test_outside_gpu_operator_mode_the_operands_label_is_left_out() -> None:
    stack = from_config_values(_values(), stack="t", source=F)  # helm mode
    (offer,) = pool_offers(build_plan(stack))
    assert qgpu.LABEL_OPERATOR_OPERANDS not in offer.node_labels


def test_the_repos_other_stacks_have_no_qgpu_pool() -> None:
    """prod, staging and dev render byte-identical with qGPU added: none of them declares a qGPU pool."""
    for name in ("prod", "staging", "dev"):
        stack = load_stack_file(PROJECT_DIR / f"Pulumi.{name}.yaml", name)
        assert all(p.qgpu is None for p in build_plan(stack).pools)
        assert copy.deepcopy(stack.sharing.qgpu).addon_version == "1.1.3"  # the default, never rendered


# --------------------------------------------------------------------------------------------------------
# Boundaries: one slice a card still fits; the registered data disks


def test_one_slice_a_card_is_a_pool_that_fits() -> None:
    # T4, 6500 MiB: 6500 / 0.9 = 7222.2 MiB -> 8 GiB; floor(14 / 8) = 1 slice, the card's whole core.
    sizing = qgpu.size(catalog.gpu("T4"), 6500)
    assert (sizing.slots_per_gpu, sizing.core_percent, sizing.fits) == (1, 100, True)
    values = _values({"gpu": "T4", "instanceType": "GN7.2XLARGE32"}, None)
    values["gpushare:pools"][0]["sharing"]["measuredMiB"] = 6500
    (plan,) = build_plan(from_config_values(values, stack="t", source=F)).pools
    assert plan.slots_per_gpu == 1
    # A stated 7 GiB card: floor(7 / 8) = 0 slices, which does not fit.
    assert qgpu.size(catalog.gpu("T4"), 6500, allocatable_gib=7).fits is False


def test_the_native_pool_formats_and_mounts_its_data_disks(registered: list[Any]) -> None:
    (pool,) = [r for r in registered if r.type == NATIVE_NODE_POOL]
    # Pulumi.qgpu.yaml: dataDisks [{CLOUD_BSSD, 200, ext4, /var/lib/containerd}], systemDisk CLOUD_BSSD 100.
    assert pool.inputs["native"]["dataDisks"] == [
        {
            "autoFormatAndMount": True,
            "diskType": "CLOUD_BSSD",
            "diskSize": 200,
            "fileSystem": "ext4",
            "mountTarget": "/var/lib/containerd",
        }
    ]


# The native pool's bounds (gpushare/stack/native_pool.py; INFERRED from Tencent CBS's ranges, docs/qgpu.md):
# a data disk 10 to 32000 GiB, a system disk 20 to 2048 GiB, each end accepted and one past it refused.
@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda n: n.update(dataDisks=[{"diskType": "CLOUD_BSSD", "diskSize": 10}]), None),
        (lambda n: n.update(dataDisks=[{"diskType": "CLOUD_BSSD", "diskSize": 32000}]), None),
        (
            lambda n: n.update(dataDisks=[{"diskType": "CLOUD_BSSD", "diskSize": 9}]),
            "native.dataDisks[0].diskSize: must be >= 10",
        ),
        (
            lambda n: n.update(dataDisks=[{"diskType": "CLOUD_BSSD", "diskSize": 32001}]),
            "native.dataDisks[0].diskSize: must be <= 32000",
        ),
        (lambda n: n["systemDisk"].update(diskSize=20), None),
        (lambda n: n["systemDisk"].update(diskSize=2048), None),
        (
            lambda n: n["systemDisk"].update(diskSize=19),
            "native.systemDisk.diskSize: must be >= 20",
        ),
        (
            lambda n: n["systemDisk"].update(diskSize=2049),
            "native.systemDisk.diskSize: must be <= 2048",
        ),
        (lambda n: n.update(keyIds=["skey-3glfot13"]), None),
        (
            lambda n: n.update(keyIds=["skey-3glfot13", "key-1"]),
            "native.keyIds: 'key-1' is not an SSH key id (skey-...)",
        ),
    ],
    ids=[
        "data-10",
        "data-32000",
        "data-9",
        "data-32001",
        "system-20",
        "system-2048",
        "system-19",
        "system-2049",
        "key-id",
        "key-id-bad",
    ],
)
def test_the_native_bounds(edit: Any, problem: str | None) -> None:
    values = _with(lambda p: edit(p["native"]))
    if problem is None:
        assert from_config_values(values, stack="t", source=F).pools[0].native is not None
    else:
        assert _problems(values) == [f"{F}: gpushare:pools[0].{problem}"]
