"""The real Pulumi CLI of make engine running the project (make test-engine): a copy of the project whose
entries link to the repository's (its stack files are copies, so the CLI's rewrites never touch the
repository's), a file backend with passphrase secrets, the Kubernetes provider and the tencentcloud stand-in
registered under the versions the program's SDKs ask for, and the stand-in Python language host
(engine/python-language-host) on PATH. The policy pack's `virtualenv: venv` resolves to the project's venv,
the interpreter `gpushare check` runs the pack with.

Every RegisterResource the program sends the engine is read back from the CLI's own gRPC debug log
(PULUMI_DEBUG_GRPC): the request as the SDK sent it and the URN the engine answered.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from engine_api_server import ENGINE_BIN
from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]
from pulumi.runtime.proto import resource_pb2

from gpushare.offline.recorded import RecordedResource
from gpushare.offline.wire_codec import decode_struct

PASSPHRASE = "engine-tests"
ENGINE_TIMEOUT_SECONDS = 600
# Left out of the copy: the stack files are copied instead, and the rest is no part of the program.
_NOT_LINKED = {".git", ".engine", "out", "policies"}


def _versions_env(project_dir: Path) -> dict[str, str]:
    lines = (project_dir / "engine" / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


@dataclass
class EngineProject:
    project_dir: Path
    root: Path
    home: Path = field(init=False)
    copy: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home, self.copy = self.root / "home", self.root / "project"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "PULUMI_HOME": str(self.home),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PATH": f"{ENGINE_BIN}{os.pathsep}{os.environ['PATH']}",
            **extra,
        }

    def pulumi(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ENGINE_BIN / "pulumi"), "--non-interactive", *args],
            cwd=self.copy,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=ENGINE_TIMEOUT_SECONDS,
            check=False,
        )

    def must(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        result = self.pulumi(*args, **env)
        if result.returncode != 0:
            raise AssertionError(
                f"pulumi {' '.join(args)} exited {result.returncode}:\n{result.stderr[-4000:]}"
            )
        return result

    def set_up(self, stacks: list[str], chart_repository: str | None = None) -> None:
        """The project copy, the backend, the plugins, and each stack created with its stack file."""
        missing = [
            tool
            for tool in (
                "pulumi",
                "pulumi-language-python",
                "pulumi-language-python-exec",
                "pulumi-resource-kubernetes",
                "pulumi-resource-tencentcloud",
            )
            if not (ENGINE_BIN / tool).is_file()
        ]
        if missing:
            raise AssertionError(f"not in .engine/bin: {', '.join(missing)}; run make engine")
        self.copy.mkdir()
        for entry in self.project_dir.iterdir():
            if entry.name in _NOT_LINKED or entry.name.startswith("Pulumi."):
                continue
            (self.copy / entry.name).symlink_to(entry)
        shutil.copy(self.project_dir / "Pulumi.yaml", self.copy)
        # The pack's folder: its files linked, its `virtualenv: venv` the project's venv.
        (self.copy / "policies").mkdir()
        for entry in (self.project_dir / "policies").iterdir():
            if entry.name not in {"venv", "__pycache__"}:
                (self.copy / "policies" / entry.name).symlink_to(entry)
        (self.copy / "policies" / "venv").symlink_to(self.project_dir / "venv")
        self.log_in_and_install_plugins()
        for stack in stacks:
            # `stack init` writes the stack file: the repository's is copied over it afterwards.
            self.must("stack", "init", stack, "--secrets-provider", "passphrase")
            self.write_stack_file(stack, chart_repository)

    def log_in_and_install_plugins(self) -> None:
        """A file backend under `root`, and the two resource plugins under the versions the SDKs ask for."""
        state = self.root / "state"
        state.mkdir(parents=True, exist_ok=True)
        self.must("login", f"file://{state}")
        pins = _versions_env(self.project_dir)
        for name, version, binary in (
            ("kubernetes", pins["KUBERNETES_PROVIDER_PLUGIN_VERSION"], "pulumi-resource-kubernetes"),
            ("tencentcloud", pins["TENCENTCLOUD_PLUGIN_VERSION"], "pulumi-resource-tencentcloud"),
        ):
            self.must("plugin", "install", "resource", name, version, "--file", str(ENGINE_BIN / binary))

    def write_stack_file(self, stack: str, chart_repository: str | None = None) -> None:
        """The repository's stack file; with `chart_repository`, a stack with a Helm release (helm or
        gpu-operator mode) gets it as its chart repository (`devicePlugin.chartRepository`, `gpuOperator.chartRepository`: the engine's Helm fetches the chart,
        and this machine reaches no chart repository: tests use a loopback mirror of the pinned charts)."""
        text = (self.project_dir / f"Pulumi.{stack}.yaml").read_text()
        document = yaml.safe_load(text)
        plugin = document["config"].get("gpushare:sharing", {}).get("devicePlugin", {})
        if chart_repository and plugin.get("mode") == "helm":
            plugin["chartRepository"] = chart_repository
        elif chart_repository and plugin.get("mode") == "gpu-operator":
            plugin.setdefault("gpuOperator", {})["chartRepository"] = chart_repository
        if chart_repository and plugin.get("mode") in {"helm", "gpu-operator"}:
            text = yaml.safe_dump(document, sort_keys=False)
        (self.copy / f"Pulumi.{stack}.yaml").write_text(text)

    def preview(self, stack: str, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """`pulumi preview --json` of `stack`: (the CLI's JSON, the gRPC debug log's entries)."""
        log = self.root / f"grpc-{stack}-{len(list(self.root.glob('grpc-*')))}.log"
        result = self.pulumi("preview", "--json", "--stack", stack, *args, PULUMI_DEBUG_GRPC=str(log))
        try:
            document = json.loads(result.stdout)
        except json.JSONDecodeError as err:
            raise AssertionError(f"preview of {stack}: no JSON ({err}):\n{result.stderr[-4000:]}") from err
        entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        document["exitCode"] = result.returncode
        return document, entries

    def preview_events(self, stack: str, *args: str) -> tuple[int, list[dict[str, Any]]]:
        """`pulumi preview --json` streaming the engine's events (policy verdicts are events only)."""
        result = self.pulumi(
            "preview", "--json", "--stack", stack, *args, PULUMI_ENABLE_STREAMING_JSON_PREVIEW="true"
        )
        try:
            events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        except json.JSONDecodeError as err:
            raise AssertionError(
                f"preview of {stack}: no JSON events ({err}):\n{result.stderr[-4000:]}"
            ) from err
        return result.returncode, events


