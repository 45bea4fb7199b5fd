"""Run a CrossGuard policy pack offline, the way `pulumi preview --policy-pack DIR` runs it.

There is no Pulumi CLI or engine here, so this module plays the engine's part:

1. It starts a minimal fake `pulumirpc.Engine` server and launches the pack exactly like the CLI's
   Python language host: `python -u -m pulumi.policy <engine address> DIR` with `cwd=DIR` and the
   `PULUMI_ORGANIZATION/PROJECT/STACK/DRY_RUN/CONFIG` environment.
2. It reads the pack's gRPC port from the first stdout line and drives the `pulumirpc.Analyzer`
   RPCs in the engine's order: Handshake, ConfigureStack, GetPluginInfo, GetAnalyzerInfo,
   Configure (policy config reconciled like `ReconcilePolicyPackConfig`), then Remediate and
   Analyze for each resource, and AnalyzeStack once at the end.
3. It stops the pack like the CLI (SIGINT, then kill after 5 s) and returns a `PackReport`;
   `format_report` renders it as the "Policies:" block of `pulumi preview`.

Upstream references: pulumi/pulumi `pkg/resource/plugin/analyzer_plugin.go`,
`pkg/resource/analyzer/config.go`, `pkg/engine/update.go`, `pkg/resource/deploy/step_generator.go`
and `pkg/backend/display/progress.go`; pulumi-policy `sdk/python/lib/pulumi_policy/policy.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import grpc  # type: ignore[import-untyped]
import jsonschema  # type: ignore[import-untyped]
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, engine_pb2, engine_pb2_grpc

# Inside `properties` the engine sends every unknown (computed) value as `UNKNOWN` and a secret as
# `secret(value)`; both are part of this module's interface.
from offline.wire import UNKNOWN, secret

__all__ = [
    "ENFORCEMENT_LEVELS",
    "UNKNOWN",
    "AnalyzedResource",
    "Diagnostic",
    "NotApplicable",
    "PackReport",
    "PolicyConfigEntry",
    "PolicyConfigError",
    "PolicyDriverError",
    "PolicyInfo",
    "PolicyPackRpcError",
    "PolicyPackStartError",
    "ProviderInfo",
    "Remediation",
    "format_report",
    "load_policy_config_file",
    "pack_python",
    "reconcile_policy_config",
    "root_stack_urn",
    "run_policy_pack",
    "secret",
]

ENFORCEMENT_LEVELS: Final = ("advisory", "mandatory", "remediate", "disabled")
_LEVEL_FROM_PROTO: Final[Mapping[int, str]] = {
    analyzer_pb2.ADVISORY: "advisory",  # 0: also what an unset level reads as
    analyzer_pb2.MANDATORY: "mandatory",  # 1
    analyzer_pb2.DISABLED: "disabled",  # 2
    analyzer_pb2.REMEDIATE: "remediate",  # 3
}
_LEVEL_TO_PROTO: Final[Mapping[str, Any]] = {name: value for value, name in _LEVEL_FROM_PROTO.items()}
_SEVERITY_FROM_PROTO: Final[Mapping[int, str]] = {
    analyzer_pb2.POLICY_SEVERITY_UNSPECIFIED: "",
    analyzer_pb2.POLICY_SEVERITY_LOW: "low",
    analyzer_pb2.POLICY_SEVERITY_MEDIUM: "medium",
    analyzer_pb2.POLICY_SEVERITY_HIGH: "high",
    analyzer_pb2.POLICY_SEVERITY_CRITICAL: "critical",
}
_POLICY_TYPE_FROM_PROTO: Final[Mapping[int, str]] = {
    analyzer_pb2.POLICY_TYPE_UNKNOWN: "",
    analyzer_pb2.POLICY_TYPE_RESOURCE: "resource",
    analyzer_pb2.POLICY_TYPE_STACK: "stack",
}

SHUTDOWN_GRACE_SECONDS: Final = 5.0  # the CLI interrupts a plugin, then kills it after 5 s
_DIAL_TIMEOUT_SECONDS: Final = 10.0  # pluginRPCConnectionTimeout in the CLI
_MAX_MESSAGE_BYTES: Final = 400 * 1024 * 1024  # what pulumi_policy allows, far above the 4 MB default
_GRPC_OPTIONS: Final = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
]
_SDK_PACK_VERSION: Final = "0.0.1"  # what the Python SDK always reports; PulumiPolicy.yaml wins


# --------------------------------------------------------------------------------------------------
# Errors


class PolicyDriverError(Exception):
    """Base class for everything this module raises about a pack or its configuration."""


class PolicyPackStartError(PolicyDriverError):
    """The pack could not be started, or exited or misbehaved before it printed its port."""

    def __init__(self, message: str, *, stderr: str = "") -> None:
        self.message = message
        self.stderr = stderr
        super().__init__(_with_stderr(message, stderr))


class PolicyConfigError(PolicyDriverError):
    """The policy config is malformed or does not validate against a policy's config schema.

    Raised before any resource is analyzed, as the CLI aborts with "validating policy config".
    """

    def __init__(self, message: str, *, errors: Sequence[str] = ()) -> None:
        self.message = message
        self.errors = list(errors)
        super().__init__(message)


class PolicyPackRpcError(PolicyDriverError):
    """An Analyzer RPC failed (for example a policy raised): the engine would fail the preview."""

    def __init__(self, rpc: str, code: str, details: str, *, stderr: str = "") -> None:
        self.rpc = rpc
        self.code = code
        self.details = details
        self.stderr = stderr
        super().__init__(_with_stderr(f"policy pack RPC {rpc} failed ({code}): {details}", stderr))


def _with_stderr(message: str, stderr: str) -> str:
    text = stderr.strip()
    return f"{message}\n--- policy pack stderr ---\n{text}" if text else message


# --------------------------------------------------------------------------------------------------
# What goes in and what comes out


@dataclass(frozen=True)
class ProviderInfo:
    """The provider resource of an analyzed resource (`AnalyzerProviderResource`)."""

    type: str
    urn: str
    name: str
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalyzedResource:
    """One resource as the engine sends it. Property names are the engine's camelCase names.

    `properties` are the inputs (what `Analyze` sees); `outputs`, when given, are what
    `AnalyzeStack` sees, as the engine sends outputs there. Use `UNKNOWN` and `secret()` for
    computed and secret values.
    """

    type: str
    name: str
    urn: str
    properties: Mapping[str, Any]
    parent: str | None = None
    protect: bool = False
    dependencies: Sequence[str] = ()
    provider: ProviderInfo | None = None
    outputs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One policy violation, attributed to a URN the way the engine attributes it."""

    policy_name: str
    policy_pack_name: str
    description: str
    message: str
    enforcement_level: str  # "advisory" | "mandatory" | "remediate" | "disabled"
    urn: str
    severity: str  # "" (unspecified) | "low" | "medium" | "high" | "critical"
    policy_pack_version: str = ""

    @property
    def resource_type(self) -> str:
        return _split_urn(self.urn)[0]

    @property
    def resource_name(self) -> str:
        return _split_urn(self.urn)[1]


