"""Reporting violations from rules that can reach the same problem along more than one path."""

from __future__ import annotations

from collections.abc import Callable

from pulumi_policy import ReportViolation


def report_once(report_violation: ReportViolation) -> Callable[[str | None, str], None]:
    """`report_violation` for messages that may be None (nothing to report) or already reported."""
    reported: set[str] = set()

    def report(message: str | None, urn: str) -> None:
        if message is not None and message not in reported:
            reported.add(message)
            report_violation(message, urn)

    return report