def registrations(entries: list[dict[str, Any]]) -> list[RecordedResource]:
    """Every RegisterResource the program sent, in order, with the URN the engine answered."""
    registered = []
    for entry in entries:
        if entry.get("method") != "/pulumirpc.ResourceMonitor/RegisterResource":
            continue
        if entry.get("progress") == "request_started" or "response" not in entry:
            continue
        request = ParseDict(
            entry["request"], resource_pb2.RegisterResourceRequest(), ignore_unknown_fields=True
        )
        inputs, secret_paths = decode_struct(request.object)
        registered.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=entry["response"]["urn"],
                parent=request.parent or None,
                custom=request.custom,
                remote=request.remote,
                provider=request.provider or None,
                inputs=inputs,
                outputs={},
                dependencies=sorted(set(request.dependencies)),
                property_dependencies={
                    key: sorted(set(request.propertyDependencies[key].urns))
                    for key in sorted(request.propertyDependencies)
                },
                protect=bool(request.protect),
                ignore_changes=list(request.ignoreChanges),
                delete_before_replace=(
                    request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None
                ),
                additional_secret_outputs=list(request.additionalSecretOutputs),
                secret_input_paths=secret_paths,
                id=None,
                replace_on_changes=list(request.replaceOnChanges),
                version=request.version,
                plugin_download_url=request.pluginDownloadURL,
                aliases=[
                    *(MessageToDict(alias) for alias in request.aliases),
                    *({"urn": urn} for urn in request.aliasURNs),
                ],
                retain_on_delete=bool(request.retainOnDelete),
            )
        )
    return registered


def _packaged_chart(chart_dir: Path) -> tuple[dict[str, Any], bytes]:
    """(Chart.yaml's metadata, the chart as `helm package` lays it out: a gzipped tar, one top folder)."""
    metadata = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(chart_dir, arcname=metadata["name"])
    return metadata, buffer.getvalue()


@contextlib.contextmanager
def chart_mirror(charts_dir: Path) -> Iterator[str]:
    """A Helm chart repository on loopback serving every chart folder of `charts_dir` (the pinned charts the
    offline render uses): index.yaml and one .tgz per chart. Yields its URL."""
    files: dict[str, bytes] = {}
    entries: dict[str, list[dict[str, Any]]] = {}
    for chart_dir in sorted(p for p in charts_dir.iterdir() if (p / "Chart.yaml").is_file()):
        metadata, archive = _packaged_chart(chart_dir)
        name = f"{metadata['name']}-{metadata['version']}.tgz"
        files[f"/{name}"] = archive
        entries.setdefault(metadata["name"], []).append({**metadata, "urls": [name]})
    files["/index.yaml"] = yaml.safe_dump({"apiVersion": "v1", "entries": entries}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = files.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
