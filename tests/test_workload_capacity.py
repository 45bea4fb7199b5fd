"""gpushare/verify/workload_capacity.py: a Deployment that fills its pool's slots is stuck on its surge pod
— an error while a rollout is under way, a warning about the next one at rest — read from the status
fields Kubernetes writes (it leaves a zero count out: `updatedReplicas` is absent until the first new pod).

The plan is prod's with the T4 pool given whole GPUs (`mode: exclusive`): 1 node x 1 GPU = 1 slot, so a
1-replica Deployment fills it, and Kubernetes' defaults at 1 replica (maxSurge ceil(0.25) = 1,
maxUnavailable floor(0.25) = 0) add a surge pod that waits for a slot.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR

from gpushare.plan import build_plan
from gpushare.pool_offers import PoolOffer, pool_offers
from gpushare.stack.loading import from_config_values
from gpushare.verify.workload_capacity import ROLLOUT_STUCK_ON_SURGE, capacity_findings


def _offers_with_a_one_slot_t4_pool() -> tuple[PoolOffer, ...]:
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())["config"]
    t4 = next(p for p in document["gpushare:pools"] if p["name"] == "t4")
    t4["sharing"] = {"mode": "exclusive"}
    values = {k if ":" in k else f"gpushare:{k}": v for k, v in document.items()}
    config = from_config_values(values, stack="prod", source="Pulumi.prod.yaml", secret_keys=set())
    return pool_offers(build_plan(config))


def _one_replica_deployment(status: dict[str, Any]) -> dict[str, Any]:
    pod = {
        "nodeSelector": {"gpushare.io/pool": "t4"},
        "containers": [{"name": "ocr", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ocr", "namespace": "team-a"},
        "spec": {"replicas": 1, "template": {"spec": pod}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("status", "severity", "ending"),
    [
        # At rest: the one pod is the updated one.
        (
            {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1},
            "warning",
            "The next rollout will stop there.",
        ),
        # A rollout has begun and no pod is updated yet: Kubernetes writes no updatedReplicas (0 omitted).
        (
            {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
            "error",
            "A rollout is under way and waits for that slot now.",
        ),
        # The surge pod exists (2 pods, 1 updated): under way.
        (
            {"replicas": 2, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1},
            "error",
            "A rollout is under way and waits for that slot now.",
        ),
    ],
    ids=["at-rest", "begun-none-updated", "surge-pod-created"],
)
def test_a_deployment_that_fills_its_pool_is_stuck_on_its_surge(
    status: dict[str, Any], severity: str, ending: str
) -> None:
    (found,) = capacity_findings(_offers_with_a_one_slot_t4_pool(), [_one_replica_deployment(status)], [])
    assert (found.check, found.severity, found.object) == (
        ROLLOUT_STUCK_ON_SURGE,
        severity,
        "deployment/team-a/ocr",
    )
    assert found.message.endswith(ending), found.message
