"""The Pulumi CLI and pulumi-resource-kubernetes of make engine (.engine/bin): the pinned release, a
file backend with passphrase secrets, and the provider registered under the version the program's SDK
asks for, so that the engine never downloads it (make test-engine)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import PROJECT_DIR
from engine_api_server import ENGINE_BIN

pytestmark = pytest.mark.engine

PINS = dict(
    line.split("=", 1)
    for line in (PROJECT_DIR / "engine" / "versions.env").read_text().splitlines()
    if line and not line.startswith("#")
)


def pulumi(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = ENGINE_BIN / "pulumi"
    if not binary.is_file():
        pytest.fail("not in .engine/bin: pulumi; run make engine")
    env = {
        **os.environ,
        "PULUMI_HOME": str(home),
        "PULUMI_CONFIG_PASSPHRASE": "engine-tests",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PATH": f"{ENGINE_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        [str(binary), "--non-interactive", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_cli_is_the_pinned_release(tmp_path: Path) -> None:
    result = pulumi(tmp_path, "version")
    assert (result.returncode, result.stdout.strip()) == (0, PINS["PULUMI_VERSION"])


def test_the_kubernetes_provider_is_registered_under_the_sdks_version(tmp_path: Path) -> None:
    version = PINS["KUBERNETES_PROVIDER_PLUGIN_VERSION"]
    # pyproject.toml pins the same SDK: the program asks the engine for this plugin version.
    assert f'"pulumi-kubernetes=={version}"' in (PROJECT_DIR / "pyproject.toml").read_text()
    binary = ENGINE_BIN / "pulumi-resource-kubernetes"
    installed = pulumi(
        tmp_path, "plugin", "install", "resource", "kubernetes", version, "--file", str(binary)
    )
    assert installed.returncode == 0, installed.stderr
    listed = pulumi(tmp_path, "plugin", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(p["name"], p["kind"], p["version"]) for p in json.loads(listed.stdout)] == [
        ("kubernetes", "resource", version)
    ]


def test_a_file_backend_with_passphrase_secrets(tmp_path: Path) -> None:
    backend = tmp_path / "state"
    backend.mkdir()
    assert pulumi(tmp_path, "login", f"file://{backend}").returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: engine-check\nruntime: yaml\n")
    created = pulumi(
        tmp_path,
        "stack",
        "init",
        "organization/engine-check/dev",
        "--secrets-provider",
        "passphrase",
        "--cwd",
        str(project),
    )
    assert created.returncode == 0, created.stderr
    secret = pulumi(tmp_path, "config", "set", "--secret", "token", "s3cr3t", "--cwd", str(project))
    assert secret.returncode == 0, secret.stderr
    stack_file = (project / "Pulumi.dev.yaml").read_text()
    assert "s3cr3t" not in stack_file and "secure:" in stack_file
    shown = pulumi(tmp_path, "config", "get", "token", "--cwd", str(project))
    assert (shown.returncode, shown.stdout.strip()) == (0, "s3cr3t")
