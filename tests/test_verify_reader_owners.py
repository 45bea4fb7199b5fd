"""gpushare/verify/reader.py: each object verify reads by name is read once per run, however many pods
point at it (a memo of what was fetched), met through `verify` against the fake API server. In a file of
its own beside tests/test_verify_reader.py, whose tests need no render of the prod stack."""

from __future__ import annotations

import copy
from pathlib import Path

import test_verify
from test_verify import FakeApiServer, Obj, checks, find, freeze_rollout, verify

server = test_verify.server
kubeconfig = test_verify.kubeconfig
prod_render = test_verify.prod_render
prod = test_verify.prod


def test_an_owner_of_two_pending_pods_is_read_once(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # The seed's frozen rollout with a second Pending pod of the same new ReplicaSet: verify reads that
    # ReplicaSet and its Deployment once each (one GET per object), not once per pod.
    freeze_rollout(prod)
    second = copy.deepcopy(find(prod, "Pod", "nlp-infer-5f6d8b-mz2kq"))
    second["metadata"]["name"] = "nlp-infer-5f6d8b-q7wfn"
    prod.append(second)
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["gpu-pending-pods", "gpu-pending-pods", "rollout-stuck"])
    paths = [path.split("?")[0] for method, path in server.requests if method == "GET"]
    assert paths.count("/apis/apps/v1/namespaces/nlp/replicasets/nlp-infer-5f6d8b") == 1
    assert paths.count("/apis/apps/v1/namespaces/nlp/deployments/nlp-infer") == 1
