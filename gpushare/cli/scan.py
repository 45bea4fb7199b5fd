"""The scanner gate: checkov over the Kubernetes objects gpushare itself writes for a stack.

`make ci-stacks` runs it on every rendered stack and fails on any finding without a reason. Reasons live
on the objects (`checkov.io/skipN: CHECK=reason`), never in a blanket skip list. Two kinds of rendered
file are not scanned, each said so in the output: server-side-apply patches (partial objects: checkov
would judge TKE's DaemonSet by the few fields gpushare sets) and whatever a Helm release renders or is
given (NVIDIA's chart and its values, not gpushare's objects).

    python -m gpushare.cli.scan out/prod/manifests --checkov venv/scanners/bin/checkov
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the first comment lines of a rendered manifest say about it (gpushare/offline/manifests.py writes them).
_OWN_OBJECT = "# kubernetes:"
_PATCH = "# server-side apply patch"
_HELM = "# Helm release"
_CHART_RENDERED = (
    "# chart-rendered:"  # gpushare/offline/chart_render.py: an object a Helm release's chart creates
)


@dataclass(frozen=True)
class Selection:
    scanned: tuple[Path, ...]
    passed_over: tuple[tuple[Path, str], ...]


def _header(path: Path) -> list[str]:
    lines = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            lines.append(line.rstrip("\n"))
    return lines


def select(manifests: Path) -> Selection:
    """gpushare's own whole objects, and what is passed over with the reason."""
    scanned: list[Path] = []
    passed_over: list[tuple[Path, str]] = []
    for path in sorted(manifests.glob("*.yaml")):
        header = _header(path)
        if any(line.startswith(_PATCH) for line in header):
            passed_over.append((path, "server-side apply patch: a partial object of TKE's DaemonSet"))
        elif header and header[0].startswith(_CHART_RENDERED):
            passed_over.append((path, "rendered from a Helm chart: NVIDIA's object, not gpushare's"))
        elif any(line.startswith(_HELM) for line in header):
            passed_over.append((path, "Helm release: NVIDIA's chart and its values, not gpushare's objects"))
        elif any(line.startswith(_OWN_OBJECT) and "Patch " not in line for line in header):
            scanned.append(path)
        else:
            passed_over.append((path, "no gpushare resource header"))
    return Selection(tuple(scanned), tuple(passed_over))


@dataclass(frozen=True)
class Finding:
    check_id: str
    name: str
    resource: str
    file: str


def findings(report: Any) -> tuple[list[Finding], int, int]:
    """Failed checks, and the passed and skipped counts, from checkov's JSON report (one framework: a
    dict, either a bare summary when nothing failed or was skipped, or `results` + `summary`)."""
    reports = report if isinstance(report, list) else [report]
    failed: list[Finding] = []
    passed = skipped = 0
    for entry in reports:
        summary = entry.get("summary", entry)
        passed += int(summary.get("passed", 0))
        skipped += int(summary.get("skipped", 0))
        for check in entry.get("results", {}).get("failed_checks", []):
            failed.append(
                Finding(
                    check["check_id"],
                    check.get("check_name", ""),
                    check.get("resource", ""),
                    check.get("file_path", ""),
                )
            )
    return failed, passed, skipped


def scan(manifests: Path, checkov: str) -> int:
    selection = select(manifests)
    for path, reason in selection.passed_over:
        print(f"not scanned: {path.name}: {reason}")
    if not selection.scanned:
        print(f"{manifests}: no gpushare object to scan")
        return 0
    command = [checkov, "--framework", "kubernetes", "--output", "json", "--compact"]
    for path in selection.scanned:
        command += ["--file", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        print(
            f"{manifests}: checkov gave no JSON report (exit {result.returncode}): {result.stderr.strip()[-300:]}"
        )
        return 2
    failed, passed, skipped = findings(report)
    for finding in failed:
        print(f"{Path(finding.file).name}: {finding.check_id} {finding.name} ({finding.resource})")
    print(
        f"{manifests}: checkov {len(selection.scanned)} file(s): {passed} passed, {len(failed)} failed, "
        f"{skipped} skipped with a reason on the object"
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpushare.cli.scan", description=__doc__.splitlines()[0])
    parser.add_argument("manifests", type=Path, help="a rendered stack's manifests/ folder")
    parser.add_argument("--checkov", default="checkov", help="the checkov executable")
    args = parser.parse_args(argv)
    if not args.manifests.is_dir():
        print(f"{args.manifests}: no such folder (run `make render STACK=...` first)", file=sys.stderr)
        return 2
    return scan(args.manifests, args.checkov)


if __name__ == "__main__":
    sys.exit(main())
