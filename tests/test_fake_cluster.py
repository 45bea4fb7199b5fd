"""fake_cluster/apiserver.py's pod index by spec.nodeName: a per-node pod list answers exactly what the
scan of every pod answered (the index narrows what the selectors look at, it decides nothing)."""

from __future__ import annotations

from typing import Any

from fake_cluster.apiserver import FakeApiServer
from fake_cluster.objects import Obj


def _pod(name: str, node_name: str | None, phase: str = "Running", namespace: str = "default") -> Obj:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name is not None:
        spec["nodeName"] = node_name
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


PODS = [
    _pod("a", "10.0.0.1"),
    _pod("b", "10.0.0.2"),
    _pod("c", "10.0.0.1", phase="Pending"),
    _pod("d", None, phase="Pending"),
    _pod("e", "10.0.0.1", namespace="nlp"),
]


def _names(server: FakeApiServer, path: str, selector: str) -> list[str]:
    answer = server.answer(path, {"fieldSelector": [selector]})
    return [item["metadata"]["name"] for item in answer["items"]]


def test_pods_of_a_node_through_the_index_and_through_the_scan() -> None:
    server = FakeApiServer()
    try:
        server.load(PODS)
        # Indexed (one requirement): every namespace, in (namespace, name) order; `==` is the same operator.
        assert _names(server, "/api/v1/pods", "spec.nodeName=10.0.0.1") == ["a", "c", "e"]
        assert _names(server, "/api/v1/pods", "spec.nodeName==10.0.0.1") == ["a", "c", "e"]
        assert _names(server, "/api/v1/namespaces/nlp/pods", "spec.nodeName=10.0.0.1") == ["e"]
        # An empty value selects the pods no node holds yet, as the real server does.
        assert _names(server, "/api/v1/pods", "spec.nodeName=") == ["d"]
        assert _names(server, "/api/v1/pods", "spec.nodeName=10.9.9.9") == []
        # Not indexed (two requirements, or a negation): the scan, same answers.
        assert _names(server, "/api/v1/pods", "spec.nodeName=10.0.0.1,status.phase=Running") == ["a", "e"]
        assert _names(server, "/api/v1/pods", "spec.nodeName!=10.0.0.1") == ["b", "d"]
        # A later load rebuilds the index.
        server.load(PODS[:2])
        assert _names(server, "/api/v1/pods", "spec.nodeName=10.0.0.1") == ["a"]
    finally:
        server.close()
