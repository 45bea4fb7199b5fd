"""gpushare.cli.scan on its own: what it reads from checkov's JSON report, and what it prints.

The reports have the shapes checkov 3.3.30 writes with `--output json` (checkov/common/output/report.py:
`Report.get_dict` gives `check_type`, `results` {passed_checks, failed_checks, skipped_checks,
parsing_errors} and `summary` from `get_summary` {passed, failed, skipped, parsing_errors, resource_count,
checkov_version}; runner_registry.py `print_reports` prints that dict for one framework, a list of them for
several, and the bare `Report("").get_summary()` when no framework found anything). A failed check is a
`Record.__dict__`; only the fields the scan reads, and a few beside them, are written out here. Kubernetes
resources are named `Kind.namespace.name`. checkov itself is not run (no process in unit tests):
`subprocess.run` is replaced by one that returns such a report.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpushare.cli import scan
from gpushare.cli.scan import Finding, findings

DAEMONSET_FILE = "daemonset_kube-system_nvidia-device-plugin-l20.yaml"


def failed_check(check_id: str, name: str, resource: str, file_path: str) -> dict[str, Any]:
    return {
        "check_id": check_id,
        "bc_check_id": None,
        "check_name": name,
        "check_result": {"result": "FAILED", "evaluated_keys": []},
        "code_block": None,  # --compact drops it
        "file_path": file_path,
        "file_abs_path": f"/tmp/out/prod/manifests{file_path}",
        "repo_file_path": file_path,
        "file_line_range": [3, 60],
        "resource": resource,
        "evaluations": None,
        "check_class": "checkov.kubernetes.checks.resource.k8s.AllowPrivilegeEscalation",
        "severity": None,
        "guideline": None,
    }


def framework_report(failed: list[dict[str, Any]], passed: int, skipped: int) -> dict[str, Any]:
    return {
        "check_type": "kubernetes",
        "results": {"passed_checks": [], "failed_checks": failed, "skipped_checks": [], "parsing_errors": []},
        "summary": {
            "passed": passed,
            "failed": len(failed),
            "skipped": skipped,
            "parsing_errors": 0,
            "resource_count": 1,
            "checkov_version": "3.3.30",
        },
        "url": "Add an api key '--bc-api-key <api-key>' to see more detailed insights via https://bridgecrew.cloud",
    }


EMPTY_SUMMARY = {
    "passed": 0,
    "failed": 0,
    "skipped": 0,
    "parsing_errors": 0,
    "resource_count": 0,
    "checkov_version": "3.3.30",
}
PRIVILEGE_ESCALATION = failed_check(
    "CKV_K8S_20",
    "Containers should not run with allowPrivilegeEscalation",
    "DaemonSet.kube-system.nvidia-device-plugin-l20",
    f"/{DAEMONSET_FILE}",
)


def test_one_framework_report_gives_its_failed_checks_and_counts() -> None:
    report = framework_report([PRIVILEGE_ESCALATION], passed=74, skipped=3)
    assert findings(report) == (
        [
            Finding(
                "CKV_K8S_20",
                "Containers should not run with allowPrivilegeEscalation",
                "DaemonSet.kube-system.nvidia-device-plugin-l20",
                f"/{DAEMONSET_FILE}",
            )
        ],
        74,
        3,
    )


def test_the_bare_summary_of_a_scan_that_found_nothing_is_no_finding_and_zero_counts() -> None:
    assert findings(EMPTY_SUMMARY) == ([], 0, 0)


def test_several_frameworks_add_up() -> None:
    # 74 + 5 passed, 3 + 0 skipped; the second framework found nothing to fail.
    report = [framework_report([PRIVILEGE_ESCALATION], 74, 3), framework_report([], 5, 0)]
    failed, passed, skipped = findings(report)
    assert ([f.check_id for f in failed], passed, skipped) == (["CKV_K8S_20"], 79, 3)


def own_object(directory: Path, file_name: str, resource_type: str, name: str) -> Path:
    """A rendered object as gpushare/offline/manifests.py `KubernetesObject.header` writes it."""
    path = directory / file_name
    path.write_text(
        f"# apply: kubectl apply --server-side -f {file_name}\n"
        f"# {resource_type} {name} (urn:pulumi:prod::gpushare::{resource_type}::{name})\n"
        "apiVersion: apps/v1\nkind: DaemonSet\n",
        encoding="utf-8",
    )
    return path


def checkov_giving(monkeypatch: pytest.MonkeyPatch, stdout: str, calls: list[list[str]]) -> None:
    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, stdout=stdout, stderr="")

    monkeypatch.setattr(scan.subprocess, "run", run)


def test_a_failed_check_is_printed_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = own_object(tmp_path, DAEMONSET_FILE, "kubernetes:apps/v1:DaemonSet", "l20-plugin")
    calls: list[list[str]] = []
    checkov_giving(monkeypatch, json.dumps(framework_report([PRIVILEGE_ESCALATION], 74, 3)), calls)
    assert scan.scan(tmp_path, "checkov") == 1
    assert calls == [
        ["checkov", "--framework", "kubernetes", "--output", "json", "--compact", "--file", str(path)]
    ]
    assert capsys.readouterr().out == (
        f"{DAEMONSET_FILE}: CKV_K8S_20 Containers should not run with allowPrivilegeEscalation "
        "(DaemonSet.kube-system.nvidia-device-plugin-l20)\n"
        f"{tmp_path}: checkov 1 file(s): 74 passed, 1 failed, 3 skipped with a reason on the object\n"
    )


def test_no_finding_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    own_object(tmp_path, DAEMONSET_FILE, "kubernetes:apps/v1:DaemonSet", "l20-plugin")
    checkov_giving(monkeypatch, json.dumps(framework_report([], 75, 3)), [])
    assert scan.scan(tmp_path, "checkov") == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}: checkov 1 file(s): 75 passed, 0 failed, 3 skipped with a reason on the object\n"
    )


def test_no_json_from_checkov_exits_2_with_the_end_of_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    own_object(tmp_path, DAEMONSET_FILE, "kubernetes:apps/v1:DaemonSet", "l20-plugin")

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 2, stdout="", stderr="x" * 400 + "ModuleNotFoundError\n")

    monkeypatch.setattr(scan.subprocess, "run", run)
    assert scan.scan(tmp_path, "checkov") == 2
    # the last 300 characters of the stripped stderr: 281 x's, then the 19 of "ModuleNotFoundError"
    assert capsys.readouterr().out == (
        f"{tmp_path}: checkov gave no JSON report (exit 2): {'x' * 281}ModuleNotFoundError\n"
    )


def test_nothing_of_gpushares_to_scan_exits_0_without_running_checkov(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = tmp_path / "daemonsetpatch_kube-system_nvidia-device-plugin-daemonset.yaml"
    patch.write_text(
        f"# server-side apply patch: kubectl apply --server-side -f {patch.name}\n"
        "# kubernetes:apps/v1:DaemonSetPatch tke-plugin (urn:pulumi:prod::gpushare::x::tke-plugin)\n",
        encoding="utf-8",
    )
    calls: list[list[str]] = []
    checkov_giving(monkeypatch, "{}", calls)
    assert scan.scan(tmp_path, "checkov") == 0
    assert calls == []
    assert capsys.readouterr().out == (
        f"not scanned: {patch.name}: server-side apply patch: a partial object of TKE's DaemonSet\n"
        f"{tmp_path}: no gpushare object to scan\n"
    )


def test_a_manifests_folder_that_is_not_there_exits_2_before_checkov(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[list[str]] = []
    checkov_giving(monkeypatch, "{}", calls)
    missing = tmp_path / "out" / "prod" / "manifests"
    assert scan.main([str(missing)]) == 2  # an input that cannot be read (errors.py's convention)
    assert calls == []
    assert capsys.readouterr().err == f"{missing}: no such folder (run `make render STACK=...` first)\n"