@dataclass(frozen=True)
class NotApplicable:
    """A policy that declared itself not applicable to a resource (or to the stack)."""

    policy_name: str
    reason: str
    urn: str


@dataclass(frozen=True)
class Remediation:
    """A remediation that rewrote a resource's inputs before `Analyze` saw them."""

    policy_name: str
    policy_pack_name: str
    description: str
    urn: str
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class PolicyInfo:
    """A policy of the pack. `enforcement_level` is the effective level after the policy config."""

    name: str
    description: str
    enforcement_level: str
    config_schema: dict[str, Any] | None  # {"properties": {...}, "required": [...]} or None
    policy_type: str = ""  # "resource" | "stack" | ""
    severity: str = ""
    display_name: str = ""


@dataclass(frozen=True)
class PackReport:
    """Everything one run of a pack produced."""

    pack_name: str
    policies: list[PolicyInfo]
    diagnostics: list[Diagnostic]
    not_applicable: list[NotApplicable]
    stderr: str
    pack_version: str = _SDK_PACK_VERSION
    pack_path: str = ""
    remediations: list[Remediation] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)  # engine Log calls and stdout after the port line

    @property
    def mandatory(self) -> list[Diagnostic]:
        """The diagnostics that make `pulumi preview` fail."""
        return [d for d in self.diagnostics if d.enforcement_level == "mandatory"]

    @property
    def advisory(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.enforcement_level == "advisory"]


@dataclass(frozen=True)
class PolicyConfigEntry:
    """One reconciled entry of the `Configure` request (`plugin.AnalyzerPolicyConfig`)."""

    enforcement_level: str  # "" when nothing set one; the CLI's Configure rejects that
    properties: Mapping[str, Any] | None = None


def root_stack_urn(stack: str, project: str) -> str:
    """The URN of the root `pulumi:pulumi:Stack` resource (`resource.DefaultRootStackURN`)."""
    return f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"


