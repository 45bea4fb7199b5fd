"""gpushare.offline.policy_driver's requests on their own: the resource options a pack's Analyze sees.

The engine fills `AnalyzerResourceOptions.parent` with the parent's URN and leaves it empty for a root
(pkg/resource/plugin/analyzer_plugin.go, `marshalResourceOptions`: `Parent: string(opts.Parent)`), and
sends customTimeouts even when unset; the stack-level `AnalyzerResource.parent` is the same URN. A policy
reads them as `args.opts.parent` / `resource.parent`. tests/test_policy_driver.py runs a pack process;
these pin the messages without one.
"""

from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc
import pytest
from pulumi.runtime.proto import analyzer_pb2

from gpushare.offline.policy_driver import (
    _analyze_request,
    _AnalyzerClient,
    _Deadline,
    _Session,
    _stack_resource,
    _to_wire,
)
from gpushare.offline.policy_model import AnalyzedResource, PolicyInfo, PolicyPackRpcError

CLUSTER = "urn:pulumi:prod::gpushare::gpushare:index:GpuSharingCluster::cluster"
CONFIG_MAP = (
    "urn:pulumi:prod::gpushare::gpushare:index:GpuSharingCluster$kubernetes:core/v1:ConfigMap::plugin-config"
)


def test_a_child_carries_its_parents_urn_in_its_options() -> None:
    child = AnalyzedResource("kubernetes:core/v1:ConfigMap", "plugin-config", CONFIG_MAP, {}, parent=CLUSTER)
    request = _analyze_request(child, {})
    assert (request.urn, request.options.parent, request.options.protect) == (CONFIG_MAP, CLUSTER, False)
    assert _stack_resource(child, {}).parent == CLUSTER


def test_a_root_has_an_empty_parent_and_a_protected_one_says_so() -> None:
    root = AnalyzedResource("gpushare:index:GpuSharingCluster", "cluster", CLUSTER, {}, protect=True)
    request = _analyze_request(root, {})
    assert (request.options.parent, request.options.protect) == ("", True)
    assert request.options.HasField("customTimeouts")
    assert _stack_resource(root, {}).parent == ""


def _session_with(policies: list[PolicyInfo]) -> _Session:
    session = _Session(client=None, pack_dir=Path("pack"), shown_path="pack", stack_urn="urn:pulumi:s::p::s")  # type: ignore[arg-type]
    session.policies = policies
    return session


def test_a_diagnostic_without_severity_takes_its_own_policys_declared_one() -> None:
    """The driver fills an unspecified severity from the declaration of the policy the diagnostic names,
    not another policy's: two policies declared low and high, a diagnostic of the second without a
    severity is `high`; one that states `medium` keeps it."""
    session = _session_with(
        [
            PolicyInfo("a-low", "", "mandatory", None, severity="low"),
            PolicyInfo("b-high", "", "mandatory", None, severity="high"),
        ]
    )
    unstated = analyzer_pb2.AnalyzeDiagnostic(policyName="b-high", message="m")
    stated = analyzer_pb2.AnalyzeDiagnostic(
        policyName="b-high", message="m", severity=analyzer_pb2.POLICY_SEVERITY_MEDIUM
    )
    assert session._diagnostic(unstated, CLUSTER).severity == "high"
    assert session._diagnostic(stated, CLUSTER).severity == "medium"


@pytest.mark.parametrize("value", [b"ab", bytearray(b"ab")])
def test_bytes_are_refused_on_the_wire_not_sent_as_a_list_of_numbers(value: object) -> None:
    """A protobuf Struct has no bytes: a bytes value is refused by name (a Sequence, but not a list)."""
    with pytest.raises(TypeError) as caught:
        _to_wire({"data": value}, "inputs")
    assert (
        str(caught.value) == f"property inputs.data has a {type(value).__name__}, which cannot go on the wire"
    )


class _StoppedPack:
    """What _AnalyzerClient asks of a pack process when an RPC fails: stop it, then read its stderr."""

    def __init__(self) -> None:
        self.stopped = False
        self.stderr = ""

    def stop(self) -> None:
        self.stopped = True


def test_only_the_rpcs_the_engine_may_skip_are_allowed_to_be_unimplemented() -> None:
    """The CLI skips an analyzer that does not implement Handshake, ConfigureStack, Remediate or
    AnalyzeStack (optional=True); any other RPC it needs (here Analyze) failing UNIMPLEMENTED fails the
    preview. A gRPC server with no Analyzer service answers UNIMPLEMENTED to every call."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            pack = _StoppedPack()
            client = _AnalyzerClient(channel, pack, _Deadline(30))  # type: ignore[arg-type]
            assert client.call("Handshake", analyzer_pb2.AnalyzerHandshakeRequest(), optional=True) is None
            assert not pack.stopped
            with pytest.raises(PolicyPackRpcError) as caught:
                client.call("Analyze", analyzer_pb2.AnalyzeRequest())
            assert (caught.value.rpc, caught.value.code, pack.stopped) == ("Analyze", "UNIMPLEMENTED", True)
    finally:
        server.stop(None)
