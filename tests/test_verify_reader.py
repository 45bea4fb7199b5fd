"""gpushare/verify/reader.py: the reading bounds at their documented values, met through `verify` against
the fake API server (fake_cluster/apiserver.py), whose node list is answered page after page.

test_verify_hostile.py shrinks the bounds to show that each one is enforced; here the real ones are kept,
for what only they decide: how much of a big cluster is read before verify refuses it; and that an object
read by name is read once, however many pods point at it."""

from __future__ import annotations

import copy
from pathlib import Path

import test_verify
from test_verify import Obj, checks, find, freeze_rollout, verify
from test_verify_hostile import nodes_path, run_loaded

from fake_cluster.apiserver import FakeApiServer, Reply

server = test_verify.server
kubeconfig = test_verify.kubeconfig
prod_render = test_verify.prod_render
prod = test_verify.prod


def _node_pages(server: FakeApiServer, pages_with_continue: int) -> list[dict[str, list[str]]]:
    """Nodes (none) answered page after page: the first `pages_with_continue` pages name a new `continue`
    token each, the next one none. Returns the queries of the node lists asked for."""
    queries: list[dict[str, list[str]]] = []

    def answer(path: str, query: dict[str, list[str]]) -> Reply | None:
        if not nodes_path(path):
            return None
        queries.append(query)
        body = server.answer(path)
        if len(queries) <= pages_with_continue:
            body["metadata"]["continue"] = f"page-{len(queries)}"
        return Reply(200, body)

    server.load([])
    server.override = answer
    return queries


def test_a_list_of_more_than_200_pages_of_500_is_refused_after_200_requests(
    server: FakeApiServer, kubeconfig: Path
) -> None:
    # 200 pages of 500 = 100 000 objects, the bound reader.py documents; a server that always has another
    # page is asked exactly 200 times, each time for `limit=500`, then refused naming the bound.
    queries = _node_pages(server, pages_with_continue=10_000)
    code, _, err, _ = run_loaded(kubeconfig)
    assert (code, err) == (
        2,
        f"verify: cannot check: {server.url}: list nodes: more than 200 pages of 500; not read further\n",
    )
    assert len(queries) == 200
    assert {query["limit"][0] for query in queries} == {"500"}


def test_a_list_of_exactly_200_pages_is_read_to_its_end(server: FakeApiServer, kubeconfig: Path) -> None:
    # 199 pages name a `continue`, the 200th none: the whole list is read (no node at all, so verify has
    # nothing of the stack's pools to check: its own exit 2, not the page bound's).
    queries = _node_pages(server, pages_with_continue=199)
    code, _, err, _ = run_loaded(kubeconfig)
    # (An empty cluster has no gpushare object to confirm whose it is: that note comes first.)
    assert (code, err.splitlines()[1:]) == (
        2,
        [f"verify: cannot check: no node of any pool of stack prod is in the cluster at {server.url}"],
    )
    assert err.startswith(f"verify: cannot confirm that the cluster at {server.url} is stack prod")
    assert len(queries) == 200


# Each object verify reads by name is read once per run, however many pods point at it (a memo of what
# was fetched).
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


def test_a_plugin_daemonset_selecting_by_expressions_only_still_has_its_pods_read(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    # The L20 plugin DaemonSet recreated by hand with a set-based selector (no matchLabels): its
    # crash-looping pod is still found, read by its owner (before, verify read no pods for it at all).
    daemonset = next(o for o in prod if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("-l20"))
    labels = daemonset["spec"]["selector"].pop("matchLabels")
    daemonset["spec"]["selector"]["matchExpressions"] = [
        {"key": key, "operator": "In", "values": [value]} for key, value in sorted(labels.items())
    ]
    pod = find(prod, "Pod", "nvidia-device-plugin-daemonset-l20-x7k2p")
    pod["status"]["containerStatuses"][0].update(
        ready=False,
        restartCount=7,
        state={
            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
        },
    )
    code, report = verify(server, kubeconfig, prod)
    assert (code, checks(report)) == (1, ["plugin-crashloop"])


def test_a_hard_stop_swallowed_once_is_raised_again() -> None:
    # Python swallows an exception raised inside a garbage-collector callback; the stop repeats every
    # HARD_STOP_REPEAT_SECONDS (0.25 s), so the run still ends (it ended only at the next deadline before).
    import contextlib
    import time

    import pytest

    from gpushare.verify.reader import ClusterUnavailable, hard_stop

    started = time.monotonic()
    with pytest.raises(ClusterUnavailable) as raised, hard_stop(0.2, "https://api"):
        with contextlib.suppress(BaseException):  # the first stop, lost as a GC callback would lose it
            time.sleep(5)
        time.sleep(5)
    assert str(raised.value) == "https://api: no complete answers within 0.2 s; verify stopped"
    assert time.monotonic() - started < 2


def test_a_request_or_a_run_with_exactly_no_time_left_is_out_of_time() -> None:
    """At 0 s left there is nothing to wait for an answer with: the request is not sent, and the message
    names what ran out, the request's REQUEST_SECONDS or, when the run has 0 s left too, the run's
    RUN_SECONDS for all its requests."""
    from types import SimpleNamespace

    import pytest

    from gpushare.verify import reader

    class _Spent(reader.Deadline):
        def remaining(self) -> float:
            return 0.0

    api = SimpleNamespace(configuration=SimpleNamespace(host="https://api"))
    request_spent = reader.BoundedGet(api)  # type: ignore[arg-type]
    with pytest.raises(reader.ClusterUnavailable) as raised:
        request_spent._timeout(_Spent(reader.REQUEST_SECONDS), "GET /api/v1/nodes")
    assert str(raised.value) == "https://api: GET /api/v1/nodes: no complete answer within 30 s"
    run_spent = reader.BoundedGet(api, run=_Spent(reader.RUN_SECONDS))  # type: ignore[arg-type]
    with pytest.raises(reader.ClusterUnavailable) as raised:
        run_spent._timeout(reader.Deadline(reader.REQUEST_SECONDS), "GET /api/v1/nodes")
    assert str(raised.value) == (
        "https://api: GET /api/v1/nodes: no answer within verify's 120 s for all its requests"
    )
