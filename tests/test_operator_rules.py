"""policies/gpushare_policies/operator_rules.py: operator-driver-consistent, on the real program's GPU
Operator stack (Pulumi.staging.yaml: release gpu-operator/gpu-operator, chart v26.7.0, `driver.enabled:
false`; pools h20 and l20, neither naming a TKE driver), each case one change to it (tests/test_policies.py's
helpers; the same verdicts through the real protocol: tests/test_check.py, e2e).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_policies import UNKNOWN, Program, Res, _isolated_environment, program, stack_messages

from gpushare import kube_names
from gpushare_policies import rules

__all__ = ["_isolated_environment"]  # a fixture used by name below

RELEASE = "gpushare-gpu-operator-release"
OPERATOR = "Helm release gpu-operator/gpu-operator (chart gpu-operator v26.7.0)"
TKE_DEFAULT = "TKE's GPU node set-up installs its driver (no nodeConfig.gpuArgs.driver: TKE's default)"


@pytest.fixture(scope="module")
def operator_stack() -> Program:
    return program("staging")


def driver_verdicts(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["operator-driver-consistent"], resources)  # type: ignore[arg-type]


def competing(pool: str, stated: str, tke: str = TKE_DEFAULT) -> tuple[str, str]:
    return (
        f"node pool {pool}: {OPERATOR} values.driver.enabled is {stated}, and {tke}: two installers compete "
        "for one node's NVIDIA kernel module (the operator's driver container against the host's driver), and "
        "every operand waits on it. Set driver.enabled false (gpuOperator.driverEnabled) or label the pool "
        f"{kube_names.LABEL_OPERATOR_DEPLOY_PREFIX}driver=false.",
        f"urn:pulumi:staging::gpushare::tencentcloud:Kubernetes/nodePool:NodePool::gpushare-{pool}-pool",
    )


def _with_driver(operator_stack: Program, setting: Any) -> list[Res]:
    resources = copy.deepcopy(operator_stack.resources)
    values = next(r for r in resources if r.name == RELEASE).props["values"]
    if setting is None:
        del values["driver"]
    else:
        values["driver"] = {"enabled": setting}
    return resources


@pytest.mark.parametrize(
    ("setting", "stated"),
    [
        (False, None),  # the program's: TKE's driver only
        ("false", None),  # a string the chart reads as false
        (UNKNOWN, None),  # unknown during preview: nothing to judge yet
        (True, "true"),
        (None, "unset (the chart's default is true)"),
    ],
)
def test_an_operator_driver_beside_tkes_is_refused_on_every_pool(
    operator_stack: Program, setting: Any, stated: str | None
) -> None:
    expected = [] if stated is None else [competing("h20", stated), competing("l20", stated)]
    assert driver_verdicts(_with_driver(operator_stack, setting)) == expected


@pytest.mark.parametrize(("skipped", "refused"), [("l20", "h20"), ("h20", "l20")])
def test_a_pool_the_operators_driver_skips_is_not_refused(
    operator_stack: Program, skipped: str, refused: str
) -> None:
    """Either pool: the one labelled nvidia.com/gpu.deploy.driver=false is skipped, and the other (h20
    comes first in the program) is still judged."""
    resources = _with_driver(operator_stack, True)
    pool = next(r for r in resources if r.name == f"gpushare-{skipped}-pool")
    pool.props["labels"][kube_names.LABEL_OPERATOR_DEPLOY_PREFIX + "driver"] = "false"
    assert driver_verdicts(resources) == [competing(refused, "true")]


def test_the_driver_tke_installs_is_named(operator_stack: Program) -> None:
    resources = _with_driver(operator_stack, True)
    h20 = next(r for r in resources if r.name == "gpushare-h20-pool")
    h20.props["nodeConfig"]["gpuArgs"]["driver"] = {"name": "NVIDIA", "version": "535.161.08"}
    l20 = next(r for r in resources if r.name == "gpushare-l20-pool")
    l20.props["nodeConfig"]["gpuArgs"]["customDriver"] = {"address": "https://example.com/driver.run"}
    assert driver_verdicts(resources) == [
        competing("h20", "true", "TKE installs driver 535.161.08 (nodeConfig.gpuArgs.driver)"),
        competing("l20", "true", "TKE installs a custom driver (nodeConfig.gpuArgs.customDriver)"),
    ]


def test_a_pool_whose_labels_are_unknown_during_preview_is_not_judged(operator_stack: Program) -> None:
    resources = _with_driver(operator_stack, True)
    next(r for r in resources if r.name == "gpushare-h20-pool").props["labels"] = UNKNOWN
    assert driver_verdicts(resources) == [competing("l20", "true")]


# --------------------------------------------------------------------------------------------------------
# mig-config-exists: the layout a pool's label names must fit the pool's GPU

MIG_PARTED = "gpushare-gpu-operator-mig-parted-config"
EIGHT_SMALL = "  all-1g.12gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.12gb: 8\n"


def _h20_labelled(operator_stack: Program, wanted: str) -> list[Res]:
    resources = copy.deepcopy(operator_stack.resources)
    mig_parted = next(r for r in resources if r.name == MIG_PARTED)
    mig_parted.props["data"][kube_names.MIG_PARTED_CONFIG_KEY] += EIGHT_SMALL
    h20 = next(r for r in resources if r.name == "gpushare-h20-pool")
    h20.props["labels"][kube_names.LABEL_MIG_CONFIG] = wanted
    return resources


def test_a_labelled_mig_layout_that_does_not_fit_the_pools_gpu_is_refused(operator_stack: Program) -> None:
    policy = rules.POLICIES_BY_NAME["mig-config-exists"]
    assert stack_messages(policy, operator_stack.resources) == []  # type: ignore[arg-type]
    # The near miss: the file holds the too-large layout too, but the label names the one that fits.
    assert stack_messages(policy, _h20_labelled(operator_stack, "h20-6x1g.12gb-1x1g.24gb")) == []  # type: ignore[arg-type]
    ((message, urn),) = stack_messages(policy, _h20_labelled(operator_stack, "all-1g.12gb"))  # type: ignore[arg-type]
    name = next(r for r in operator_stack.resources if r.name == MIG_PARTED).props["metadata"]["name"]
    # NVIDIA's MIG table: at most 7 x 1g.12gb per H20.
    assert message == (
        f"node pool h20: label {kube_names.LABEL_MIG_CONFIG}=all-1g.12gb: config 'all-1g.12gb' in ConfigMap "
        f"gpu-operator/{name} does not fit this pool's H20: mig-configs.all-1g.12gb[0].mig-devices: does not "
        "fit H20: 1g.12gb x8: at most 7 per GPU"
    )
    assert urn == "urn:pulumi:staging::gpushare::tencentcloud:Kubernetes/nodePool:NodePool::gpushare-h20-pool"


# --------------------------------------------------------------------------------------------------------
# mig-config-exists: a label value gpushare does not generate, with and without the operator's release


def _mig_verdicts(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["mig-config-exists"], resources)  # type: ignore[arg-type]


def _operator_generating(operator_stack: Program, wanted: str) -> list[Res]:
    """The operator's MIG manager told no ConfigMap (`migManager.config.name` empty), the h20 pool labelled."""
    resources = copy.deepcopy(operator_stack.resources)
    release = next(r for r in resources if r.name == RELEASE)
    release.props["values"]["migManager"]["config"]["name"] = ""
    h20 = next(r for r in resources if r.name == "gpushare-h20-pool")
    h20.props["labels"][kube_names.LABEL_MIG_CONFIG] = wanted
    return resources


