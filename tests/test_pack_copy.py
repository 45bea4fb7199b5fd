"""The policy pack outside the repository: `policies/` copied alone into an empty directory (what `pulumi
policy publish` uploads), run through the real analyzer protocol.

Over every stack of the repository its verdicts are the in-repo pack's, diagnostic for diagnostic; over a
program gpushare did not write (tests/fixtures/foreign_program: NVIDIA's time-slicing ConfigMap with
`replicas: 10` and the v0.14.5 static DaemonSet, no `gpushare:` config) it reports the untuned replicas and
what it could not judge, and never fails to run.

By default the copy runs in this venv, whose gpushare is the editable install (only the distribution's
packages are importable from it, not the repository root). CI's `make dist-check` runs this module again
with GPUSHARE_PACK_COPY set to a copy whose own venv holds only its requirements.txt and the built wheel
(GPUSHARE_PACK_COPY_PYTHON).
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, PROJECT_DIR, STACKS, pinned_charts

from gpushare.offline import policy_driver
from gpushare.offline.chart_render import render_releases
from gpushare.offline.chart_sources import ChartSourceError, ChartSources
from gpushare.offline.check import analyzed_resources
from gpushare.offline.manifests import schema_version
from gpushare.offline.policy_model import AnalyzedResource, Diagnostic, PackReport
from gpushare.offline.render import redacted_resources, run_stack
from gpushare.stack.model import PROJECT

# Whole processes (the pack, the CLI): make test-e2e, which CI runs after make test.
pytestmark = pytest.mark.e2e

PACK_DIR = PROJECT_DIR / "policies"
FOREIGN = FIXTURES / "foreign_program" / "resources.yaml"


@pytest.fixture(scope="module")
def copied_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("GPUSHARE_PACK_COPY")
    if given:
        return Path(given)
    empty = tmp_path_factory.mktemp("empty")
    shutil.copytree(PACK_DIR, empty / "policies", ignore=shutil.ignore_patterns("venv", "__pycache__"))
    return empty / "policies"


def copy_python() -> str:
    return os.environ.get("GPUSHARE_PACK_COPY_PYTHON") or sys.executable


def verdicts(report: PackReport) -> list[tuple[str, str, str, str]]:
    return sorted((d.enforcement_level, d.policy_name, d.urn, d.message) for d in report.diagnostics)


def stack_resources(stack: str) -> tuple[list[AnalyzedResource], dict[str, str], tuple[str, ...]]:
    stack_run = run_stack(PROJECT_DIR, stack)
    try:
        releases = render_releases(
            redacted_resources(stack_run.run),
            ChartSources.from_environment(),
            schema_version(stack_run.config.cluster.kubernetes_version, source=stack_run.config.source),
        )
    except ChartSourceError:
        pinned_charts()  # skips when the pinned charts are absent
        raise
    return analyzed_resources(stack_run, releases), stack_run.raw_config, stack_run.secret_keys


def run_pack(pack: Path, resources: list[AnalyzedResource], python: str, **kwargs: Any) -> PackReport:
    return policy_driver.run_policy_pack(pack, resources, python=python, timeout=120, **kwargs)


def test_the_copy_holds_the_pack_alone(copied_pack: Path) -> None:
    assert sorted(p.name for p in copied_pack.iterdir() if p.name != "venv") == [
        "PulumiPolicy.yaml",
        "__main__.py",
        "gpushare_policies",
        "requirements.txt",
    ]
    requirements = (copied_pack / "requirements.txt").read_text().splitlines()
    assert "gpushare==0.1.0" in requirements


# Two pack runs and a render per stack: `make test` compares prod (time budget), CI's dist-check every stack.
PARITY_STACKS = STACKS if os.environ.get("GPUSHARE_PACK_COPY") else ["prod"]


@pytest.mark.parametrize("stack", PARITY_STACKS)
def test_the_copied_pack_gives_the_in_repo_verdicts(stack: str, copied_pack: Path) -> None:
    resources, config, secret_keys = stack_resources(stack)
    common: dict[str, Any] = {
        "stack": stack,
        "project": PROJECT,
        "config": config,
        "secret_keys": secret_keys,
    }
    in_repo = run_pack(PACK_DIR, resources, sys.executable, **common)
    copied = run_pack(copied_pack, resources, copy_python(), **common)
    assert verdicts(copied) == verdicts(in_repo)
    assert [p.name for p in copied.policies] == [p.name for p in in_repo.policies]
    assert not copied.mandatory  # every stack of the repository passes
    assert "Traceback" not in copied.stderr


def foreign_resources() -> tuple[dict[str, Any], list[AnalyzedResource]]:
    document = yaml.safe_load(FOREIGN.read_text())
    stack, project = document["stack"], document["project"]
    return document, [
        AnalyzedResource(
            type=r["type"],
            name=r["name"],
            urn=f"urn:pulumi:{stack}::{project}::{r['type']}::{r['name']}",
            properties=r["properties"],
            outputs=r["properties"],
        )
        for r in document["resources"]
    ]


def run_foreign(copied_pack: Path, resources: list[AnalyzedResource]) -> PackReport:
    """The copied pack over `resources` as the foreign program's stack (its own project and config)."""
    document = yaml.safe_load(FOREIGN.read_text())
    return run_pack(
        copied_pack,
        resources,
        copy_python(),
        stack=document["stack"],
        project=document["project"],
        config=document["config"],
    )