# --------------------------------------------------------------------------------------------------
# Policy config (`--policy-pack-config`) parsing and reconciliation, as pkg/resource/analyzer/config.go


def _enforcement_level(value: Any, key: str) -> str:
    # Accept pulumi_policy.EnforcementLevel members as well as their string values.
    level = getattr(value, "value", value)
    if not isinstance(level, str):
        raise PolicyConfigError(f'parsing enforcement level for "{key}": {value!r} must be a string')
    if level not in ENFORCEMENT_LEVELS:
        raise PolicyConfigError(
            f'parsing enforcement level for "{key}": "{level}" is not a valid enforcement level'
        )
    return level


def _parse_policy_config(raw: Mapping[str, Any]) -> dict[str, PolicyConfigEntry]:
    """`parsePolicyPackConfig`: a level string, or an object with an optional `enforcementLevel`."""
    parsed: dict[str, PolicyConfigEntry] = {}
    for key, value in raw.items():
        if key == "environments":
            # ESC environments need the Pulumi Cloud; the DIY backend rejects them too.
            raise PolicyConfigError('"environments" (ESC) in the policy config is not supported offline')
        level = ""
        properties: dict[str, Any] | None = None
        if isinstance(value, Mapping):
            rest = dict(value)
            if "enforcementLevel" in rest:
                level = _enforcement_level(rest.pop("enforcementLevel"), key)
            properties = rest or None
        elif isinstance(value, str) or hasattr(value, "value"):
            level = _enforcement_level(value, key)
        else:
            raise PolicyConfigError(
                f'parsing "{key}": {value!r} is not a valid value; must be a string or object'
            )
        if level or properties:  # the CLI drops empty entries
            parsed[key] = PolicyConfigEntry(level, properties)
    return parsed


def load_policy_config_file(path: Path) -> dict[str, Any]:
    """Read and check a `--policy-pack-config` JSON file; the result can be passed as `policy_config`."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():  # the CLI accepts an empty file
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise PolicyConfigError(f"{path}: not valid JSON: {err}") from err
    if not isinstance(document, dict):
        raise PolicyConfigError(f"{path}: the policy config must be a JSON object")
    try:
        _parse_policy_config(document)
    except PolicyConfigError as err:
        raise PolicyConfigError(f"{path}: {err.message}") from err
    return document


def _schema_defaults(policy: PolicyInfo) -> dict[str, Any] | None:
    properties = (policy.config_schema or {}).get("properties") or {}
    defaults = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    return defaults or None


def _apply_config(
    result: dict[str, PolicyConfigEntry], to_apply: Mapping[str, PolicyConfigEntry]
) -> dict[str, PolicyConfigEntry]:
    """`applyConfig`: the "all" level first, then each entry (unknown names are kept, as the CLI does)."""
    result = dict(result)
    everything = to_apply.get("all")
    if everything is not None and everything.enforcement_level in ENFORCEMENT_LEVELS:
        for name, entry in result.items():
            result[name] = PolicyConfigEntry(everything.enforcement_level, entry.properties)
    for name, given in to_apply.items():
        current = result.get(name, PolicyConfigEntry(""))
        level = (
            given.enforcement_level
            if given.enforcement_level in ENFORCEMENT_LEVELS
            else current.enforcement_level
        )
        properties = dict(current.properties) if current.properties is not None else None
        if given.properties:
            properties = {**(properties or {}), **given.properties}
        result[name] = PolicyConfigEntry(level, properties)
    return result


def _validate_policy_config(policy: PolicyInfo, properties: Mapping[str, Any]) -> list[str]:
    """`validatePolicyConfig`: JSON Schema of an object with the policy's properties and required list."""
    schema: dict[str, Any] = {"type": "object"}
    if policy.config_schema and policy.config_schema.get("properties"):
        schema["properties"] = policy.config_schema["properties"]
    if policy.config_schema and policy.config_schema.get("required"):
        schema["required"] = policy.config_schema["required"]
    validator_class = jsonschema.Draft7Validator
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise PolicyConfigError(
            f'policy "{policy.name}" has an invalid config schema: {err.message}'
        ) from err
    errors = []
    for error in validator_class(schema).iter_errors(dict(properties)):
        path = ".".join(str(part) for part in error.absolute_path)
        errors.append(
            f"{policy.name}: {path}: {error.message}" if path else f"{policy.name}: {error.message}"
        )
    return errors


