"""`verify`'s checks (gpushare/verify/checks.py and the modules it runs) at their edges, on hand-built
snapshots of the seed's prod cluster: a node with no allocatable entry for the planned resource at all, a
GPU node known only by TKE's label, the device-plugin ConfigMap absent, a Deployment whose rollout is
neither past its deadline nor mid-way.

The objects have the shapes the API server returns (`kubectl get node -o json`); the plan's numbers are
the seed's: L20 8 slots (floor(0.9 x 46068 / 4621)), T4 3 (floor(0.9 x 15360 / 4401)).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from conftest import PROJECT_DIR
from test_verify_rollouts import pending_pod

from fake_cluster.objects import NOW, node, stamp
from gpushare.stack.loading import load_stack_file
from gpushare.verify.checks import run_checks
from gpushare.verify.expectations import ClusterExpectation, ObjectRef, expected_cluster
from gpushare.verify.memory_budget import describe_replicas
from gpushare.verify.report import ClusterSnapshot, NodeRow

Obj = dict[str, Any]
L20_NODE, T4_NODE = "10.0.1.11", "10.0.1.12"


@pytest.fixture(scope="module")
def prod() -> ClusterExpectation:
    return expected_cluster(load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml", "prod"))


def pool_node(prod: ClusterExpectation, pool: str, name: str, gpus: dict[str, str]) -> Obj:
    labels = dict(next(p for p in prod.pools if p.name == pool).node_labels)
    return node(name, labels, gpus)


def healthy_nodes(prod: ClusterExpectation) -> tuple[Obj, Obj]:
    return (
        pool_node(prod, "l20", L20_NODE, {"nvidia.com/gpu": "8"}),
        pool_node(prod, "t4", T4_NODE, {"nvidia.com/gpu": "3"}),
    )


def config_map(prod: ClusterExpectation) -> dict[ObjectRef, Obj]:
    """The ConfigMap as `pulumi up` writes it: one key per pool, the planned config."""
    data = {entry.key: entry.text for entry in prod.entries}
    return {prod.config_map: {"kind": "ConfigMap", "metadata": {"name": prod.config_map.name}, "data": data}}


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"allocatable": {"cpu": "31600m", "pods": "61"}}, id="no-gpu-entry"),
        pytest.param({}, id="no-allocatable-at-all"),
        pytest.param({"allocatable": None}, id="allocatable-null"),
    ],
)
def test_a_node_without_the_planned_resource_in_its_allocatable_has_zero_slots(
    prod: ClusterExpectation, status: Obj
) -> None:
    l20, t4 = healthy_nodes(prod)
    l20["status"] = {**status, "conditions": l20["status"]["conditions"]}
    report = run_checks(prod, ClusterSnapshot(now=NOW, nodes=(l20, t4), objects=config_map(prod)))
    # Nothing advertised is 0 slots against the plan's 8 (8 replicas x 1 L20 per node).
    assert [f.as_json() for f in report.findings] == [
        {
            "check": "slots-allocatable",
            "severity": "error",
            "object": f"node/{L20_NODE}",
            "message": "pool l20: allocatable nvidia.com/gpu is 0, the plan gives 8 (8 replicas x 1 GPU(s)); "
            "the plugin on this node does not serve the pool's config (see the plugin findings, or "
            "`kubectl describe node`)",
        }
    ]
    assert report.pools[0].nodes == (NodeRow(L20_NODE, 8, 0),)


@pytest.mark.parametrize(
    ("labels", "gpus", "warned"),
    [
        # TKE labels its GPU nodes nvidia-device-enable=enable; a node whose plugin has not started yet (or
        # has crashed) advertises no nvidia.com/gpu, and is still a GPU node in no gpushare pool.
        pytest.param({"nvidia-device-enable": "enable"}, {}, True, id="label-alone"),
        # The label with any value: qGPU nodes carry `disable` (TKE's NVIDIA plugin off), still GPU nodes.
        pytest.param({"nvidia-device-enable": "disable"}, {}, True, id="label-disable"),
        # Capacity alone (no label): a GPU node too.
        pytest.param({}, {"nvidia.com/gpu": "1"}, True, id="capacity-alone"),
        # A CPU node: no label, nothing of nvidia.com/, or an entry of 0 (a drained plugin's leftover).
        pytest.param({}, {}, False, id="cpu-node"),
        pytest.param({}, {"nvidia.com/gpu": "0"}, False, id="zero-gpus-no-label"),
    ],
)
def test_a_gpu_node_in_no_pool_is_known_by_its_label_or_its_resources(
    prod: ClusterExpectation, labels: dict[str, str], gpus: dict[str, str], warned: bool
) -> None:
    stray = node("10.0.1.20", labels, gpus)
    report = run_checks(
        prod, ClusterSnapshot(now=NOW, nodes=(*healthy_nodes(prod), stray), objects=config_map(prod))
    )
    expected = [
        {
            "check": "node-in-no-pool",
            "severity": "warning",
            "object": "node/10.0.1.20",
            "message": "a GPU node in no gpushare pool (no gpushare.io/pool label): its GPUs are not "
            "planned, and whatever plugin runs there is not checked",
        }
    ]
    assert [f.as_json() for f in report.findings] == (expected if warned else [])


def test_a_missing_device_plugin_config_map_is_one_error_and_nothing_else_of_it(
    prod: ClusterExpectation,
) -> None:
    snapshot = ClusterSnapshot(now=NOW, nodes=healthy_nodes(prod), missing=frozenset({prod.config_map}))
    assert [f.as_json() for f in run_checks(prod, snapshot).findings] == [
        {
            "check": "plugin-config-current",
            "severity": "error",
            "object": "configmap/kube-system/time-slicing-config",
            "message": "the device-plugin ConfigMap does not exist: no pool has a config; `pulumi up` creates it",
        }
    ]


def rollout(status: Obj, *, progressing: str | None, new_revision: bool) -> dict[ObjectRef, Obj]:
    """nlp-infer at revision 3 and the ReplicaSet its pending pod belongs to (revision 3 or 2)."""
    conditions = (
        []
        if progressing is None
        else [{"type": "Progressing", "status": progressing, "reason": "ReplicaSetUpdated"}]
    )
    deployment = {
        "kind": "Deployment",
        "metadata": {
            "name": "nlp-infer",
            "namespace": "nlp",
            "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {"replicas": 2},
        "status": {**status, "conditions": conditions},
    }
    replica_set = {
        "kind": "ReplicaSet",
        "metadata": {
            "name": "nlp-infer-5f6d8b",
            "namespace": "nlp",
            "annotations": {"deployment.kubernetes.io/revision": "3" if new_revision else "2"},
            "ownerReferences": [{"kind": "Deployment", "name": "nlp-infer", "controller": True}],
            "creationTimestamp": stamp(timedelta(days=28, hours=3)),
        },
        "spec": {"replicas": 2},
        "status": {"readyReplicas": 1},
    }
    return {
        ObjectRef("Deployment", "nlp", "nlp-infer"): deployment,
        ObjectRef("ReplicaSet", "nlp", "nlp-infer-5f6d8b"): replica_set,
    }


@pytest.mark.parametrize(
    ("status", "progressing", "new_revision"),
    [
        # Rolled out: every replica updated (2 of 2), the deadline not passed: a scale-up waits, no rollout.
        pytest.param({"replicas": 2, "updatedReplicas": 2}, "True", True, id="rolled-out"),
        # The pod belongs to the old ReplicaSet (revision 2) while old pods are left: not the rollout's pod.
        pytest.param({"replicas": 3, "updatedReplicas": 1}, "True", False, id="old-replicaset-pod"),
        # No Progressing condition yet and nothing old left.
        pytest.param({"replicas": 2, "updatedReplicas": 2}, None, True, id="no-condition"),
    ],
)
def test_a_deployment_neither_past_its_deadline_nor_mid_way_is_not_a_stuck_rollout(
    prod: ClusterExpectation, status: Obj, progressing: str | None, new_revision: bool
) -> None:
    waiting = pending_pod("nlp-infer-5f6d8b-mz2kq", "nlp", "ReplicaSet", "nlp-infer-5f6d8b")
    snapshot = ClusterSnapshot(
        now=NOW,
        nodes=healthy_nodes(prod),
        objects={**config_map(prod), **rollout(status, progressing=progressing, new_revision=new_revision)},
        pending_pods=(waiting,),
    )
    # Only the pod's own finding: it waits (for 5h 2m), but no release is frozen behind it.
    assert [(f.check, f.object) for f in run_checks(prod, snapshot).findings] == [
        ("gpu-pending-pods", "pod/nlp/nlp-infer-5f6d8b-mz2kq")
    ]


def test_a_deployment_mid_way_with_its_deadline_not_passed_is_a_stuck_rollout(
    prod: ClusterExpectation,
) -> None:
    """The other side of the boundary: revision 3's pod waits while 1 of 3 old pods is left."""
    waiting = pending_pod("nlp-infer-5f6d8b-mz2kq", "nlp", "ReplicaSet", "nlp-infer-5f6d8b")
    objects = rollout({"replicas": 3, "updatedReplicas": 2}, progressing="True", new_revision=True)
    snapshot = ClusterSnapshot(
        now=NOW, nodes=healthy_nodes(prod), objects={**config_map(prod), **objects}, pending_pods=(waiting,)
    )
    stuck = [f for f in run_checks(prod, snapshot).findings if f.check == "rollout-stuck"]
    assert [(f.object, f.message) for f in stuck] == [
        (
            "deployment/nlp/nlp-infer",
            "rollout to revision 3 has not progressed for 28d 3h: ReplicaSet nlp-infer-5f6d8b has 1/2 ready, "
            "its pod nlp-infer-5f6d8b-mz2kq waits for a GPU, and 1 old pod(s) keep running — the release is "
            "frozen behind a GPU-Pending pod; give it a slot and it continues",
        )
    ]


@pytest.mark.parametrize(
    ("per_slot_mib", "described"),
    [
        # 0.9 x 46068 = 41461.2 MiB under the ceiling; 41461.2 / 20730 = 2.00006: 2 replicas, still shared.
        (20730, "`tune` would give 2 replicas, the plan has 8"),
        # 41461.2 / 20731 = 1.99995: 1 replica, the boundary where sharing stops.
        (20731, "`tune` would give 1 replicas (fewer than 2: sharing off), the plan has 8"),
        # The whole L20 (46068 MiB) is above the ceiling: 0.
        (46068, "`tune` would give 0 replicas (fewer than 2: sharing off), the plan has 8"),
    ],
)
def test_the_memory_budget_says_sharing_off_below_two_replicas_and_not_at_two(
    prod: ClusterExpectation, per_slot_mib: int, described: str
) -> None:
    pool = prod.pool("l20")
    assert pool is not None
    (l20,) = pool.plan.shared
    assert describe_replicas(l20, per_slot_mib) == described
