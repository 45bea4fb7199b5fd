"""The recording monitor: a `MockMonitor` (`RecordingMonitor`) that keeps every registration (type, name,
engine-style URN, parent, provider reference, decoded wire inputs/outputs, dependencies, options, secret
paths, the provider version and download URL, aliases), every invoke and every `register_outputs` payload, and the engine side the SDK logs to
(`RecordingEngine`).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import pulumi
from google.protobuf import empty_pb2  # type: ignore[import-untyped]  # no stubs installed
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.proto import engine_pb2, provider_pb2, resource_pb2

from gpushare.offline.recorded import STACK_TYPE, ProgramRun, RecordedResource, engine_urn
from gpushare.offline.wire_codec import decode_struct, encode_struct, property_path

try:  # private helper: maps the transform callbacks of a request back to the Python callables
    from pulumi.runtime.mocks import _resolve_callbacks
except ImportError:  # pragma: no cover - only if a future SDK drops it

    def _resolve_callbacks(callbacks: Any) -> list[Any]:
        return []


_LOG = logging.getLogger("offline.program")


class RecordingMonitor(MockMonitor):
    """A `MockMonitor` that records every request and answers with engine-style URNs.

    It never calls `rpc.deserialize_properties`/`serialize_properties` (no event loop needed in
    the RPC path); the wire Structs are decoded and encoded by `decode_struct`/`encode_struct`.
    """

    def __init__(self, mocks: pulumi.runtime.Mocks, *, project: str, stack: str) -> None:
        super().__init__(mocks)
        self.project = project
        self.stack = stack
        self._lock = threading.Lock()
        self._registrations: list[RecordedResource] = []
        self._by_urn: dict[str, RecordedResource] = {}
        self._registered_outputs: dict[str, dict[str, Any]] = {}
        self._invokes: list[tuple[str, dict[str, Any]]] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(self.stack, self.project, parent, type_, name)

    @property
    def stack_urn(self) -> str:
        return engine_urn(self.stack, self.project, None, STACK_TYPE, f"{self.project}-{self.stack}")

    def _record(self, resource: RecordedResource) -> None:
        with self._lock:
            self._registrations.append(resource)
            self._index(resource)

    def _index(self, resource: RecordedResource) -> None:
        """Make `resource` findable by URN (`getResource`); the caller holds the lock."""
        self._by_urn[resource.urn] = resource
        # MockMonitor's own registry backs ExistsResource and get_registered_resources().
        self.resources[resource.urn] = MockMonitor.ResourceRegistration(
            resource.urn, resource.id or "", resource.outputs
        )

    def know(self, resources: Iterable[RecordedResource]) -> None:
        """Resources the engine already holds, such as the providers of the program whose remote component
        is being constructed: `getResource` finds them, yet they are not this run's registrations."""
        with self._lock:
            for resource in resources:
                self._index(resource)

    def RegisterResource(self, request: resource_pb2.RegisterResourceRequest) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        inputs, secret_paths = decode_struct(request.object)
        resource_id: str | None = None
        outputs: dict[str, Any] = {}
        response = resource_pb2.RegisterResourceResponse(urn=urn)
        if request.type != STACK_TYPE:  # the root stack gets its outputs from register_outputs
            resource_id, state = self.mocks.new_resource(
                MockResourceArgs(
                    typ=request.type,
                    name=request.name,
                    inputs=copy.deepcopy(inputs),
                    provider=request.provider,
                    resource_id=request.importId,
                    custom=request.custom,
                    transforms=_resolve_callbacks(request.transforms),
                )
            )
            # Like the engine: outputs at secret input paths and additionalSecretOutputs stay secret.
            secret_outputs = {
                *secret_paths,
                *(property_path("", name) for name in request.additionalSecretOutputs),
            }
            response_object = encode_struct(state, secret_outputs)
            # Record what the program receives (sorted keys, ints), not the mock's own objects.
            outputs, _ = decode_struct(response_object)
            response = resource_pb2.RegisterResourceResponse(
                urn=urn, id=resource_id or "", object=response_object
            )
        self._record(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=urn,
                parent=request.parent or None,
                custom=request.custom,
                remote=request.remote,
                provider=request.provider or None,
                inputs=inputs,
                outputs=outputs,
                # The SDK builds these from sets (hash order varies); the engine treats them as sets too.
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
                id=resource_id or None,
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
        return response

    def ReadResource(self, request: resource_pb2.ReadResourceRequest) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        inputs, secret_paths = decode_struct(request.properties)
        resource_id, state = self.mocks.new_resource(
            MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=copy.deepcopy(inputs),
                provider=request.provider,
                resource_id=request.id,
                custom=True,
            )
        )
        read = RecordedResource(
            type=request.type,
            name=request.name,
            urn=urn,
            parent=request.parent or None,
            custom=True,
            remote=False,
            provider=request.provider or None,
            inputs=inputs,
            outputs=decode_struct(encode_struct(state, secret_paths))[0],
            dependencies=sorted(set(request.dependencies)),
            property_dependencies={},
            protect=False,
            ignore_changes=[],
            delete_before_replace=None,
            additional_secret_outputs=list(request.additionalSecretOutputs),
            secret_input_paths=secret_paths,
            id=resource_id or request.id or None,
            external=True,
            version=request.version,
            plugin_download_url=request.pluginDownloadURL,
        )
        self._record(read)
        return resource_pb2.ReadResourceResponse(
            urn=urn, properties=encode_struct(read.outputs, secret_paths)
        )

    def Invoke(self, request: resource_pb2.ResourceInvokeRequest) -> Any:
        args, _ = decode_struct(request.args)
        with self._lock:
            self._invokes.append((request.tok, copy.deepcopy(args)))
        if request.tok == "pulumi:pulumi:getResource":
            # Used by the SDK to rehydrate a resource reference (`opts.urn`).
            with self._lock:
                found = self._by_urn.get(str(args.get("urn")))
            if found is None:
                raise KeyError(f"unknown resource {args.get('urn')}")
            result: Mapping[str, Any] = {"urn": found.urn, "id": found.id or "", "state": found.outputs}
            failures: list[tuple[str, str]] | None = None
        else:
            answer = self.mocks.call(
                MockCallArgs(token=request.tok, args=copy.deepcopy(args), provider=request.provider)
            )
            if isinstance(answer, dict):
                result, failures = answer, None
            else:
                result, failures = answer
        return resource_pb2.ResourceInvokeResponse(
            **{
                "return": encode_struct(result),
                "failures": [
                    provider_pb2.CheckFailure(property=prop, reason=reason) for prop, reason in failures or []
                ],
            }
        )

    def RegisterResourceOutputs(self, request: resource_pb2.RegisterResourceOutputsRequest) -> Any:
        outputs, _ = decode_struct(request.outputs)
        with self._lock:
            self._registered_outputs[request.urn] = outputs
        return empty_pb2.Empty()

    def program_run(self, logs: Sequence[tuple[str, str]] = ()) -> ProgramRun:
        """Freeze what was recorded into a `ProgramRun`."""
        with self._lock:
            registered = copy.deepcopy(self._registered_outputs)
            registrations = list(self._registrations)
            invokes = list(self._invokes)
        stack_outputs = registered.pop(self.stack_urn, {})
        resources = []
        for item in registrations:
            if item.type == STACK_TYPE:
                item = dataclasses.replace(item, outputs=copy.deepcopy(stack_outputs))
            elif not item.custom and item.urn in registered:
                # The engine stores a component's register_outputs payload as its outputs.
                item = dataclasses.replace(
                    item, outputs={**item.outputs, **copy.deepcopy(registered[item.urn])}
                )
            resources.append(item)
        return ProgramRun(
            resources=resources,
            stack_outputs=stack_outputs,
            component_outputs=registered,
            invokes=invokes,
            logs=list(logs),
        )


class RecordingEngine:
    """The `pulumirpc.Engine` side the SDK calls: log messages, version checks."""

    _LEVELS: Final = {
        engine_pb2.DEBUG: logging.DEBUG,
        engine_pb2.INFO: logging.INFO,
        engine_pb2.WARNING: logging.WARNING,
        engine_pb2.ERROR: logging.ERROR,
    }

    def __init__(self) -> None:
        self.logs: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def Log(self, request: engine_pb2.LogRequest) -> empty_pb2.Empty:
        level = self._LEVELS.get(request.severity, logging.INFO)
        if level > logging.DEBUG:  # the SDK's own debug chatter is not worth keeping
            with self._lock:
                self.logs.append((logging.getLevelName(level).lower(), request.message))
        if _LOG.isEnabledFor(level):
            _LOG.log(level, "%s", request.message)
        return empty_pb2.Empty()

    def RequirePulumiVersion(self, request: engine_pb2.RequirePulumiVersionRequest) -> empty_pb2.Empty:
        return empty_pb2.Empty()  # there is no CLI whose version could be too old