def reconcile_policy_config(
    policies: Sequence[PolicyInfo],
    initial_config: Mapping[str, PolicyConfigEntry],
    policy_config: Mapping[str, Any] | None,
    *,
    pack_label: str = "",
) -> dict[str, PolicyConfigEntry]:
    """`ReconcilePolicyPackConfig`: levels and schema defaults, then the pack's initialConfig, then
    the user's config ("all" first, then each policy), validated against each policy's schema.

    `policies` carry the levels the pack declares. Raises `PolicyConfigError` listing every
    validation error, like the CLI's "validating policy config" failure.
    """
    result = {p.name: PolicyConfigEntry(p.enforcement_level, _schema_defaults(p)) for p in policies}
    result = _apply_config(result, initial_config)
    result = _apply_config(result, _parse_policy_config(policy_config or {}))
    errors: list[str] = []
    for policy in policies:
        errors.extend(_validate_policy_config(policy, (result[policy.name].properties or {})))
    if errors:
        errors.sort()
        prefix = f"validating policy config: {pack_label}  " if pack_label else "validating policy config: "
        raise PolicyConfigError("\n".join(prefix + e for e in errors), errors=errors)
    return result


# --------------------------------------------------------------------------------------------------
# The pack directory


@dataclass(frozen=True)
class _PackProject:
    version: str
    virtualenv: str | None


def _load_pack_project(pack_dir: Path) -> _PackProject:
    """Read PulumiPolicy.yaml as `workspace.LoadPolicyPack` does: a `runtime` is required."""
    project_file = pack_dir / "PulumiPolicy.yaml"
    try:
        document = yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise PolicyPackStartError(
            f"failed to load Pulumi policy project located at {str(pack_dir)!r}: {err}"
        ) from err
    runtime = document.get("runtime") if isinstance(document, dict) else None
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if not runtime_name:
        raise PolicyPackStartError(f"{project_file}: a `runtime` is required")
    if runtime_name != "python":
        raise PolicyPackStartError(f"{project_file}: runtime {runtime_name!r} is not supported; only python")
    options = (runtime.get("options") or {}) if isinstance(runtime, dict) else {}
    return _PackProject(
        version=str(document.get("version") or ""),
        virtualenv=str(options["virtualenv"]) if options.get("virtualenv") else None,
    )


def pack_python(pack_dir: Path, default: str = sys.executable) -> str:
    """The interpreter the CLI would use: `runtime.options.virtualenv` in PulumiPolicy.yaml, else `default`.

    The CLI does not default `virtualenv` for policy packs; without one it runs `python3` from PATH.
    """
    virtualenv = _load_pack_project(Path(pack_dir)).virtualenv
    if virtualenv is None:
        return default
    venv = Path(pack_dir) / virtualenv
    candidate = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not candidate.exists():
        raise PolicyPackStartError(
            f"the pack's virtualenv {venv} has no interpreter; run `pulumi install` in it"
        )
    return str(candidate)


# --------------------------------------------------------------------------------------------------
# The fake engine the pack is given the address of


class _FakeEngine(engine_pb2_grpc.EngineServicer):
    """Just enough of `pulumirpc.Engine` for a policy pack; pulumi.policy does not dial it today."""

    def __init__(self) -> None:
        self.logs: list[str] = []
        self._root_urn = ""
        self._lock = threading.Lock()

    def Log(self, request: Any, context: Any) -> Any:
        severity = engine_pb2.LogSeverity.Name(request.severity).lower()
        suffix = f" ({request.urn})" if request.urn else ""
        with self._lock:
            self.logs.append(f"{severity}: {request.message}{suffix}")
        return empty_pb2.Empty()

    def GetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.GetRootResourceResponse(urn=self._root_urn)

    def SetRootResource(self, request: Any, context: Any) -> Any:
        self._root_urn = request.urn
        return engine_pb2.SetRootResourceResponse()

    def StartDebugging(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    def RequirePulumiVersion(self, request: Any, context: Any) -> Any:
        return engine_pb2.RequirePulumiVersionResponse()  # no CLI here, so any range is satisfied


@contextlib.contextmanager
def _serve_engine() -> Iterator[tuple[str, _FakeEngine]]:
    engine = _FakeEngine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=_GRPC_OPTIONS)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", engine
    finally:
        server.stop(grace=None)


# --------------------------------------------------------------------------------------------------
# The pack process


