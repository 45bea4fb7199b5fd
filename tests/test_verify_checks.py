"""gpushare/verify/workload_checks.py on its own: which pods `gpu-pending-pods` names, from pods and events as the API
server lists them (the shapes of `kubectl get pod -o json` and `kubectl get events -o json`).

A FailedScheduling event outlives the wait it reported: Kubernetes keeps events for an hour (kube-apiserver
--event-ttl) and a pod that got its GPU since is bound (`spec.nodeName`) and, once its containers start,
Running. Only a pod that is Pending *and* unbound still waits; the end-to-end case runs `verify` against the
fake API server with the prod cluster (tests/test_verify.py builds it from the program's output).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from test_verify import (  # the prod cluster and its fake API server (module fixtures)
    SCHEDULER_MESSAGE,
    kubeconfig,
    prod,
    prod_render,
    server,
    stamp,
    verify,
)

from fake_cluster.apiserver import FakeApiServer
from gpushare.verify.workload_checks import gpu_pending_pods

__all__ = ["kubeconfig", "prod", "prod_render", "server"]  # fixtures used by name below

Obj = dict[str, Any]
OTHER_MESSAGE = "0/8 nodes are available: 8 Insufficient cpu."


def pod(
    name: str = "nlp-infer-5f6d8b-mz2kq",
    *,
    phase: str = "Pending",
    node: str | None = None,
    message: str | None = None,
    uid: str = "uid-pod-1",
    namespace: str = "nlp",
) -> Obj:
    conditions = []
    if message is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        )
    spec: Obj = {"containers": [{"name": "infer", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": stamp()},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def event(
    message: str = SCHEDULER_MESSAGE,
    *,
    name: str = "nlp-infer-5f6d8b-mz2kq",
    uid: str | None = "uid-pod-1",
    namespace: str = "nlp",
    kind: str = "Pod",
    minutes_ago: int = 3,
) -> Obj:
    involved: Obj = {"kind": kind, "namespace": namespace, "name": name}
    if uid is not None:
        involved["uid"] = uid
    return {
        "kind": "Event",
        "metadata": {"name": f"{name}.{minutes_ago}", "namespace": namespace},
        "involvedObject": involved,
        "reason": "FailedScheduling",
        "message": message,
        "type": "Warning",
        "lastTimestamp": stamp(timedelta(minutes=minutes_ago)),
    }


def names(found: list[tuple[Obj, str]]) -> list[tuple[str, str]]:
    return [(p["metadata"]["name"], reason) for p, reason in found]


def test_an_unbound_pending_pod_is_named_with_the_schedulers_message() -> None:
    assert names(gpu_pending_pods([pod(message=SCHEDULER_MESSAGE)], [])) == [
        ("nlp-infer-5f6d8b-mz2kq", SCHEDULER_MESSAGE)
    ]


@pytest.mark.parametrize(
    "waited",
    [
        pytest.param(pod(node="10.0.1.11"), id="bound-still-pending"),  # ContainerCreating on its node
        pytest.param(pod(phase="Running", node="10.0.1.11"), id="running"),
        pytest.param(pod(phase="Succeeded", node="10.0.1.11"), id="succeeded"),
        pytest.param(pod(phase="Running"), id="running-without-node"),  # phase alone decides too
    ],
)
def test_a_stale_failed_scheduling_event_does_not_name_a_pod_that_got_its_gpu(waited: Obj) -> None:
    assert gpu_pending_pods([waited], [event()]) == []
    # The same pod unbound and Pending is named from that event.
    waiting = copy.deepcopy(waited)
    waiting["status"]["phase"] = "Pending"
    waiting["spec"].pop("nodeName", None)
    assert names(gpu_pending_pods([waiting], [event()])) == [("nlp-infer-5f6d8b-mz2kq", SCHEDULER_MESSAGE)]


def test_a_bound_pod_whose_condition_still_carries_the_old_message_is_not_named() -> None:
    assert gpu_pending_pods([pod(node="10.0.1.11", message=SCHEDULER_MESSAGE)], []) == []


def test_events_are_matched_by_uid_when_they_carry_one() -> None:
    # An event of an earlier pod of the same name (a StatefulSet's pod recreated): another uid.
    assert gpu_pending_pods([pod()], [event(uid="uid-pod-0")]) == []
    # Without a uid: matched by namespace and name, both.
    assert names(gpu_pending_pods([pod()], [event(uid=None)])) == [
        ("nlp-infer-5f6d8b-mz2kq", SCHEDULER_MESSAGE)
    ]
    assert gpu_pending_pods([pod()], [event(uid=None, namespace="asr")]) == []
    assert gpu_pending_pods([pod()], [event(uid=None, name="nlp-infer-5f6d8b-other")]) == []


def test_only_pod_events_about_gpus_count_and_the_newest_speaks() -> None:
    assert gpu_pending_pods([pod()], [event(kind="ReplicaSet")]) == []
    assert gpu_pending_pods([pod()], [event(OTHER_MESSAGE)]) == []
    assert gpu_pending_pods([pod(message=OTHER_MESSAGE)], []) == []
    newer = "0/9 nodes are available: 9 Insufficient nvidia.com/mig-1g.12gb."
    found = gpu_pending_pods([pod()], [event(minutes_ago=30), event(newer, minutes_ago=1)])
    assert names(found) == [("nlp-infer-5f6d8b-mz2kq", newer)]


def test_a_scheduled_condition_that_is_true_is_not_a_wait() -> None:
    scheduled = pod()
    scheduled["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "message": SCHEDULER_MESSAGE}
    ]
    assert gpu_pending_pods([scheduled], []) == []
    other = pod()
    other["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": SCHEDULER_MESSAGE}]
    assert gpu_pending_pods([other], []) == []


def test_verify_passes_a_cluster_whose_only_gpu_wait_is_an_hour_old_event(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    """The NLP pod got its slot 40 minutes ago and is still pulling its image on the L20 node: `verify`
    lists it (the Pending field selector) and the FailedScheduling event of its wait, and passes."""
    bound = pod(node="10.0.1.11")
    bound["status"]["containerStatuses"] = [
        {
            "name": "infer",
            "image": "nlp/infer:3",
            "imageID": "",  # empty until the image is pulled
            "ready": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}},
        }
    ]
    prod += [bound, event(uid=None, minutes_ago=41)]
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["findings"]) == (0, [])
    # Unbound again, the same objects are one gpu-pending-pods finding.
    del bound["spec"]["nodeName"]
    bound["status"].pop("containerStatuses")
    code, report = verify(server, kubeconfig, prod)
    assert code == 1
    assert [(f["check"], f["object"]) for f in report["findings"]] == [
        ("gpu-pending-pods", "pod/nlp/nlp-infer-5f6d8b-mz2kq")
    ]
