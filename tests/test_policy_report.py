"""gpushare.offline.policy_report: the "Policies:" block as `pulumi preview` prints it — one line per pack
(❌ with a mandatory finding, ⚠️ with any other, ✅ with none), the remediations counted per policy, then
the violations ordered by level (remediate, mandatory, advisory, disabled), severity (critical to low, then
unspecified), policy name and URN (pkg/backend/display's printPolicies order)."""

from __future__ import annotations

from gpushare.offline.policy_model import Diagnostic, PackReport, Remediation
from gpushare.offline.policy_report import format_report

CM = "urn:pulumi:prod::gpushare::kubernetes:core/v1:ConfigMap::"


def _diagnostic(policy: str, level: str, name: str, severity: str = "") -> Diagnostic:
    return Diagnostic(
        policy_name=policy,
        policy_pack_name="gpushare",
        description="",
        message=f"{policy} on {name}",
        enforcement_level=level,
        urn=CM + name,
        severity=severity,
    )


def _report(*diagnostics: Diagnostic, remediations: tuple[Remediation, ...] = ()) -> PackReport:
    return PackReport(
        "gpushare", [], list(diagnostics), [], "", pack_version="1.0.0", remediations=list(remediations)
    )


def test_violations_are_ordered_by_level_before_policy_name() -> None:
    # Given in reverse; the policy names run against the level order, so a tie on level would reorder them.
    report = _report(
        _diagnostic("a-disabled", "disabled", "cm"),
        _diagnostic("b-advisory", "advisory", "cm"),
        _diagnostic("c-mandatory", "mandatory", "cm"),
        _diagnostic("d-remediate", "remediate", "cm"),
    )
    assert format_report(report) == (
        "Policies:\n"
        "    ❌ gpushare@v1.0.0\n"
        "        - [remediate]  d-remediate  (kubernetes:core/v1:ConfigMap: cm)\n"
        "          d-remediate on cm\n"
        "        - [mandatory]  c-mandatory  (kubernetes:core/v1:ConfigMap: cm)\n"
        "          c-mandatory on cm\n"
        "        - [advisory]  b-advisory  (kubernetes:core/v1:ConfigMap: cm)\n"
        "          b-advisory on cm\n"
        "        - [disabled]  a-disabled  (kubernetes:core/v1:ConfigMap: cm)\n"
        "          a-disabled on cm\n"
    )


def test_within_a_level_severity_then_policy_then_urn() -> None:
    report = _report(
        _diagnostic("a", "advisory", "y"),  # unspecified severity: after every named one
        _diagnostic("a", "advisory", "x"),
        # Names against the severity order, so a tie on severity would reorder them.
        _diagnostic("w", "advisory", "cm", severity="low"),
        _diagnostic("x", "advisory", "cm", severity="medium"),
        _diagnostic("y", "advisory", "cm", severity="high"),
        _diagnostic("z", "advisory", "cm", severity="critical"),
    )
    heads = [line for line in format_report(report).splitlines() if line.startswith("        - ")]
    assert heads == [
        "        - [advisory] [severity: critical]  z  (kubernetes:core/v1:ConfigMap: cm)",
        "        - [advisory] [severity: high]  y  (kubernetes:core/v1:ConfigMap: cm)",
        "        - [advisory] [severity: medium]  x  (kubernetes:core/v1:ConfigMap: cm)",
        "        - [advisory] [severity: low]  w  (kubernetes:core/v1:ConfigMap: cm)",
        "        - [advisory]  a  (kubernetes:core/v1:ConfigMap: x)",
        "        - [advisory]  a  (kubernetes:core/v1:ConfigMap: y)",
    ]
    assert format_report(report).splitlines()[1] == "    ⚠️ gpushare@v1.0.0"


def test_remediations_are_counted_per_policy_and_a_clean_pack_is_marked_so() -> None:
    def remediation(policy: str, name: str) -> Remediation:
        return Remediation(policy, "gpushare", "", CM + name, {})

    report = _report(
        remediations=(remediation("labels", "a"), remediation("labels", "b"), remediation("annotations", "a"))
    )
    assert format_report(report) == (
        "Policies:\n"
        "    ✅ gpushare@v1.0.0\n"
        "        - [remediate]  annotations  (1 resource)\n"
        "        - [remediate]  labels  (2 resources)\n"
    )
