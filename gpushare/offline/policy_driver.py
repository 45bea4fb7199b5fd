"""Run a CrossGuard policy pack offline, the way `pulumi preview --policy-pack DIR` runs it: the analyzer
client and the run.

There is no Pulumi CLI or engine here, so this module plays the engine's part:

1. It starts the pack with a fake engine (`gpushare.offline.pack_process`): `python -u -m pulumi.policy <engine
   address> DIR` with `cwd=DIR` and the `PULUMI_ORGANIZATION/PROJECT/STACK/DRY_RUN/CONFIG` environment.
2. It reads the pack's gRPC port from the first stdout line and drives the `pulumirpc.Analyzer`
   RPCs in the engine's order: Handshake, ConfigureStack, GetPluginInfo, GetAnalyzerInfo,
   Configure (policy config reconciled like `ReconcilePolicyPackConfig`, `gpushare.offline.policy_config`), then
   Remediate and Analyze for each resource, and AnalyzeStack once at the end; requests and answers are
   encoded and decoded here.
3. It stops the pack like the CLI (SIGINT, then kill after 5 s) and returns a `PackReport`
   (`gpushare.offline.policy_model`); `format_report` (`gpushare.offline.policy_report`) renders it as the "Policies:" block
   of `pulumi preview`.

Upstream references: pulumi/pulumi `pkg/resource/plugin/analyzer_plugin.go`,
`pkg/resource/analyzer/config.go`, `pkg/engine/update.go`, `pkg/resource/deploy/step_generator.go`
and `pkg/backend/display/progress.go`; pulumi-policy `sdk/python/lib/pulumi_policy/policy.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpushare.offline.pack_process import GRPC_OPTIONS, PackProcess, _serve_engine, load_pack_project
from gpushare.offline.policy_config import parse_policy_config, reconcile_policy_config
from gpushare.offline.policy_model import (
    ENFORCEMENT_LEVELS,
    SDK_PACK_VERSION,
    AnalyzedResource,
    Diagnostic,
    NotApplicable,
    PackReport,
    PolicyConfigEntry,
    PolicyConfigError,
    PolicyDriverError,
    PolicyInfo,
    PolicyPackRpcError,
    PolicyPackStartError,
    ProviderInfo,
    Remediation,
    root_stack_urn,
)
from gpushare.offline.policy_report import format_report

# Inside `properties` the engine sends every unknown (computed) value as `UNKNOWN` and a secret as
# `secret(value)`; both are part of this module's interface.
from gpushare.offline.wire import UNKNOWN, secret

# The driver's interface: what `run_policy_pack` takes, returns and raises, the two marked values the
# engine puts in `properties`, and `format_report` to show a report as `pulumi preview` does.
__all__ = [
    "UNKNOWN",
    "AnalyzedResource",
    "Diagnostic",
    "NotApplicable",
    "PackReport",
    "PolicyConfigError",
    "PolicyDriverError",
    "PolicyInfo",
    "PolicyPackRpcError",
    "PolicyPackStartError",
    "ProviderInfo",
    "Remediation",
    "format_report",
    "run_policy_pack",
    "secret",
]

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

_DIAL_TIMEOUT_SECONDS: Final = 10.0  # pluginRPCConnectionTimeout in the CLI

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

    def __init__(self, channel: Any, process: PackProcess, deadline: _Deadline) -> None:
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
        self.version = SDK_PACK_VERSION
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
        self.version = self._info.version or SDK_PACK_VERSION
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
    project_file = load_pack_project(pack_dir)
    user_config = dict(policy_config or {})
    parse_policy_config(user_config)  # a malformed config fails before the pack starts, as in the CLI
    config = dict(config or {})
    env = _pack_env(stack=stack, project=project, organization=organization, dry_run=dry_run, config=config)
    deadline = _Deadline(timeout)

    with contextlib.ExitStack() as cleanup:
        engine_address, engine = cleanup.enter_context(_serve_engine())
        process = PackProcess(
            [python, "-u", "-m", "pulumi.policy", engine_address, str(pack_dir)], pack_dir, env
        )
        cleanup.callback(process.stop)
        port = process.read_port(deadline.remaining())
        channel = cleanup.enter_context(grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS))
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
