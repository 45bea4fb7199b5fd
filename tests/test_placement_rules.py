"""policies/gpushare_policies/placement_rules.py: a mig-parted ConfigMap is judged against its pool's GPU
whether the stack config or only the node pool names that GPU.

The resources are the real program's for tests/fixtures/stacks/Pulumi.helm-mig.yaml (tests/test_policies.py's
helpers): ConfigMap kube-system/gpushare-mig-parted-config-h20, labelled gpushare.io/pool=h20, and node pool
h20 labelled gpushare.io/gpu-model=H20. NVIDIA's MIG table allows at most 7 x 1g.12gb per H20, so 8 cannot fit.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from conftest import HELM_MIG
from test_policies import Program, Res, _isolated_environment, program, stack_messages, staging, use_stack

from gpushare import kube_names
from gpushare.resource_types import NODE_POOL
from gpushare_policies import rules

__all__ = ["_isolated_environment", "staging", "use_stack"]  # fixtures used by name below

MIG_PARTED = "gpushare-mig-parted-config-h20"
MIG_PARTED_URN = f"urn:pulumi:{HELM_MIG}::gpushare::kubernetes:core/v1:ConfigMap::gpushare-h20-mig-mig-parted"
EIGHT_SMALL = (
    "version: v1\nmig-configs:\n  all-1g.12gb:\n  - devices: all\n"
    '    mig-enabled: true\n    mig-devices:\n      "1g.12gb": 8\n'
)


def mig_capable(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["mig-only-on-mig-capable-gpus"], resources)  # type: ignore[arg-type]


def _edited(staging: Program, pool_label: str = "h20") -> list[Res]:
    config_map = copy.deepcopy(staging.get("gpushare-h20-mig-mig-parted"))
    config_map.props["data"]["config.yaml"] = EIGHT_SMALL
    config_map.props["metadata"]["labels"][kube_names.LABEL_POOL] = pool_label
    return staging.but(config_map)


def _too_many(pool: str) -> tuple[str, str]:
    return (
        f'ConfigMap kube-system/{MIG_PARTED} key "config.yaml" (pool {pool}, H20): '
        "mig-configs.all-1g.12gb[0].mig-devices: does not fit H20: 1g.12gb x8: at most 7 per GPU",
        MIG_PARTED_URN,
    )


def test_a_mig_parted_layout_is_judged_on_the_node_pools_gpu_without_stack_config(staging: Program) -> None:
    assert mig_capable(staging.resources) == []  # no PULUMI_CONFIG; the program's layout fits
    assert mig_capable(_edited(staging)) == [_too_many("h20")]


def test_a_mig_parted_layout_is_judged_on_the_stack_pools_gpu(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert mig_capable(_edited(staging)) == [_too_many("h20")]


def test_a_mig_parted_config_map_for_a_pool_nobody_names_is_not_judged(staging: Program) -> None:
    """The near miss: no stack pool and no node pool a100, so no GPU to fit the layout to."""
    assert mig_capable(_edited(staging, pool_label="a100")) == []


def test_a_pools_mig_parted_layout_is_judged_after_a_config_map_no_pool_label_names(staging: Program) -> None:
    """Another team's copy of the layout, without the pool label and listed first, is nobody's pool's (not
    judged); the h20 pool's ConfigMap after it still is."""
    edited = _edited(staging)
    unlabelled = copy.deepcopy(next(r for r in edited if r.name == "gpushare-h20-mig-mig-parted"))
    unlabelled.name = "team-mig-parted"
    unlabelled.props["metadata"]["name"] = "team-mig-parted-config"
    del unlabelled.props["metadata"]["labels"][kube_names.LABEL_POOL]
    assert mig_capable([unlabelled]) == []
    assert mig_capable([unlabelled, *edited]) == [_too_many("h20")]


# --------------------------------------------------------------------------------------------------------
# gpu-pool-labels: a CPU pool of the same stack is not a GPU pool, and the GPU pools after it are judged


def pool_labels(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["gpu-pool-labels"], resources)  # type: ignore[arg-type]