@pytest.fixture(scope="module")
def foreign_report(copied_pack: Path) -> PackReport:
    return run_foreign(copied_pack, foreign_resources()[1])


def by_policy(diagnostics: list[Diagnostic]) -> dict[str, str]:
    # The message after the policy's description line.
    return {d.policy_name: d.message.split("\n", 1)[1] for d in diagnostics}


def test_a_foreign_program_gets_its_untuned_replicas_reported_as_advice(foreign_report: PackReport) -> None:
    """Without `gpushare:` config the pack advises: it judges another team's program by what its resources
    carry, and blocks nothing (policies/gpushare_policies/settings.py, pack_enforcement_level)."""
    assert foreign_report.mandatory == []
    advisory = by_policy(foreign_report.advisory)
    assert sorted(advisory) == [
        "fail-requests-greater-than-one",
        "judged-without-stack-config",
        "plugin-image-pinned",
        "plugin-restarts-on-config-change",
        "time-slicing-replicas-tuned",
    ]
    assert advisory["time-slicing-replicas-tuned"].startswith(
        'ConfigMap kube-system/time-slicing-config key "any": nvidia.com/gpu replicas 10 is not tuned: no '
        "stack config to look up pool 'any' (the stack has no gpushare: config (a program gpushare did not "
        "write)) and no readable gpushare.io/tuning-any annotation."
    )
    assert foreign_report.stderr.strip() == ""  # nothing crashed, nothing was logged


def test_a_foreign_program_is_told_what_was_not_judged(foreign_report: PackReport) -> None:
    advisory = by_policy(foreign_report.advisory)
    assert advisory["judged-without-stack-config"] == (
        "The stack has no gpushare: config (a program gpushare did not write): judged by what its resources "
        'carry. Not judged: the tuned maximum of ConfigMap kube-system/time-slicing-config key "any" '
        "(nvidia.com/gpu): which GPU it serves and the largest process measured on it are unknown; where the "
        "device plugins land: the stack declares no node pools, so one plugin per node, the pools' labels and "
        "MIG placement were checked against none. A stack with gpushare: config (pools with measurements), or "
        "a gpushare.io/tuning-<key> annotation on the config, lets the pack judge these too."
    )
    (judged,) = [d for d in foreign_report.advisory if d.policy_name == "judged-without-stack-config"]
    assert judged.urn == "urn:pulumi:gpu-team-prod::gpu-team::pulumi:pulumi:Stack::gpu-team-gpu-team-prod"


