"""gpushare.offline.policy_driver's requests on their own: the resource options a pack's Analyze sees.

The engine fills `AnalyzerResourceOptions.parent` with the parent's URN and leaves it empty for a root
(pkg/resource/plugin/analyzer_plugin.go, `marshalResourceOptions`: `Parent: string(opts.Parent)`), and
sends customTimeouts even when unset; the stack-level `AnalyzerResource.parent` is the same URN. A policy
reads them as `args.opts.parent` / `resource.parent`. tests/test_policy_driver.py runs a pack process;
these pin the messages without one.
"""

from __future__ import annotations

from gpushare.offline.policy_driver import _analyze_request, _stack_resource
from gpushare.offline.policy_model import AnalyzedResource

CLUSTER = "urn:pulumi:prod::gpushare::gpushare:index:GpuSharingCluster::cluster"
CONFIG_MAP = (
    "urn:pulumi:prod::gpushare::gpushare:index:GpuSharingCluster$kubernetes:core/v1:ConfigMap::plugin-config"
)


def test_a_child_carries_its_parents_urn_in_its_options() -> None:
    child = AnalyzedResource("kubernetes:core/v1:ConfigMap", "plugin-config", CONFIG_MAP, {}, parent=CLUSTER)
    request = _analyze_request(child, {})
    assert (request.urn, request.options.parent, request.options.protect) == (CONFIG_MAP, CLUSTER, False)
    assert _stack_resource(child, {}).parent == CLUSTER


def test_a_root_has_an_empty_parent_and_a_protected_one_says_so() -> None:
    root = AnalyzedResource("gpushare:index:GpuSharingCluster", "cluster", CLUSTER, {}, protect=True)
    request = _analyze_request(root, {})
    assert (request.options.parent, request.options.protect) == ("", True)
    assert request.options.HasField("customTimeouts")
    assert _stack_resource(root, {}).parent == ""