def _sigint_ignored() -> bool:
    return os.name != "nt" and signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def _interruptible() -> None:
    """In the child before exec: SIGINT back to its default. A parent started in the background by a
    non-interactive shell ignores SIGINT and children inherit that, so the pack would never see the
    interrupt the CLI stops it with and every run would wait out the 5 s grace before the kill."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _PackProcess:
    """The pack subprocess: its port line, its drained stdout/stderr, and a CLI-like shutdown."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        try:
            self._proc = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Only when needed: a pre-exec hook forces a plain fork, which gRPC complains about.
                preexec_fn=_interruptible if _sigint_ignored() else None,
            )
        except OSError as err:
            raise PolicyPackStartError(f"could not start {self.argv[0]!r}: {err}") from err
        self.stdout_lines: list[str] = []
        self._stderr_chunks: list[bytes] = []
        self._first_line: queue.Queue[bytes | None] = queue.Queue(maxsize=1)
        # Drain both pipes on threads so a chatty pack can never block on a full pipe.
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self._proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self._proc.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self, stream: IO[bytes]) -> None:
        first = stream.readline()  # the CLI reads exactly the first line; later lines are logs
        self._first_line.put(first if first.endswith(b"\n") else None)
        if not first.endswith(b"\n"):
            if first:
                self.stdout_lines.append(first.decode("utf-8", "replace"))
            return
        for line in stream:
            self.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._stderr_chunks.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr_chunks).decode("utf-8", "replace")

    def read_port(self, timeout: float) -> int:
        try:
            line = self._first_line.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            self.stop()
            raise PolicyPackStartError(
                f"policy pack [{' '.join(self.argv)}] printed no port within {timeout:.0f} s",
                stderr=self.stderr,
            ) from None
        if line is None:
            # EOF before a port: let the pack finish dying on its own (as the CLI waits), so that
            # its stderr is complete and no SIGINT lands in the middle of its traceback.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=SHUTDOWN_GRACE_SECONDS)
            self.stop()
            raise PolicyPackStartError(
                f"could not read plugin [{' '.join(self.argv)}]: exit status {self._proc.returncode}",
                stderr=self.stderr,
            )
        text = line.decode("utf-8", "replace")
        for escape in ("\x1b]9;4;3;\x1b\\", "\x1b]9;4;0;\x1b\\"):  # parsePort strips .NET progress escapes
            text = text.replace(escape, "")
        text = text.strip()
        port = int(text) if text.isdigit() else 0
        if not 1 <= port <= 65535:
            self.stop()
            raise PolicyPackStartError(
                f"policy pack [{' '.join(self.argv)}] wrote an invalid port to stdout: {text!r}",
                stderr=self.stderr,
            )
        return port

    def stop(self) -> None:
        """Interrupt, wait up to 5 s, then kill; idempotent. Collects the rest of both pipes."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if os.name == "nt":
                    self._proc.terminate()
                else:  # pulumi_policy stops its server on KeyboardInterrupt and exits 0
                    self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=SHUTDOWN_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for reader in self._readers:
            reader.join(timeout=SHUTDOWN_GRACE_SECONDS)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()


# --------------------------------------------------------------------------------------------------
# Wire encoding


def _to_wire(value: Any, path: str) -> Any:
    """Plain JSON-like data for a protobuf Struct (whose numbers are all doubles)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _to_wire(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_to_wire(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"property {path} has a {type(value).__name__}, which cannot go on the wire")


def _struct(properties: Mapping[str, Any] | None, *, skip_internal: bool = False) -> Any:
    struct = struct_pb2.Struct()
    for key, value in (properties or {}).items():
        if skip_internal and key.startswith("__"):  # SkipInternalKeys: top-level "__" keys stay home
            continue
        struct.update({key: _to_wire(value, key)})
    return struct


def _from_struct(struct: Any) -> dict[str, Any]:
    result: dict[str, Any] = json_format.MessageToDict(struct)
    return result


def _provider_message(provider: ProviderInfo | None) -> Any:
    if provider is None:
        return None
    return analyzer_pb2.AnalyzerProviderResource(
        type=provider.type,
        urn=provider.urn,
        name=provider.name,
        properties=_struct(provider.properties, skip_internal=True),
    )


def _options_message(resource: AnalyzedResource) -> Any:
    # The engine always sends customTimeouts (zero when unset).
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=resource.protect,
        parent=resource.parent or "",
        customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts(),
    )


def _resource_fields(resource: AnalyzedResource, properties: Mapping[str, Any]) -> dict[str, Any]:
    """What `AnalyzeRequest` and `AnalyzerResource` both say about a resource."""
    return {
        "type": resource.type,
        "name": resource.name,
        "urn": resource.urn,
        "properties": _struct(properties, skip_internal=True),
        "options": _options_message(resource),
        "provider": _provider_message(resource.provider),
    }


