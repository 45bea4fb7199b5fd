"""A component package run as the Pulumi CLI runs one, offline: its provider process (`python <package dir>
<engine address>`, the port line), a `RecordingMonitor` served over the ResourceMonitor gRPC protocol for
its Construct calls, and the ResourceProvider calls the engine makes (GetSchema, Construct).

The process, its port line and its shutdown are `offline.pack_process`'s (the CLI starts policy packs and
providers alike); the recording is `offline.recording_monitor`'s; values cross the wire through
`offline.wire_codec`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc, resource_pb2, resource_pb2_grpc

from gpushare.offline.pack_process import GRPC_OPTIONS, PackProcess, _serve_engine
from gpushare.offline.recording_monitor import RecordingMonitor
from gpushare.offline.wire_codec import encode_struct

START_TIMEOUT_SECONDS: Final = 60.0
CALL_TIMEOUT_SECONDS: Final = 60.0


class _ServedMonitor(resource_pb2_grpc.ResourceMonitorServicer):
    """The ResourceMonitor service in front of a `RecordingMonitor` (which answers plain method calls)."""

    def __init__(self, monitor: RecordingMonitor) -> None:
        self.monitor = monitor

    def SupportsFeature(self, request: Any, context: Any) -> Any:
        # MockMonitor's answer is a plain object; outputValues stays off, as in the program's own runs.
        answer = self.monitor.SupportsFeature(request)
        return resource_pb2.SupportsFeatureResponse(hasSupport=bool(answer.hasSupport))

    def GetDeploymentInfo(self, request: Any, context: Any) -> Any:
        return self.monitor.GetDeploymentInfo(request)

    def RegisterResource(self, request: Any, context: Any) -> Any:
        return self.monitor.RegisterResource(request)

    def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
        return self.monitor.RegisterResourceOutputs(request)

    def ReadResource(self, request: Any, context: Any) -> Any:
        return self.monitor.ReadResource(request)

    def Invoke(self, request: Any, context: Any) -> Any:
        return self.monitor.Invoke(request)

    def RegisterPackage(self, request: Any, context: Any) -> Any:
        return self.monitor.RegisterPackage(request)

    def SignalAndWaitForShutdown(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()


@contextlib.contextmanager
def serve_monitor(monitor: RecordingMonitor) -> Iterator[str]:
    """Serve `monitor` on 127.0.0.1; yields its address (a ConstructRequest's `monitorEndpoint`)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=GRPC_OPTIONS)
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(_ServedMonitor(monitor), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


@dataclass
class ComponentProvider:
    """A running component package's provider and a client of its ResourceProvider service."""

    process: PackProcess
    stub: provider_pb2_grpc.ResourceProviderStub

    def schema(self) -> dict[str, Any]:
        """GetSchema (version 0), parsed."""
        response = self.stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=CALL_TIMEOUT_SECONDS)
        schema: dict[str, Any] = json.loads(response.schema)
        return schema

    def construct(
        self,
        *,
        type_: str,
        name: str,
        inputs: Mapping[str, Any],
        monitor: RecordingMonitor,
        monitor_address: str,
        providers: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> provider_pb2.ConstructResponse:
        """Construct `type_` named `name` under the monitor's stack, as the engine does for a program's
        remote component; the provider registers the children against `monitor`. `providers`: package ->
        provider reference (`<urn>::<id>`). A refused Construct raises `grpc.RpcError`."""
        request = provider_pb2.ConstructRequest(
            project=monitor.project,
            stack=monitor.stack,
            organization="organization",
            dryRun=dry_run,
            parallel=1,
            monitorEndpoint=monitor_address,
            type=type_,
            name=name,
            parent=monitor.stack_urn,
            inputs=encode_struct(inputs),
            providers=dict(providers or {}),
        )
        return self.stub.Construct(request, timeout=CALL_TIMEOUT_SECONDS)


@contextlib.contextmanager
def start_component_provider(package_dir: Path, python: str = sys.executable) -> Iterator[ComponentProvider]:
    """Start the package's provider as the CLI's Python language host does (`python <dir> <engine>`, in the
    package directory; the CLI's interpreter is the package's virtualenv, `python` here) and stop it after."""
    package_dir = Path(package_dir).resolve()
    with _serve_engine() as (engine_address, _engine):
        process = PackProcess([python, str(package_dir), engine_address], package_dir, dict(os.environ))
        try:
            port = process.read_port(START_TIMEOUT_SECONDS)
            with grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS) as channel:
                yield ComponentProvider(process, provider_pb2_grpc.ResourceProviderStub(channel))
        finally:
            process.stop()