def test_a_foreign_program_without_any_stack_config_is_judged_the_same(copied_pack: Path) -> None:
    _, resources = foreign_resources()
    report = run_pack(copied_pack, resources, copy_python(), stack="dev", project="other", config={})
    assert report.mandatory == []
    assert sorted(by_policy(report.advisory)) == [
        "fail-requests-greater-than-one",
        "judged-without-stack-config",
        "plugin-image-pinned",
        "plugin-restarts-on-config-change",
        "time-slicing-replicas-tuned",
    ]
    assert by_policy(report.advisory)["judged-without-stack-config"].startswith(
        "PULUMI_CONFIG is empty: judged by what its resources carry. Not judged: the tuned maximum of"
    )


def _python_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.py") if "venv" not in p.parts)


@pytest.mark.parametrize("path", _python_files(PACK_DIR), ids=lambda p: str(p.relative_to(PACK_DIR)))
def test_the_pack_reaches_nothing_outside_its_directory(path: Path) -> None:
    """No sys.path edits, no file reads (`__file__`, open, read_text, Path): what a pack may know comes
    from the analyzer (resources, PULUMI_* environment, policy config) and installed distributions."""
    tree = ast.parse(path.read_text(), str(path))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not names & {"__file__", "open", "Path", "sys"}, path
    assert not attributes & {"read_text", "read_bytes"}, path


def test_a_foreign_config_annotated_with_its_measurement_is_judged_against_it(copied_pack: Path) -> None:
    _, resources = foreign_resources()
    config_map = resources[0]
    properties = {
        **config_map.properties,
        "metadata": {
            **config_map.properties["metadata"],
            "annotations": {
                "gpushare.io/tuning-any": '{"gpu": "T4", "measuredMiB": 4401, "measuredAt": "2025-06-01"}'
            },
        },
    }
    annotated = [
        AnalyzedResource(config_map.type, config_map.name, config_map.urn, properties, outputs=properties),
        *resources[1:],
    ]
    report = run_foreign(copied_pack, annotated)
    tuned = by_policy(report.advisory)["time-slicing-replicas-tuned"]
    # floor(0.9 x 15360 MiB / 4401 MiB) = floor(3.14) = 3 (T4's memory from the catalog).
    assert tuned.startswith(
        'ConfigMap kube-system/time-slicing-config key "any": nvidia.com/gpu replicas 10 exceeds the tuned '
        "maximum 3"
    )
    assert "floor(0.9 x 15360 MiB T4 / 4401 MiB measured, annotation gpushare.io/tuning-any)" in tuned
    not_judged = by_policy(report.advisory)["judged-without-stack-config"]
    assert "the tuned maximum" not in not_judged and "where the device plugins land" in not_judged


def test_a_credential_that_reaches_the_engine_as_a_secret_is_never_a_finding(copied_pack: Path) -> None:
    """Through the analyzer protocol: Remediate sees the secret (and notes it), AnalyzeStack judges."""
    from gpushare_policies.props import SECRET_SIGNATURE, SECRET_SIGNATURE_KEY

    urn = "urn:pulumi:prod::gpushare::pulumi:providers:tencentcloud::tencentcloud"

    def provider(secret_key: Any) -> AnalyzedResource:
        properties = {"region": "ap-singapore", "secretKey": secret_key}
        return AnalyzedResource(
            "pulumi:providers:tencentcloud", "tencentcloud", urn, properties, outputs=properties
        )

    resources, config, secret_keys = stack_resources("prod")
    common: dict[str, Any] = {
        "stack": "prod",
        "project": PROJECT,
        "config": config,
        "secret_keys": secret_keys,
    }
    vaulted = {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": "from-a-vault"}
    report = run_pack(copied_pack, [*resources, provider(vaulted)], copy_python(), **common)
    assert "no-plaintext-cloud-secrets" not in by_policy(report.mandatory)
    report = run_pack(copied_pack, [*resources, provider("from-a-vault")], copy_python(), **common)
    assert by_policy(report.mandatory)["no-plaintext-cloud-secrets"].startswith(
        "provider tencentcloud: `secretKey` is set in the program"
    )