def test_a_gpu_pool_after_a_cpu_pool_must_still_carry_the_plugin_labels(
    use_stack: Callable[..., None],
) -> None:
    """prod (TKE's plugin adopted: its pools must say nvidia-device-enable=enable), with a CPU node pool of
    the user's own registered first: S5.2XLARGE16 is no GPU instance and the pool names no GPU model, so no
    label is asked of it; the t4 pool after it, without its switch label, is reported."""
    use_stack("prod")
    prod = program("prod")
    t4 = copy.deepcopy(prod.get("gpushare-t4-pool"))
    cpu = copy.deepcopy(t4)
    cpu.name = "web-pool"
    cpu.props["name"] = "web"
    cpu.props["autoScalingConfig"]["instanceType"] = "S5.2XLARGE16"
    cpu.props["labels"] = {"app": "web"}
    assert pool_labels([cpu]) == []
    del t4.props["labels"][kube_names.LABEL_DEVICE_ENABLE]
    assert pool_labels([cpu, *prod.but(t4)]) == [
        (
            "node pool t4 (T4) lacks the label(s) its device plugin selects on: nvidia-device-enable=enable.",
            f"urn:pulumi:prod::gpushare::{NODE_POOL}::gpushare-t4-pool",
        )
    ]


def test_without_stack_config_tkes_patched_daemonset_beside_gpushares_own_still_asks_enable() -> None:
    """Issue 39 (placement_rules `patched = any(...)`): no stack config (the pack on a program read without
    PULUMI_CONFIG), and prod's program patches TKE's DaemonSet (adopt) beside gpushare's own plugin
    DaemonSets. One patched managed DaemonSet is enough for TKE's switch to be `enable` on every GPU pool:
    a t4 pool labelled `disable` is reported (with all(...) the unpatched own DaemonSets would make any
    value pass)."""
    prod = program("prod")
    t4 = copy.deepcopy(prod.get("gpushare-t4-pool"))
    t4.props["labels"][kube_names.LABEL_DEVICE_ENABLE] = "disable"
    assert pool_labels(prod.but(t4)) == [
        (
            "node pool t4 (T4) lacks the label(s) its device plugin selects on: nvidia-device-enable=enable.",
            f"urn:pulumi:prod::gpushare::{NODE_POOL}::gpushare-t4-pool",
        )
    ]


@pytest.mark.parametrize(
    "first_values",
    [
        # Runs no plugin: skipped.
        {"devicePlugin": {"enabled": False}},
        # Its nodeSelector names no pool's label: blocked on no pool (it never meant to land there).
        {"nodeSelector": {"example.com/pool": "cpu-only"}},
    ],
    ids=["disabled", "selector-skips-every-pool"],
)
def test_a_chart_release_after_one_that_is_not_judged_is_still_judged(
    staging: Program, use_stack: Callable[..., None], first_values: dict[str, object]
) -> None:
    """A first release of the chart the rule passes over does not end the check: the release after it
    still schedules on no H20 or L20 node once the pools lose nvidia.com/gpu.present=true (no NFD in this
    stack), as in the stack without the first release."""
    use_stack(HELM_MIG)
    unlabelled = copy.deepcopy(staging.resources)
    for res in unlabelled:
        res.props.get("labels", {}).pop(kube_names.LABEL_GPU_PRESENT, None)
    release = next(r for r in unlabelled if r.name == "gpushare-device-plugin-release")
    first = copy.deepcopy(release)
    first.name = "other-device-plugin-release"
    first.props["name"] = "other-device-plugin"
    first.props["values"].update(first_values)
    schedulable = rules.POLICIES_BY_NAME["helm-plugin-schedulable"]
    found = stack_messages(schedulable, [first, *unlabelled])  # type: ignore[arg-type]
    assert found == [
        (
            "Helm release nvidia-device-plugin/nvidia-device-plugin (chart nvidia-device-plugin 0.17.1) "
            "schedules on no node of pool(s) h20, l20 (on no GPU pool at all): chart >= 0.15 requires NFD's "
            "NVIDIA PCI label or nvidia.com/gpu.present=true on the node, and there is no "
            "node-feature-discovery (gfd.enabled / nfd.enabled, or sharing.devicePlugin.nfdPresent). Label "
            "the pools nvidia.com/gpu.present=true or enable GFD.",
            release.urn,
        )
    ]
