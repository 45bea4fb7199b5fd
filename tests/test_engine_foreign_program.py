"""The pack on a program gpushare did not write, under the real CLI of make engine (make test-engine): its
findings advise, as `gpushare check` and the offline pack judge it (issue #33, "foreign programs").

The CLI starts the pack without PULUMI_CONFIG and hands it the stack only in ConfigureStack; before the
pack re-read its level there (gpushare_policies/engine_config.py) every finding on such a program was
mandatory under the CLI. The program is another team's, in the shape test_foreign_programs_advisory.py
judges offline: a device-plugin ConfigMap whose time-slicing replicas rest on no measurement (no
`gpushare:` config, no tuning annotation), which `time-slicing-replicas-tuned` reports at the pack's level.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import PROJECT_DIR
from engine_stack import EngineProject

pytestmark = pytest.mark.engine

PROGRAM = textwrap.dedent(
    """\
    import pulumi
    import pulumi_kubernetes as k8s

    # No cluster answers here: the provider previews what it would send.
    provider = k8s.Provider("k8s", kubeconfig=pulumi.Config().require_secret("kubeconfig"))
    k8s.core.v1.ConfigMap(
        "time-slicing",
        metadata={"name": "time-slicing-config", "namespace": "kube-system"},
        data={
            "any": "version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n"
            "    - name: nvidia.com/gpu\\n      replicas: 10\\n"
        },
        opts=pulumi.ResourceOptions(provider=provider),
    )
    """
)
UNREACHABLE_KUBECONFIG = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Config
    clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
    users: [{name: u, user: {token: t}}]
    contexts: [{name: x, context: {cluster: c, user: u}}]
    current-context: x
    """
)


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> EngineProject:
    project = EngineProject(PROJECT_DIR, tmp_path_factory.mktemp("engine-foreign"))
    project.copy.mkdir()
    venv = PROJECT_DIR / "venv"
    (project.copy / "Pulumi.yaml").write_text(
        f"name: team-b\nruntime:\n  name: python\n  options:\n    virtualenv: {venv}\n"
    )
    (project.copy / "__main__.py").write_text(PROGRAM)
    pack = project.copy / "policies"
    pack.mkdir()
    for entry in (PROJECT_DIR / "policies").iterdir():
        if entry.name not in {"venv", "__pycache__"}:
            (pack / entry.name).symlink_to(entry)
    (pack / "venv").symlink_to(venv)
    project.log_in_and_install_plugins()
    project.must("stack", "init", "dev", "--secrets-provider", "passphrase")
    project.must("config", "set", "--secret", "--stack", "dev", "kubeconfig", UNREACHABLE_KUBECONFIG)
    return project


def _verdicts(events: list[dict[str, object]]) -> list[tuple[str, str]]:
    found = []
    for event in events:
        policy = event.get("policyEvent")
        if isinstance(policy, dict):
            found.append((str(policy["policyName"]), str(policy["enforcementLevel"])))
    return sorted(found)


def test_the_pack_advises_on_another_teams_program(foreign: EngineProject, tmp_path: Path) -> None:
    code, events = foreign.preview_events("dev", "--policy-pack", str(foreign.copy / "policies"))
    # Before the pack re-read its level in ConfigureStack the first and last were mandatory, and the
    # preview failed.
    assert _verdicts(events) == [
        ("fail-requests-greater-than-one", "advisory"),
        ("judged-without-stack-config", "advisory"),
        ("time-slicing-replicas-tuned", "advisory"),
    ]
    assert code == 0
