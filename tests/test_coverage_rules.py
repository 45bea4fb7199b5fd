"""policies/gpushare_policies/coverage_rules.py: judged-without-stack-config names what the pack could not
judge on a stack gpushare did not write (no PULUMI_CONFIG here); the resources are prod's from the real
program (tests/test_policies.py's helpers), each case a subset of them."""

from __future__ import annotations

from test_policies import Program, _isolated_environment, messages_of, prod

__all__ = ["_isolated_environment", "prod"]  # fixtures used by name below

NO_POOLS = (
    "where the device plugins land: the stack declares no node pools, so one plugin per node, the pools' "
    "labels and MIG placement were checked against none"
)


def _advisory(not_judged: str) -> str:
    return (
        f"PULUMI_CONFIG is empty: judged by what its resources carry. Not judged: {not_judged}. A stack with "
        "gpushare: config (pools with measurements), or a gpushare.io/tuning-<key> annotation on the config, "
        "lets the pack judge these too."
    )


def test_a_plugin_daemon_set_without_node_pools_is_named(prod: Program) -> None:
    # The ConfigMap's keys carry their tuning annotations: only the placement is unjudged.
    resources = [prod.get("gpushare-config-configmap"), prod.get("gpushare-plugins-l20")]
    assert messages_of("judged-without-stack-config", resources) == [_advisory(NO_POOLS)]


def test_with_the_node_pools_there_is_nothing_left_unjudged(prod: Program) -> None:
    """The near miss: the same plugin beside its node pools."""
    assert messages_of("judged-without-stack-config", prod.resources) == []


def test_tkes_own_daemon_set_alone_is_no_plugin_of_the_stack(prod: Program) -> None:
    """The pack assumes TKE's DaemonSet on every cluster; a stack that holds only a config (or nothing)
    places no plugin, so there is no placement left unjudged."""
    assert messages_of("judged-without-stack-config", [prod.get("gpushare-config-configmap")]) == []
    assert messages_of("judged-without-stack-config", []) == []
