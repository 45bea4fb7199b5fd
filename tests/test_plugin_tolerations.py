"""plugin_tolerations: which pool taints each mode's plugin tolerates (the pinned charts' values), the
tolerations helm mode renders, and the GPU Operator labels that switch off what a pool needs."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from conftest import HELM_MIG, stack_file
from test_policies import program

from gpushare.plugin_tolerations import disabled_operand, helm_tolerations, untolerated_taint

DEDICATED = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
# The device-plugin chart 0.17.1's values.yaml `tolerations`, as written there.
CHART_DEFAULTS = [
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]


def test_helm_renders_the_chart_defaults_then_each_other_blocking_taint_once() -> None:
    assert helm_tolerations([]) == CHART_DEFAULTS
    taints = [
        DEDICATED,
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},  # the chart tolerates it
        {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoExecute"},  # likewise, every effect
        {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},  # never keeps a DaemonSet off
        dict(DEDICATED),  # a second pool with the same taint
        {"key": "nvidia.com/gpu", "value": "", "effect": "NoExecute"},
    ]
    assert helm_tolerations(taints) == [
        *CHART_DEFAULTS,
        {"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "", "effect": "NoExecute"},
    ]


def test_only_the_operator_refuses_a_taint() -> None:
    gpu_no_execute = {"key": "nvidia.com/gpu", "value": "", "effect": "NoExecute"}
    for mode in ("daemonsets", "helm"):
        assert untolerated_taint(mode, [DEDICATED, gpu_no_execute]) is None
    gpu_no_schedule = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    prefer = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    assert untolerated_taint("gpu-operator", [gpu_no_schedule, prefer]) is None
    found = untolerated_taint("gpu-operator", [gpu_no_schedule, prefer, gpu_no_execute])
    assert found is not None and found[0] == 2
    assert found[1].startswith(
        "nvidia.com/gpu=:NoExecute is not tolerated by the GPU Operator's ClusterPolicy"
    )


def test_operator_labels_that_switch_off_what_a_pool_needs() -> None:
    off = "false"
    assert disabled_operand("helm", {"nvidia.com/gpu.deploy.device-plugin": off}, mig=False) is None
    assert disabled_operand("gpu-operator", {"nvidia.com/gpu.deploy.dcgm-exporter": off}, mig=True) is None
    # The MIG manager and GFD matter on MIG pools only; the operator matches `false` exactly.
    assert disabled_operand("gpu-operator", {"nvidia.com/gpu.deploy.mig-manager": off}, mig=False) is None
    assert (
        disabled_operand("gpu-operator", {"nvidia.com/gpu.deploy.device-plugin": "False"}, mig=False) is None
    )
    for label, mig in (
        ("nvidia.com/gpu.deploy.operands", False),
        ("nvidia.com/gpu.deploy.device-plugin", False),
        ("nvidia.com/gpu.deploy.mig-manager", True),
        ("nvidia.com/gpu.deploy.gpu-feature-discovery", True),
    ):
        found = disabled_operand("gpu-operator", {label: off}, mig=mig)
        assert found is not None and found[0] == label


def test_the_program_gives_the_helm_release_every_pool_taint(tmp_path: Path) -> None:
    document = yaml.safe_load(stack_file(HELM_MIG).read_text())
    pools = document["config"]["gpushare:pools"]
    pools[0]["taints"] = [copy.deepcopy(DEDICATED)]
    pools[1]["taints"] = [copy.deepcopy(DEDICATED), {"key": "team", "value": "nlp", "effect": "NoExecute"}]
    changed = tmp_path / f"Pulumi.{HELM_MIG}.yaml"
    changed.write_text(yaml.safe_dump(document, sort_keys=False))
    [release] = [r for r in program(HELM_MIG, changed).resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert release.props["values"]["tolerations"] == [
        *CHART_DEFAULTS,
        {"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "nlp", "effect": "NoExecute"},
    ]
