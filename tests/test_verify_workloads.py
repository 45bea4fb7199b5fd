"""`verify`'s workload checks against the fake API server (fake_cluster/workload_scenarios.py) on the
seed's prod cluster: L20 8 slots, T4 3. Each scenario gives its finding; the healthy cluster none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_verify import checks, finding, kubeconfig, prod, prod_render, server, verify

from fake_cluster import workload_scenarios as scenarios
from fake_cluster.apiserver import FakeApiServer
from fake_cluster.objects import Obj

__all__ = ["kubeconfig", "prod", "prod_render", "server"]  # fixtures used by name


def findings(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["severity"], f["check"], f["object"]) for f in report["findings"]]


def test_healthy_cluster_gives_no_workload_finding(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["findings"]) == (0, [])


def test_a_pod_pending_for_want_of_slots_names_its_deployment(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    code, report = verify(server, kubeconfig, [*prod, *scenarios.pending_for_slots()])
    # 8 replicas fit the L20 pool's 8 slots at nodes.max: only the pod that waits is a finding.
    assert (code, findings(report)) == (1, [("error", "gpu-pending-pods", "pod/team-a/chat-6c9f-7")])
    assert finding(report, "gpu-pending-pods")["message"] == (
        "Pending for 1d 2h: 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.; it belongs to "
        "Deployment team-a/chat — add slots (a pool's nodes or replicas) or free them"
    )


def test_replicas_above_the_pools_slots(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    code, report = verify(server, kubeconfig, [*prod, *scenarios.over_replicated()])
    assert code == 1
    assert checks(report) == ["gpu-pending-pods"] * 4 + ["workload-over-slots"]
    over = finding(report, "workload-over-slots")
    assert over["object"] == "deployment/team-a/chat"
    # 12 replicas x 1 slot on L20's 1 node x 1 GPU x 8: 4 wait.
    assert over["message"] == (
        "Deployment team-a/chat: 12 replicas need 12 nvidia.com/gpu slots; pool l20 has 8 at nodes.max (l20: "
        "1 node x 1 GPU x 8 slots): 4 pods stay Pending. At most 8 replicas fit (or raise nodes.max)."
    )


def test_a_rollout_stuck_on_its_surge(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    code, report = verify(server, kubeconfig, [*prod, *scenarios.stuck_surge()])
    assert (code, checks(report)) == (1, ["gpu-pending-pods", "rollout-stuck", "rollout-stuck-on-surge"])
    surge = finding(report, "rollout-stuck-on-surge")
    assert surge["object"] == "deployment/team-a/ocr"
    # Kubernetes' defaults at 3 replicas: maxSurge ceil(0.75) = 1, maxUnavailable floor(0.75) = 0; T4 has 3.
    assert surge["message"] == (
        "Deployment team-a/ocr: a rolling update adds 1 surge pod (maxSurge 25%) and removes no old pod first "
        "(maxUnavailable 25% of 3 = 0), but 3 replicas leave 0 of 3 nvidia.com/gpu slots free: the surge pod "
        "waits for a slot and the rollout never finishes. Set maxSurge: 0 and maxUnavailable: 1 (one pod "
        "replaced at a time), or keep 1 slot free with at most 2 replicas. A rollout is under way and waits "
        "for that slot now."
    )


def test_the_same_deployment_at_rest_is_warned_about_its_next_rollout(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    objects = scenarios.stuck_surge()
    deployment = objects[0]
    deployment["status"] = {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
    at_rest = [deployment, objects[1], *objects[3:6]]  # the old ReplicaSet and its 3 running pods
    code, report = verify(server, kubeconfig, [*prod, *at_rest])
    assert (code, findings(report)) == (0, [("warning", "rollout-stuck-on-surge", "deployment/team-a/ocr")])
    assert finding(report, "rollout-stuck-on-surge")["message"].endswith("The next rollout will stop there.")


@pytest.mark.parametrize("fix", [{"maxSurge": 0, "maxUnavailable": 1}, {"maxSurge": 1, "maxUnavailable": 1}])
def test_a_strategy_that_may_remove_an_old_pod_first_is_not_stuck_on_surge(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj], fix: dict[str, int]
) -> None:
    objects = scenarios.stuck_surge()
    objects[0]["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": fix}
    _, report = verify(server, kubeconfig, [*prod, *objects])
    # The pod that waits now is still reported; the surge no longer is.
    assert checks(report) + checks(report, "warning") == ["gpu-pending-pods", "rollout-stuck"]


def test_a_gpu_pod_on_a_node_of_no_pool(server: FakeApiServer, kubeconfig: Path, prod: list[Obj]) -> None:
    code, report = verify(server, kubeconfig, [*prod, *scenarios.stray_pod()])
    assert (code, findings(report)) == (
        0,
        [
            ("warning", "gpu-pod-outside-pools", "pod/team-a/notebook"),
            ("warning", "node-in-no-pool", f"node/{scenarios.STRAY_NODE}"),
        ],
    )
    assert finding(report, "gpu-pod-outside-pools")["message"] == (
        "holds nvidia.com/gpu on node 10.0.2.21, which has no gpushare.io/pool label: capacity and memory the "
        "plan does not size. Select a pool: nodeSelector gpushare.io/pool: <l20|t4>."
    )