def _analyze_request(resource: AnalyzedResource, properties: Mapping[str, Any]) -> Any:
    return analyzer_pb2.AnalyzeRequest(**_resource_fields(resource, properties))


def _stack_resource(resource: AnalyzedResource, properties: Mapping[str, Any]) -> Any:
    return analyzer_pb2.AnalyzerResource(
        **_resource_fields(resource, properties),
        parent=resource.parent or "",
        dependencies=list(resource.dependencies),
    )


def _policy_info(message: Any) -> PolicyInfo:
    schema: dict[str, Any] | None = None
    if message.HasField("configSchema"):
        schema = {
            "properties": _from_struct(message.configSchema.properties),
            "required": list(message.configSchema.required),
        }
    return PolicyInfo(
        name=message.name,
        description=message.description,
        enforcement_level=_LEVEL_FROM_PROTO[message.enforcementLevel],
        config_schema=schema,
        policy_type=_POLICY_TYPE_FROM_PROTO.get(message.policy_type, ""),
        severity=_SEVERITY_FROM_PROTO.get(message.severity, ""),
        display_name=message.displayName,
    )


# --------------------------------------------------------------------------------------------------
# Driving the Analyzer


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(self._end - time.monotonic(), 0.001)


class _AnalyzerClient:
    """Calls the pack's Analyzer RPCs; a failed RPC stops the pack and raises with its stderr."""

    def __init__(self, channel: Any, process: _PackProcess, deadline: _Deadline) -> None:
        self._stub = analyzer_pb2_grpc.AnalyzerStub(channel)
        self._process = process
        self._deadline = deadline

    def call(self, rpc: str, request: Any, *, optional: bool = False) -> Any:
        """Call `rpc`; with `optional`, UNIMPLEMENTED returns None (the engine skips such RPCs)."""
        method: Callable[..., Any] = getattr(self._stub, rpc)
        try:
            return method(request, timeout=self._deadline.remaining())
        except grpc.RpcError as err:
            if optional and err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            self._process.stop()  # so that the stderr below holds the pack's traceback
            raise PolicyPackRpcError(
                rpc, err.code().name, err.details() or "", stderr=self._process.stderr
            ) from err


