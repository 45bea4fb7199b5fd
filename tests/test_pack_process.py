"""gpushare.offline.pack_process: the gRPC limits the offline engine shares with the packs and providers it
starts. pulumi_policy serves a pack with 400 MiB message limits, far above gRPC's 4 MiB default receive
limit; the engine side must take what a pack may send (here a Log call of 5 MiB, as a pack printing a large
resource would make), over a channel with the same options, in this process (no pack started)."""

from __future__ import annotations

import grpc  # type: ignore[import-untyped]
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc

from gpushare.offline.pack_process import GRPC_OPTIONS, _serve_engine

FIVE_MIB = 5 * 1024 * 1024  # above gRPC's default 4 MiB receive limit (4194304 bytes)


def test_the_engine_takes_a_message_above_grpcs_default_limit() -> None:
    # 400 * 1024 * 1024 must stay an int: gRPC ignores a non-int option (400 * 1024 / 1024 = 400.0 leaves
    # the 4 MiB default, and this call is refused RESOURCE_EXHAUSTED).
    message = "x" * FIVE_MIB
    with (
        _serve_engine() as (address, engine),
        grpc.insecure_channel(address, options=GRPC_OPTIONS) as channel,
    ):
        engine_pb2_grpc.EngineStub(channel).Log(
            engine_pb2.LogRequest(severity=engine_pb2.INFO, message=message), timeout=30
        )
    assert engine.logs == [f"info: {message}"]
