"""gpushare.offline.policy_model: a diagnostic's resource type and name, read from its URN as `pulumi preview`
shows them in the "Policies:" block (`(type: name)` after the policy, nothing when the URN is not a
resource's)."""

from __future__ import annotations

import pytest

from gpushare.offline.policy_model import Diagnostic, PackReport, root_stack_urn
from gpushare.offline.policy_report import format_report


def _diagnostic(urn: str) -> Diagnostic:
    return Diagnostic(
        policy_name="one-device-plugin-per-node",
        policy_pack_name="gpushare",
        description="",
        message="two plugins",
        enforcement_level="mandatory",
        urn=urn,
        severity="",
    )


@pytest.mark.parametrize(
    ("urn", "resource_type", "resource_name"),
    [
        # urn:pulumi:<stack>::<project>::<qualified type>::<name>
        ("urn:pulumi:prod::gpushare::kubernetes:core/v1:ConfigMap::cm", "kubernetes:core/v1:ConfigMap", "cm"),
        # A chart-rendered child: the type after the last `$` of the qualified type.
        (
            "urn:pulumi:dev::gpushare::kubernetes:helm.sh/v3:Release$kubernetes:apps/v1:DaemonSet::rel:ns/ds",
            "kubernetes:apps/v1:DaemonSet",
            "rel:ns/ds",
        ),
        # A name may itself hold `::`: everything after the type is the name.
        ("urn:pulumi:prod::gpushare::pulumi:pulumi:Stack::a::b", "pulumi:pulumi:Stack", "a::b"),
        (root_stack_urn("prod", "gpushare"), "pulumi:pulumi:Stack", "gpushare-prod"),
        # Not a resource's URN: no type, no name (a Pulumi URN without its name part; another scheme).
        ("urn:pulumi:prod::gpushare::kubernetes:core/v1:ConfigMap", "", ""),
        ("urn:pulumi:prod", "", ""),
        ("urn:other:prod::gpushare::kubernetes:core/v1:ConfigMap::cm", "", ""),
        ("", "", ""),
    ],
)
def test_a_diagnostics_resource_is_read_from_its_urn(
    urn: str, resource_type: str, resource_name: str
) -> None:
    diagnostic = _diagnostic(urn)
    assert (diagnostic.resource_type, diagnostic.resource_name) == (resource_type, resource_name)


def test_a_diagnostic_on_no_resource_is_shown_without_one() -> None:
    unnamed = _diagnostic("urn:pulumi:prod::gpushare::kubernetes:core/v1:ConfigMap")
    report = PackReport("gpushare", [], [unnamed], [], "", pack_version="1.0.0")
    assert format_report(report) == (
        "Policies:\n"
        "    ❌ gpushare@v1.0.0\n"
        "        - [mandatory]  one-device-plugin-per-node\n"
        "          two plugins\n"
    )