class _Session:
    """One engine-side conversation with a started pack; collects what the report needs."""

    def __init__(self, *, client: _AnalyzerClient, pack_dir: Path, shown_path: str, stack_urn: str) -> None:
        self._client = client
        self._pack_dir = pack_dir
        self._shown_path = shown_path
        self._stack_urn = stack_urn
        self.pack_name = ""
        self.version = _SDK_PACK_VERSION
        self.policies: list[PolicyInfo] = []
        self.diagnostics: list[Diagnostic] = []
        self.not_applicable: list[NotApplicable] = []
        self.remediations: list[Remediation] = []
        self._stack_resources: list[Any] = []
        self._info: Any = None

    def start(self, engine_address: str, stack_request: Any) -> None:
        pack_dir = str(self._pack_dir)
        handshake = analyzer_pb2.AnalyzerHandshakeRequest(
            engine_address=engine_address, root_directory=pack_dir, program_directory=pack_dir
        )
        self._client.call("Handshake", handshake, optional=True)  # pulumi_policy 1.21: UNIMPLEMENTED
        self._client.call("ConfigureStack", stack_request, optional=True)
        self._client.call("GetPluginInfo", empty_pb2.Empty())
        self._info = self._client.call("GetAnalyzerInfo", empty_pb2.Empty())
        self.pack_name = self._info.name
        self.version = self._info.version or _SDK_PACK_VERSION
        # The CLI sorts the policies by name.
        self.policies = sorted((_policy_info(p) for p in self._info.policies), key=lambda p: p.name)

    def configure(self, policy_config: Mapping[str, Any], project_version: str) -> None:
        """Reconcile and send the policy config; PulumiPolicy.yaml's version wins over the SDK's."""
        self.version = project_version or self.version
        if not self._info.supportsConfig:
            if policy_config:
                raise PolicyConfigError(
                    f'policy pack "{self.pack_name}" at "{self._pack_dir}" does not support config'
                )
            return
        initial = {
            name: PolicyConfigEntry(_LEVEL_FROM_PROTO[entry.enforcementLevel], _from_struct(entry.properties))
            for name, entry in self._info.initialConfig.items()
        }
        reconciled = reconcile_policy_config(
            self.policies, initial, policy_config, pack_label=f"{self.pack_name} {self.version}"
        )
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, entry in reconciled.items():
            if entry.enforcement_level not in ENFORCEMENT_LEVELS:  # the CLI's Configure rejects it
                raise PolicyConfigError(
                    f'configuring policy pack "{self.pack_name}" at "{self._pack_dir}": invalid enforcement '
                    f'level "{entry.enforcement_level}" for "{name}"'
                )
            request.policyConfig[name].CopyFrom(
                analyzer_pb2.PolicyConfig(
                    enforcementLevel=_LEVEL_TO_PROTO[entry.enforcement_level],
                    properties=_struct(entry.properties),
                )
            )
        if reconciled:
            self._client.call("Configure", request)
        self.policies = [
            dataclasses.replace(p, enforcement_level=reconciled[p.name].enforcement_level)
            for p in self.policies
        ]

    def _severity(self, policy_name: str, severity: int) -> str:
        # Like the CLI, fall back to the policy's declared severity.
        declared = next((p.severity for p in self.policies if p.name == policy_name), "")
        return _SEVERITY_FROM_PROTO.get(severity, "") or declared

    def _diagnostic(self, message: Any, urn: str) -> Diagnostic:
        return Diagnostic(
            policy_name=message.policyName,
            policy_pack_name=message.policyPackName,
            description=message.description,
            message=message.message,
            enforcement_level=_LEVEL_FROM_PROTO.get(message.enforcementLevel, "advisory"),
            urn=urn,
            severity=self._severity(message.policyName, message.severity),
            policy_pack_version=self.version,
        )

    def analyze(self, resource: AnalyzedResource) -> None:
        """Remediate, then Analyze, one resource (step_generator.go: remediations rewrite the inputs)."""
        inputs: Mapping[str, Any] = resource.properties
        remediated = self._client.call("Remediate", _analyze_request(resource, inputs), optional=True)
        for item in remediated.remediations if remediated is not None else ():
            if item.diagnostic:  # e.g. an unknown value during preview: shown as an advisory
                self.diagnostics.append(
                    Diagnostic(
                        policy_name=item.policyName,
                        policy_pack_name=item.policyPackName,
                        description=item.description,
                        message=item.diagnostic,
                        enforcement_level="advisory",
                        urn=resource.urn,
                        severity=self._severity(item.policyName, 0),
                        policy_pack_version=self.version,
                    )
                )
            else:
                inputs = _from_struct(item.properties)
                self.remediations.append(
                    Remediation(item.policyName, item.policyPackName, item.description, resource.urn, inputs)
                )
        response = self._client.call("Analyze", _analyze_request(resource, inputs))
        # The engine attributes every Analyze diagnostic to the analyzed resource, whatever its urn says.
        self.diagnostics.extend(self._diagnostic(d, resource.urn) for d in response.diagnostics)
        self.not_applicable.extend(
            NotApplicable(n.policy_name, n.reason, resource.urn) for n in response.not_applicable
        )
        outputs = resource.outputs if resource.outputs is not None else inputs
        self._stack_resources.append(_stack_resource(resource, outputs))

    def analyze_stack(self, resources: Sequence[AnalyzedResource]) -> None:
        request = analyzer_pb2.AnalyzeStackRequest(resources=self._stack_resources)
        response = self._client.call("AnalyzeStack", request, optional=True)
        if response is None:
            return
        # A stack diagnostic keeps its URN only if it names a resource of the stack, else the root stack.
        known = {r.urn for r in resources}
        for d in response.diagnostics:
            self.diagnostics.append(self._diagnostic(d, d.urn if d.urn in known else self._stack_urn))
        self.not_applicable.extend(
            NotApplicable(n.policy_name, n.reason, self._stack_urn) for n in response.not_applicable
        )

    def report(self, *, stderr: str, logs: list[str]) -> PackReport:
        return PackReport(
            pack_name=self.pack_name,
            policies=self.policies,
            diagnostics=self.diagnostics,
            not_applicable=self.not_applicable,
            stderr=stderr,
            pack_version=self.version,
            pack_path=self._shown_path,
            remediations=self.remediations,
            logs=logs,
        )


