"""`rollout-stuck` (gpushare/verify/checks.py) on the owners of a GPU-Pending pod that are NOT frozen
rollouts: a StatefulSet whose update is done (a scale-up waits for a GPU), one whose status has no
`updateRevision` yet, and a ReplicaSet whose Deployment was not read. Each is the pod's
`gpu-pending-pods` finding alone: the pod waits, but no release is frozen behind it.

The objects have the shapes `kubectl get statefulset/replicaset -o json` prints (apps/v1). A StatefulSet's
`status.updateRevision` equals `status.currentRevision` once a rolling update has finished, and the
controller writes both only after its first sync, so a StatefulSet just created has neither. The frozen
cases are in tests/test_verify.py (`test_deployment_frozen_behind_a_gpu_pending_pod`,
`test_statefulset_update_frozen_behind_a_gpu_pending_pod`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from conftest import PROJECT_DIR
from test_verify import NOW, SCHEDULER_MESSAGE, stamp
from test_verify_checks import pod

from gpushare.stack.loading import load_stack_file
from gpushare.verify.checks import run_checks
from gpushare.verify.expectations import ObjectRef, expected_cluster
from gpushare.verify.report import ClusterSnapshot

Obj = dict[str, Any]


def pending_pod(name: str, namespace: str, owner_kind: str, owner_name: str) -> Obj:
    """Pending, unbound, its PodScheduled condition carrying the scheduler's message; 5h 2m old."""
    waiting = pod(name, namespace=namespace, uid=f"uid-{name}", message=SCHEDULER_MESSAGE)
    waiting["metadata"]["creationTimestamp"] = stamp(timedelta(hours=5, minutes=2))
    waiting["metadata"]["ownerReferences"] = [{"kind": owner_kind, "name": owner_name, "controller": True}]
    return waiting


def findings(objects: dict[ObjectRef, Obj], pod: Obj) -> list[tuple[str, str]]:
    expected = expected_cluster(load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod"))
    snapshot = ClusterSnapshot(now=NOW, nodes=(), objects=objects, pending_pods=(pod,))
    return [(f.check, f.object) for f in run_checks(expected, snapshot).errors]


@pytest.mark.parametrize(
    "status",
    [
        # The update to asr-7c4d finished (both revisions equal); `kubectl scale --replicas=3` then added
        # asr-2, which waits for a GPU.
        pytest.param(
            {"currentRevision": "asr-7c4d", "updateRevision": "asr-7c4d", "updatedReplicas": 3},
            id="update-finished",
        ),
        # Not synced yet: no revisions at all (the controller has not written its status).
        pytest.param({"replicas": 0}, id="no-revisions"),
        # Only currentRevision: no update under way.
        pytest.param({"currentRevision": "asr-6b9f"}, id="no-update-revision"),
    ],
)
def test_a_statefulset_without_an_update_under_way_is_not_a_stuck_rollout(status: Obj) -> None:
    statefulset = {
        "kind": "StatefulSet",
        "metadata": {"name": "asr", "namespace": "speech"},
        "spec": {"replicas": 3},
        "status": status,
    }
    pod = pending_pod("asr-2", "speech", "StatefulSet", "asr")
    objects = {ObjectRef("StatefulSet", "speech", "asr"): statefulset}
    assert findings(objects, pod) == [("gpu-pending-pods", "pod/speech/asr-2")]


def test_a_replicaset_whose_deployment_was_not_read_is_not_judged() -> None:
    """The pod's ReplicaSet was read, its Deployment was not (deleted since, so the API server answered
    404): without the Deployment nothing says whether a rollout is under way, so no rollout-stuck."""
    replica_set = {
        "kind": "ReplicaSet",
        "metadata": {
            "name": "nlp-infer-5f6d8b",
            "namespace": "nlp",
            "annotations": {"deployment.kubernetes.io/revision": "3"},
            "ownerReferences": [{"kind": "Deployment", "name": "nlp-infer", "controller": True}],
            "creationTimestamp": stamp(timedelta(hours=5, minutes=3)),
        },
        "spec": {"replicas": 1},
        "status": {"replicas": 1, "readyReplicas": 0},
    }
    pod = pending_pod("nlp-infer-5f6d8b-mz2kq", "nlp", "ReplicaSet", "nlp-infer-5f6d8b")
    objects = {ObjectRef("ReplicaSet", "nlp", "nlp-infer-5f6d8b"): replica_set}
    assert findings(objects, pod) == [("gpu-pending-pods", "pod/nlp/nlp-infer-5f6d8b-mz2kq")]
    # A ReplicaSet no Deployment owns (created by hand): nothing to judge either.
    replica_set["metadata"]["ownerReferences"] = []
    assert findings(objects, pod) == [("gpu-pending-pods", "pod/nlp/nlp-infer-5f6d8b-mz2kq")]


@pytest.mark.parametrize(
    ("reference", "stuck"),
    [
        # `controller` left out (objects written by hand or by older tools): read as the owner.
        pytest.param({"kind": "StatefulSet", "name": "asr"}, True, id="controller-unset"),
        pytest.param(
            {"kind": "StatefulSet", "name": "asr", "controller": False}, False, id="not-the-controller"
        ),
    ],
)
def test_an_owner_reference_counts_unless_it_says_it_is_not_the_controller(
    reference: Obj, stuck: bool
) -> None:
    statefulset = {
        "kind": "StatefulSet",
        "metadata": {"name": "asr", "namespace": "speech"},
        "spec": {"replicas": 2},
        "status": {"currentRevision": "asr-6b9f", "updateRevision": "asr-7c4d", "updatedReplicas": 0},
    }
    pod = pending_pod("asr-1", "speech", "StatefulSet", "asr")
    pod["metadata"]["ownerReferences"] = [reference]
    objects = {ObjectRef("StatefulSet", "speech", "asr"): statefulset}
    expected = [("gpu-pending-pods", "pod/speech/asr-1")]
    if stuck:
        expected.append(("rollout-stuck", "statefulset/speech/asr"))
    assert findings(objects, pod) == expected
