"""policies/gpushare_policies/stack_view.py: what the pack sees of a stack `gpushare check` hands it, with the
objects a Helm release's chart rendered as children of the release.

The resources are what `check` passes the pack for the dev stack (Pulumi.dev.yaml: NVIDIA's device-plugin
chart 0.17.1 from the pinned charts, pools t4): the real program run offline, then every object Helm
rendered from the chart, each a child of its Release (gpushare.offline.check.analyzed_resources).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import PROJECT_DIR, pinned_charts
from test_policies import _isolated_environment, all_messages, mandatory, stack_messages

from gpushare.offline.chart_render import render_releases
from gpushare.offline.chart_sources import ChartSources
from gpushare.offline.check import analyzed_resources
from gpushare.offline.render import redacted_resources, run_stack
from gpushare.resource_types import HELM_RELEASE, is_chart_rendered
from gpushare_policies import rules

__all__ = ["_isolated_environment"]  # fixture used by name below

STACK = "dev"
SCHEMA = "1.30.0"  # the dev stack's cluster version's schemas, as check validates them


@dataclass
class Checked:
    """One resource as check hands it to the pack (test_policies' helpers read type, name, props, urn)."""

    type: str
    name: str
    props: dict[str, Any]
    urn: str


@pytest.fixture(scope="module")
def checked() -> list[Checked]:
    pinned_charts()
    stack_run = run_stack(PROJECT_DIR, STACK)
    releases = render_releases(redacted_resources(stack_run.run), ChartSources.from_environment(), SCHEMA)
    return [
        Checked(r.type, r.name, dict(r.properties), r.urn) for r in analyzed_resources(stack_run, releases)
    ]


def _one_plugin_per_node(resources: list[Checked]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["one-device-plugin-per-node"], resources)  # type: ignore[arg-type]


def _charts_plugin(resources: list[Checked]) -> Checked:
    """The chart's device-plugin DaemonSet (the chart also renders its MPS control daemon's)."""
    (found,) = [
        r
        for r in resources
        if is_chart_rendered(r.urn)
        and r.type == "kubernetes:apps/v1:DaemonSet"
        and r.name.endswith(":nvidia-device-plugin/nvidia-device-plugin")
    ]
    return found


def test_the_charts_own_daemon_set_is_its_release_not_a_second_plugin(checked: list[Checked]) -> None:
    (release,) = [r for r in checked if r.type == HELM_RELEASE]
    daemon_set = _charts_plugin(checked)
    # The chart's plugin DaemonSet, a child of the release (the engine's child URN, name after the release's).
    assert daemon_set.name == f"{release.name}:nvidia-device-plugin/nvidia-device-plugin"
    assert daemon_set.urn.startswith(f"{release.urn.rpartition('::')[0]}$kubernetes:apps/v1:DaemonSet::")
    # It is the release the pack already models: nothing runs twice on a node, every mandatory policy passes.
    assert _one_plugin_per_node(checked) == []
    assert mandatory(all_messages(checked)) == {}  # type: ignore[arg-type]


def test_the_same_daemon_set_from_a_release_the_stack_does_not_hold_is_a_second_plugin(
    checked: list[Checked],
) -> None:
    """The near miss: the chart's DaemonSet under another Release's URN (a chart the pack does not model)
    is a plugin of its own and lands on the same pool as the device-plugin release."""
    daemon_set = _charts_plugin(checked)
    other_name = f"vendor-plugins:{daemon_set.name.partition(':')[2]}"
    other = dataclasses.replace(
        daemon_set,
        name=other_name,
        urn=f"{daemon_set.urn.rpartition('::')[0]}::{other_name}",
    )
    # Both of dev's pools (t4, and since issue 37 the MPS l20) host the chart's plugin.
    expected = []
    for name in ("t4", "l20"):
        pool = next(r for r in checked if r.name == f"gpushare-{name}-pool")
        expected.append(
            (
                f"node pool {name}: 2 device plugins would run on each of its nodes: DaemonSet "
                "nvidia-device-plugin/nvidia-device-plugin (nodeSelector any node + required node affinity); Helm "
                "release nvidia-device-plugin/nvidia-device-plugin (chart nvidia-device-plugin 0.17.1) (nodeSelector "
                "any node + required node affinity). They register the same resources with the kubelet and fight "
                "over them; opt the pools out of TKE's plugin (managedPlugin.action optOut labels them "
                "nvidia-device-enable=disable), park it, or narrow the nodeSelectors so that one plugin serves each "
                "pool.",
                pool.urn,
            )
        )
    assert _one_plugin_per_node([r if r is not daemon_set else other for r in checked]) == expected