def _pack_env(
    *, stack: str, project: str, organization: str, dry_run: bool, config: Mapping[str, str]
) -> dict[str, str]:
    for key in config:
        if ":" not in key:
            raise ValueError(f"config key {key!r} must be namespaced, e.g. {project}:{key}")
    env = dict(os.environ)
    env.update(
        {
            "PULUMI_PROJECT": project,
            "PULUMI_STACK": stack,
            "PULUMI_DRY_RUN": "true" if dry_run else "false",
            # Secrets in plain text, as the CLI passes them. The CLI sets no PULUMI_CONFIG_SECRET_KEYS
            # for packs, and pulumi.policy never reads it; the keys go in ConfigureStack instead.
            "PULUMI_CONFIG": json.dumps(dict(config)),
        }
    )
    if organization:
        env["PULUMI_ORGANIZATION"] = organization
    # The pack's gRPC server logs connection teardown at INFO: noise. Errors still print; a user's wins.
    env.setdefault("GRPC_VERBOSITY", "ERROR")
    return env


def run_policy_pack(
    pack_dir: Path,
    resources: Sequence[AnalyzedResource],
    *,
    stack: str,
    project: str,
    organization: str = "organization",
    config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
    dry_run: bool = True,
    policy_config: Mapping[str, Any] | None = None,
    stack_tags: Mapping[str, str] | None = None,
    python: str = sys.executable,
    timeout: float = 60,
) -> PackReport:
    """Run the pack in `pack_dir` over `resources` as `pulumi preview --policy-pack` would.

    `config` is the stack config (`project:key -> string`), `policy_config` the parsed
    `--policy-pack-config` document, `timeout` the budget for the whole run. Raises
    `PolicyPackStartError`, `PolicyConfigError` (before any resource is analyzed) or
    `PolicyPackRpcError`; the subprocess and the engine server are always cleaned up.
    """
    shown_path = str(pack_dir)  # the CLI shows the path as given: "(local: policies)"
    pack_dir = Path(pack_dir).resolve()
    project_file = _load_pack_project(pack_dir)
    user_config = dict(policy_config or {})
    _parse_policy_config(user_config)  # a malformed config fails before the pack starts, as in the CLI
    config = dict(config or {})
    env = _pack_env(stack=stack, project=project, organization=organization, dry_run=dry_run, config=config)
    deadline = _Deadline(timeout)

    with contextlib.ExitStack() as cleanup:
        engine_address, engine = cleanup.enter_context(_serve_engine())
        process = _PackProcess(
            [python, "-u", "-m", "pulumi.policy", engine_address, str(pack_dir)], pack_dir, env
        )
        cleanup.callback(process.stop)
        port = process.read_port(deadline.remaining())
        channel = cleanup.enter_context(grpc.insecure_channel(f"127.0.0.1:{port}", options=_GRPC_OPTIONS))
        try:
            grpc.channel_ready_future(channel).result(
                timeout=min(_DIAL_TIMEOUT_SECONDS, deadline.remaining())
            )
        except grpc.FutureTimeoutError:
            process.stop()
            raise PolicyPackStartError(
                f"could not connect to the policy pack on port {port}", stderr=process.stderr
            ) from None
        session = _Session(
            client=_AnalyzerClient(channel, process, deadline),
            pack_dir=pack_dir,
            shown_path=shown_path,
            stack_urn=root_stack_urn(stack, project),
        )
        session.start(
            engine_address,
            analyzer_pb2.AnalyzerStackConfigureRequest(
                stack=stack,
                project=project,
                organization=organization,
                dry_run=dry_run,
                config=config,
                config_secret_keys=list(secret_keys),
                tags=dict(stack_tags or {}),
            ),
        )
        session.configure(user_config, project_file.version)
        for resource in resources:
            session.analyze(resource)
        session.analyze_stack(resources)
        process.stop()  # before reading stderr, so it is complete
        report = session.report(stderr=process.stderr, logs=[*engine.logs, *process.stdout_lines])
    return report


# --------------------------------------------------------------------------------------------------
# Display, after pkg/backend/display (progress.go printPolicies, diff.go renderDiffPolicyViolationEvent)

_LEVEL_RANK: Final = {"remediate": 0, "mandatory": 1, "advisory": 2, "disabled": 3}
_SEVERITY_RANK: Final = {"critical": 0, "high": 1, "medium": 2, "low": 3, "": 4}


def _split_urn(urn: str) -> tuple[str, str]:
    """(type, name) of a URN `urn:pulumi:stack::project::parent$type::name`, or ("", "")."""
    parts = urn.split("::")
    if not urn.startswith("urn:pulumi:") or len(parts) < 4:
        return "", ""
    return parts[2].split("$")[-1], "::".join(parts[3:])


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
    resource_type, resource_name = _split_urn(diagnostic.urn)
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
