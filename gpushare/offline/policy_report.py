"""Showing a `PackReport` as the "Policies:" block of `pulumi preview` (`format_report`), after
pkg/backend/display (progress.go printPolicies, diff.go renderDiffPolicyViolationEvent).
"""

from __future__ import annotations

from typing import Final

from gpushare.offline.policy_model import Diagnostic, PackReport

# --------------------------------------------------------------------------------------------------
# Display, after pkg/backend/display (progress.go printPolicies, diff.go renderDiffPolicyViolationEvent)

_LEVEL_RANK: Final = {"remediate": 0, "mandatory": 1, "advisory": 2, "disabled": 3}
_SEVERITY_RANK: Final = {"critical": 0, "high": 1, "medium": 2, "low": 3, "": 4}


def _type_display_name(type_token: str) -> str:
    """`tokens.Type.DisplayName`: `aws:s3/bucket:Bucket` reads `aws:s3:Bucket`."""
    parts = type_token.split(":")
    if len(parts) != 3 or not parts[2] or "/" not in parts[1]:
        return type_token
    package, module, name = parts
    head, _, tail = module.rpartition("/")
    return f"{package}:{head}:{name}" if tail == name[:1].lower() + name[1:] else type_token


def _violation_lines(diagnostic: Diagnostic) -> list[str]:
    severity = f" [severity: {diagnostic.severity}]" if diagnostic.severity else ""
    line = f"        - [{diagnostic.enforcement_level}]{severity}  {diagnostic.policy_name}"
    resource_type, resource_name = diagnostic.resource_type, diagnostic.resource_name
    if resource_type:
        line += f"  ({_type_display_name(resource_type)}: {resource_name})"
    message = diagnostic.message.rstrip("\n").split("\n")
    return [line, *(f"          {text}" for text in message)]


def format_report(*reports: PackReport) -> str:
    """The "Policies:" block `pulumi preview` prints for these packs (no colors)."""
    lines = ["Policies:"]
    for report in sorted(reports, key=lambda r: f"{r.pack_name}@v{r.pack_version}"):
        levels = {d.enforcement_level for d in report.diagnostics}
        mark = "❌" if "mandatory" in levels else "⚠️" if report.diagnostics else "✅"
        local = f" (local: {report.pack_path})" if report.pack_path else ""
        lines.append(f"    {mark} {report.pack_name}@v{report.pack_version}{local}")
        counts: dict[str, int] = {}
        for remediation in report.remediations:
            counts[remediation.policy_name] = counts.get(remediation.policy_name, 0) + 1
        for name in sorted(counts):
            noun = "resource" if counts[name] == 1 else "resources"
            lines.append(f"        - [remediate]  {name}  ({counts[name]} {noun})")
        ordered = sorted(
            report.diagnostics,
            key=lambda d: (
                _LEVEL_RANK.get(d.enforcement_level, 99),
                _SEVERITY_RANK.get(d.severity, 99),
                d.policy_name,
                d.urn,
            ),
        )
        for diagnostic in ordered:
            lines.extend(_violation_lines(diagnostic))
    return "\n".join(lines) + "\n"
