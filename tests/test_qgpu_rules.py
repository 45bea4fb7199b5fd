"""policies/gpushare_policies/qgpu_rules.py on the real program's resources (tests/test_policies.py's helpers).

The healthy qGPU pool is Pulumi.qgpu.yaml's `l20-qgpu` (a NativeNodePool beside a time-sliced T4 pool,
under the GPU Operator); each breaking case is one change to what the program registers for it. The
workloads of qgpu-request-shape are hand-built (the program registers no workload of its own), shaped as
the qGPU page's sample (457/65734: requests and limits of qgpu-core and qgpu-memory).
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from test_policies import UNKNOWN, Program, Res, _isolated_environment, messages_of, program, use_stack

from gpushare import kube_names, qgpu

__all__ = ["_isolated_environment", "use_stack"]  # fixtures used by name below

QGPU_POLICIES = (
    "qgpu-pool-native",
    "qgpu-no-nvidia-plugin",
    "qgpu-no-mig",
    "qgpu-addon-present",
    "qgpu-request-shape",
)
NATIVE_POOL = "gpushare-l20-qgpu-pool"
ADDON = "gpushare-qgpu-addon"
T4_POOL = "gpushare-t4-pool"


@pytest.fixture(scope="module")
def stack() -> Program:
    return program("qgpu")


@pytest.fixture(autouse=True)
def _qgpu_config(use_stack: Callable[..., None]) -> None:
    use_stack("qgpu")


def verdicts(resources: list[Res]) -> dict[str, list[str]]:
    found = {name: messages_of(name, resources) for name in QGPU_POLICIES}
    return {name: messages for name, messages in found.items() if messages}


def _labels(res: Res) -> dict[str, str]:
    return {item["name"]: item["value"] for item in res.props["labels"]}


def _set_labels(res: Res, labels: dict[str, str]) -> None:
    res.props["labels"] = [{"name": k, "value": v} for k, v in sorted(labels.items())]


def _changed(stack: Program, name: str, edit: Callable[[Res], None]) -> list[Res]:
    changed = copy.deepcopy(stack.get(name))
    edit(changed)
    return stack.but(changed)


def test_the_qgpu_stack_passes_every_qgpu_policy(stack: Program) -> None:
    pool = stack.get(NATIVE_POOL)
    assert pool.type == "tencentcloud:Kubernetes/nativeNodePool:NativeNodePool"  # the near miss is qGPU
    assert _labels(pool)[qgpu.LABEL_DEVICE_ENABLE] == "enable"
    assert verdicts(stack.resources) == {}


def test_a_regular_node_pool_labelled_for_qgpu_is_not_native(stack: Program) -> None:
    def label_for_qgpu(res: Res) -> None:
        res.props["labels"] = {**res.props["labels"], qgpu.LABEL_DEVICE_ENABLE: "enable"}

    found = verdicts(_changed(stack, T4_POOL, label_for_qgpu))
    assert found["qgpu-pool-native"] == [
        "node pool t4 is labelled qgpu-device-enable=enable, but it is a regular TKE node pool: TKE runs qGPU on "
        "native nodes only, so the qgpu kernel module never slices its cards. Declare it as a NativeNodePool "
        "(gpushare: sharing.mode qgpu with pools[].native)."
    ]


def test_the_nvidia_switch_on_puts_tkes_plugin_on_the_qgpu_pool(stack: Program) -> None:
    def switch_on(res: Res) -> None:
        _set_labels(res, {**_labels(res), kube_names.LABEL_DEVICE_ENABLE: "enable"})

    found = verdicts(_changed(stack, NATIVE_POOL, switch_on))
    assert list(found) == ["qgpu-no-nvidia-plugin"]
    first, second = found["qgpu-no-nvidia-plugin"]
    assert first.startswith(
        "qGPU node pool l20-qgpu must be labelled nvidia-device-enable=disable and has 'enable': TKE's NVIDIA "
        "plugin would advertise"
    )
    assert second.startswith(
        "qGPU node pool l20-qgpu: TKE DaemonSet kube-system/nvidia-device-plugin-daemonset (nodeSelector "
        "nvidia-device-enable=enable) would run an NVIDIA device plugin on its nodes"
    )


def test_without_the_operands_switch_the_operators_plugin_lands_on_the_qgpu_pool(stack: Program) -> None:
    def drop_operands(res: Res) -> None:
        labels = _labels(res)
        del labels[qgpu.LABEL_OPERATOR_OPERANDS]
        _set_labels(res, labels)

    found = verdicts(_changed(stack, NATIVE_POOL, drop_operands))
    assert list(found) == ["qgpu-no-nvidia-plugin"]
    (message,) = found["qgpu-no-nvidia-plugin"]
    assert message.startswith(
        "qGPU node pool l20-qgpu: Helm release gpu-operator/gpu-operator (chart gpu-operator v26.7.0) "
        "(nodeSelector any node + required node affinity) would run an NVIDIA device plugin on its nodes"
    )


def test_a_device_plugin_config_label_on_the_qgpu_pool(stack: Program) -> None:
    def name_a_config(res: Res) -> None:
        _set_labels(res, {**_labels(res), kube_names.LABEL_PLUGIN_CONFIG: "l20-qgpu"})

    found = verdicts(_changed(stack, NATIVE_POOL, name_a_config))
    assert found == {
        "qgpu-no-nvidia-plugin": [
            "qGPU node pool l20-qgpu is labelled nvidia.com/device-plugin.config=l20-qgpu: a device-plugin config "
            "names it, so an NVIDIA plugin would serve its cards beside qGPU. Remove the label."
        ]
    }


def test_a_mig_layout_on_the_qgpu_pool(stack: Program) -> None:
    def ask_for_mig(res: Res) -> None:
        _set_labels(res, {**_labels(res), kube_names.LABEL_MIG_CONFIG: "all-1g.12gb"})

    found = verdicts(_changed(stack, NATIVE_POOL, ask_for_mig))
    assert list(found) == ["qgpu-no-mig"]
    assert found["qgpu-no-mig"][0].startswith(
        "qGPU node pool l20-qgpu is labelled nvidia.com/mig.config=all-1g.12gb: qGPU slices a whole card"
    )


def test_a_qgpu_pool_without_the_addon(stack: Program) -> None:
    resources = [r for r in stack.resources if r.name != ADDON]
    assert len(resources) == len(stack.resources) - 1
    assert verdicts(resources) == {
        "qgpu-addon-present": [
            "qGPU node pool l20-qgpu (labelled qgpu-device-enable=enable) but the stack declares no TKE add-on "
            'qgpu (tencentcloud.kubernetes.Addon(addon_name="qgpu")): without its qgpu-manager no node gets a '
            "qGPU resource. gpushare declares it for sharing.mode qgpu."
        ]
    }


def test_an_unpinned_addon(stack: Program) -> None:
    def unpin(res: Res) -> None:
        del res.props["addonVersion"]

    found = verdicts(_changed(stack, ADDON, unpin))
    assert list(found) == ["qgpu-addon-present"]
    assert found["qgpu-addon-present"][0].startswith(
        "TKE add-on qgpu (gpushare-qgpu-addon) has no addonVersion"
    )


def test_addon_values_encoded_by_hand_are_encoded_twice(stack: Program) -> None:
    def encode(res: Res) -> None:
        res.props["rawValues"] = base64.b64encode(res.props["rawValues"].encode()).decode()

    found = verdicts(_changed(stack, ADDON, encode))
    assert found == {
        "qgpu-addon-present": [
            "TKE add-on qgpu (gpushare-qgpu-addon) rawValues is base64-encoded JSON: the provider base64-encodes "
            "raw_values itself, so TKE would get it encoded twice. Pass the plain JSON."
        ]
    }


def _deployment(
    requests: dict[str, Any], limits: dict[str, Any], selector: dict[str, str] | None = None
) -> Res:
    """A Deployment as a program would register it (camelCase inputs); hand-built, see the module doc."""
    return Res(
        "kubernetes:apps/v1:Deployment",
        "vllm",
        {
            "metadata": {"name": "vllm", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "vllm"}},
                "template": {
                    "metadata": {"labels": {"app": "vllm"}},
                    "spec": {
                        "nodeSelector": selector or {kube_names.LABEL_POOL: "l20-qgpu"},
                        "containers": [
                            {
                                "name": "server",
                                "image": "vllm/vllm-openai:v0.6.3",
                                "resources": {"requests": requests, "limits": limits},
                            }
                        ],
                    },
                },
            },
        },
        "qgpu",
    )


SLICE = {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "6"}  # plan: L20 6 GiB, core 10 (test_qgpu.py)


def test_a_request_of_the_planned_slice_passes(stack: Program) -> None:
    assert verdicts([*stack.resources, _deployment(SLICE, SLICE)]) == {}


@pytest.mark.parametrize(
    ("requests", "limits", "problem"),
    [
        (
            {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "4"},
            SLICE,
            "tke.cloud.tencent.com/qgpu-memory: requests 4 != limits 6 (qGPU needs them equal)",
        ),
        (
            {qgpu.RESOURCE_CORE: "12", qgpu.RESOURCE_MEMORY: "6"},
            {qgpu.RESOURCE_CORE: "12", qgpu.RESOURCE_MEMORY: "6"},
            "tke.cloud.tencent.com/qgpu-core: 12 is not a multiple of 5 from 5 (percent of a card)",
        ),
        (
            {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "6Gi"},
            {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "6Gi"},
            "tke.cloud.tencent.com/qgpu-memory: 6Gi is not a whole number of GiB (at least 1)",
        ),
        (
            {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "7"},
            {qgpu.RESOURCE_CORE: "10", qgpu.RESOURCE_MEMORY: "7"},
            "tke.cloud.tencent.com/qgpu-memory: 7 GiB is more than the pool's slice of 6 GiB (7 slices of 44 GiB)",
        ),
        (
            {qgpu.RESOURCE_CORE: "15", qgpu.RESOURCE_MEMORY: "6"},
            {qgpu.RESOURCE_CORE: "15", qgpu.RESOURCE_MEMORY: "6"},
            "tke.cloud.tencent.com/qgpu-core: 15 is more than the pool's slice of 10 (7 slices a card)",
        ),
    ],
    ids=[
        "requests-differ",
        "core-not-step-5",
        "memory-not-whole-gib",
        "memory-above-slice",
        "core-above-slice",
    ],
)
def test_a_malformed_qgpu_request(
    stack: Program, requests: dict[str, str], limits: dict[str, str], problem: str
) -> None:
    found = verdicts([*stack.resources, _deployment(requests, limits)])
    assert found == {"qgpu-request-shape": [f"Deployment vllm container server: {problem}."]}


def test_a_request_without_its_limit(stack: Program) -> None:
    found = verdicts([*stack.resources, _deployment(SLICE, {})])
    assert found == {
        "qgpu-request-shape": [
            f"Deployment vllm container server: {r}: a request without a limit (an extended resource needs its "
            "limit, equal to it)."
            for r in (qgpu.RESOURCE_CORE, qgpu.RESOURCE_MEMORY)
        ]
    }


# --------------------------------------------------------------------------------------------------------
# qgpu-measurement-fresh: Pulumi.qgpu.yaml's l20-qgpu was measured 2025-06-01; 2025-06-01 + 180 days is
# 2025-11-28 (June 29 + July 31 + August 31 + September 30 + October 31 + 28 = 180).

FRESH = "qgpu-measurement-fresh"
RE_MEASURE = (
    "Re-measure the largest process: qGPU enforces the slice, so a process that grew fails its allocations "
    "at the slice's edge."
)


def _qgpu_pool(config: dict[str, Any]) -> dict[str, Any]:
    (pool,) = [p for p in config["gpushare:pools"] if p["name"] == "l20-qgpu"]
    return pool


def test_a_qgpu_measurement_is_fresh_through_day_180(
    stack: Program, fixed_today: Callable[[date], None]
) -> None:
    fixed_today(date(2025, 11, 28))
    assert messages_of(FRESH, stack.resources) == []
    fixed_today(date(2025, 11, 29))
    assert messages_of(FRESH, stack.resources) == [
        f"qGPU pool l20-qgpu (sharing.measuredMiB 4621): measured 2025-06-01, 181 days ago, older than 180 days. "
        f"{RE_MEASURE}"
    ]


def test_the_stack_limit_tightens_and_the_pack_config_sets_the_qgpu_age(
    stack: Program, use_stack: Callable[..., None], fixed_today: Callable[[date], None]
) -> None:
    fixed_today(date(2025, 7, 2))  # 31 days after 2025-06-01
    assert messages_of(FRESH, stack.resources) == []
    assert messages_of(FRESH, stack.resources, {"maxMeasurementAgeDays": 30}) == [
        f"qGPU pool l20-qgpu (sharing.measuredMiB 4621): measured 2025-06-01, 31 days ago, older than 30 days. "
        f"{RE_MEASURE}"
    ]

    def thirty_days(config: dict[str, Any]) -> None:
        config["gpushare:sharing"]["maxMeasurementAgeDays"] = 30

    use_stack("qgpu", thirty_days)
    assert len(messages_of(FRESH, stack.resources)) == 1


def test_an_undated_qgpu_measurement_has_no_age(
    stack: Program, use_stack: Callable[..., None], fixed_today: Callable[[date], None]
) -> None:
    fixed_today(date(2025, 6, 2))

    def undated(config: dict[str, Any]) -> None:
        del _qgpu_pool(config)["sharing"]["measuredAt"]

    use_stack("qgpu", undated)
    assert messages_of(FRESH, stack.resources) == [
        f"qGPU pool l20-qgpu (sharing.measuredMiB 4621): no measuredAt, so its age is unknown. {RE_MEASURE}"
    ]


def test_a_misspelt_age_key_is_named(stack: Program, fixed_today: Callable[[date], None]) -> None:
    fixed_today(date(2025, 6, 2))
    assert messages_of(FRESH, stack.resources, {"maxMeasurementAgeDay": 30}) == [
        "policy config: unknown property 'maxMeasurementAgeDay'; this policy takes maxMeasurementAgeDays (a "
        "misspelt key would leave the default in force). Fix the --policy-pack-config file."
    ]


# --------------------------------------------------------------------------------------------------------
# qgpu-request-shape: which containers and which pools


def test_a_container_asking_for_core_alone_is_judged(stack: Program) -> None:
    core_only = {qgpu.RESOURCE_CORE: "12"}
    assert verdicts([*stack.resources, _deployment(core_only, core_only)]) == {
        "qgpu-request-shape": [
            "Deployment vllm container server: tke.cloud.tencent.com/qgpu-core: 12 is not a multiple of 5 from 5 "
            "(percent of a card)."
        ]
    }


def test_a_workload_placed_nowhere_in_particular_is_held_to_every_qgpu_slice(stack: Program) -> None:
    """Without a nodeSelector it may land on any pool: the L20 slice (6 GiB) is the one it must fit."""
    unplaced = _deployment({**SLICE, qgpu.RESOURCE_MEMORY: "7"}, {**SLICE, qgpu.RESOURCE_MEMORY: "7"})
    del unplaced.props["spec"]["template"]["spec"]["nodeSelector"]
    assert verdicts([*stack.resources, unplaced]) == {
        "qgpu-request-shape": [
            "Deployment vllm container server: tke.cloud.tencent.com/qgpu-memory: 7 GiB is more than the pool's "
            "slice of 6 GiB (7 slices of 44 GiB)."
        ]
    }


def test_a_workload_selecting_no_qgpu_pool_is_still_held_to_the_qgpu_slices(stack: Program) -> None:
    """Placed on the T4 pool, which TKE's qGPU does not serve: the request can only ever be met by a qGPU
    pool, so it is judged against them all rather than waved through."""
    t4 = _deployment(
        {**SLICE, qgpu.RESOURCE_MEMORY: "7"},
        {**SLICE, qgpu.RESOURCE_MEMORY: "7"},
        {kube_names.LABEL_POOL: "t4"},
    )
    assert verdicts([*stack.resources, t4])["qgpu-request-shape"] == [
        "Deployment vllm container server: tke.cloud.tencent.com/qgpu-memory: 7 GiB is more than the pool's "
        "slice of 6 GiB (7 slices of 44 GiB)."
    ]


def test_a_workload_whose_placement_is_unknown_at_preview_is_held_to_every_qgpu_slice(stack: Program) -> None:
    """A nodeSelector value computed by another resource is unknown at preview: where the pod lands is
    unknown, so every qGPU slice is the bound."""
    unknown = _deployment(
        {**SLICE, qgpu.RESOURCE_MEMORY: "7"},
        {**SLICE, qgpu.RESOURCE_MEMORY: "7"},
        {kube_names.LABEL_POOL: UNKNOWN},
    )
    assert verdicts([*stack.resources, unknown]) == {
        "qgpu-request-shape": [
            "Deployment vllm container server: tke.cloud.tencent.com/qgpu-memory: 7 GiB is more than the pool's "
            "slice of 6 GiB (7 slices of 44 GiB)."
        ]
    }


# --------------------------------------------------------------------------------------------------------
# qgpu-addon-present: values that are not a plain JSON string


def test_values_that_are_no_string_are_left_to_the_provider(stack: Program) -> None:
    """A map where the SDK takes a string (a TypeScript program could pass one): the provider's Check
    refuses it, so the policy neither judges nor fails on it."""

    def as_map(res: Res) -> None:
        res.props["rawValues"] = {"config": {"priority": "binpack"}}

    assert verdicts(_changed(stack, ADDON, as_map)) == {}


def test_base64_with_a_line_break_is_not_json(stack: Program) -> None:
    """`base64 | fold` output: not the plain JSON the provider encodes, and not strict base64 either."""

    def folded(res: Res) -> None:
        encoded = base64.b64encode(res.props["rawValues"].encode()).decode()
        res.props["rawValues"] = encoded[:16] + "\n" + encoded[16:]

    assert verdicts(_changed(stack, ADDON, folded)) == {
        "qgpu-addon-present": ["TKE add-on qgpu (gpushare-qgpu-addon) rawValues is not JSON."]
    }


def test_a_foreign_qgpu_pool_first_does_not_hide_the_stale_one(
    stack: Program, fixed_today: Callable[[date], None]
) -> None:
    """A qGPU-labelled native pool the stack config does not name (another team's) comes first: gpushare's
    own pool is still aged."""
    fixed_today(date(2025, 11, 29))
    foreign = copy.deepcopy(stack.get(NATIVE_POOL))
    foreign.name = "team-b-qgpu-pool"
    foreign.props["name"] = "team-b-qgpu"
    _set_labels(foreign, {qgpu.LABEL_DEVICE_ENABLE: "enable"})
    assert messages_of(FRESH, [foreign, *stack.resources]) == [
        f"qGPU pool l20-qgpu (sharing.measuredMiB 4621): measured 2025-06-01, 181 days ago, older than 180 days. "
        f"{RE_MEASURE}"
    ]


def test_a_pool_whose_labels_are_unknown_does_not_hide_the_next_ones_plugin_switch(stack: Program) -> None:
    """At preview a pool's labels may be computed elsewhere (unknown): nothing says it is a qGPU pool, so it
    is not judged, and another team's qGPU pool after it, which leaves TKE's switch on, still is."""
    unknown = copy.deepcopy(stack.get(NATIVE_POOL))
    unknown.props["labels"] = UNKNOWN
    foreign = copy.deepcopy(stack.get(NATIVE_POOL))
    foreign.name = "team-b-qgpu-pool"
    foreign.props["name"] = "team-b-qgpu"
    _set_labels(foreign, {qgpu.LABEL_DEVICE_ENABLE: "enable"})
    rest = [r for r in stack.resources if r.name != NATIVE_POOL]
    keep_off = (
        "would run an NVIDIA device plugin on its nodes, advertising the cards qGPU slices as nvidia.com/gpu "
        "too (allocated twice). Keep it off: nvidia-device-enable=disable for TKE's, a nodeSelector that "
        "excludes the pool for others, nvidia.com/gpu.deploy.operands=false for the GPU Operator's."
    )
    assert messages_of("qgpu-no-nvidia-plugin", [unknown, foreign, *rest]) == [
        "qGPU node pool team-b-qgpu must be labelled nvidia-device-enable=disable and has no such label (TKE "
        "labels GPU nodes `enable`): TKE's NVIDIA plugin would advertise the cards qGPU slices as nvidia.com/gpu "
        "too, and they would be allocated twice.",
        "qGPU node pool team-b-qgpu: TKE DaemonSet kube-system/nvidia-device-plugin-daemonset (nodeSelector "
        f"nvidia-device-enable=enable) {keep_off}",
        "qGPU node pool team-b-qgpu: Helm release gpu-operator/gpu-operator (chart gpu-operator v26.7.0) "
        f"(nodeSelector any node + required node affinity) {keep_off}",
    ]