H20_URN = "urn:pulumi:staging::gpushare::tencentcloud:Kubernetes/nodePool:NodePool::gpushare-h20-pool"


def test_a_label_the_operator_cannot_generate_is_refused_when_it_reads_no_configmap(
    operator_stack: Program,
) -> None:
    # The MIG manager with no config name builds its file from the hardware: only all-* configs exist there.
    assert _mig_verdicts(_operator_generating(operator_stack, "h20-6x1g.12gb-1x1g.24gb")) == [
        (
            f"node pool h20: label {kube_names.LABEL_MIG_CONFIG}=h20-6x1g.12gb-1x1g.24gb, but {OPERATOR} sets no "
            "values.migManager.config.name: the MIG manager generates its config from the hardware, which holds "
            "only all-* configs (e.g. all-disabled). Name a mig-parted ConfigMap holding "
            "'h20-6x1g.12gb-1x1g.24gb'.",
            H20_URN,
        )
    ]


@pytest.mark.parametrize("wanted", ["all-disabled", "all-1g.12gb", "all-"])
def test_a_generated_all_label_is_not_refused_when_the_operator_generates(
    operator_stack: Program, wanted: str
) -> None:
    assert _mig_verdicts(_operator_generating(operator_stack, wanted)) == []


def _without_operator(operator_stack: Program, wanted: str, *, pool_labelled_config: bool) -> list[Res]:
    """The release gone; the mig-parted ConfigMap optionally labelled for the h20 pool as gpushare labels its
    per-pool ConfigMaps in the modes without an operator."""
    resources = [copy.deepcopy(r) for r in operator_stack.resources if r.name != RELEASE]
    if pool_labelled_config:
        mig_parted = next(r for r in resources if r.name == MIG_PARTED)
        mig_parted.props["metadata"]["labels"][kube_names.LABEL_POOL] = "h20"
    h20 = next(r for r in resources if r.name == "gpushare-h20-pool")
    h20.props["labels"][kube_names.LABEL_MIG_CONFIG] = wanted
    return resources


def test_without_the_operator_a_label_no_pool_configmap_holds_is_refused(operator_stack: Program) -> None:
    resources = _without_operator(operator_stack, "h20-custom", pool_labelled_config=True)
    name = next(r for r in resources if r.name == MIG_PARTED).props["metadata"]["name"]
    ((message, urn),) = _mig_verdicts(resources)
    # The file staging renders holds all-disabled and the layout its h20 pool uses.
    assert message == (
        f"node pool h20: label {kube_names.LABEL_MIG_CONFIG}=h20-custom names no config in ConfigMap "
        f"gpu-operator/{name} (configs: all-disabled, h20-6x1g.12gb-1x1g.24gb); the MIG manager fails on "
        "these nodes and leaves their GPUs as they are"
    )
    assert urn == H20_URN
    # Without an operator there is no generated file: an all-* name must be in the pool's file as well.
    ((message, _),) = _mig_verdicts(
        _without_operator(operator_stack, "all-1g.12gb", pool_labelled_config=True)
    )
    assert "=all-1g.12gb names no config in ConfigMap" in message
    # A name the pool's file holds passes.
    assert _mig_verdicts(_without_operator(operator_stack, "all-disabled", pool_labelled_config=True)) == []


def test_without_the_operator_or_a_pool_configmap_nothing_reads_the_label(operator_stack: Program) -> None:
    # No MIG manager is configured for the pool at all: nothing to judge the label against.
    assert _mig_verdicts(_without_operator(operator_stack, "h20-custom", pool_labelled_config=False)) == []
