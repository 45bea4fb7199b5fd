"""What `verify`'s workload checks read besides the snapshot: the pods bound to nodes, and the Deployments
and StatefulSets of every namespace (LIST only, within the reader's bounds and deadlines).

A 403 on one of them is a `Denial` that names the checks it skips (merged into the snapshot's, so the
verdict is PARTIAL and the missing permission is a warning), never a failure of the other checks.
"""

from __future__ import annotations

from kubernetes import client

from gpushare.verify.reader import HARD_STOP_GRACE_SECONDS, RUN_SECONDS, _Reader, hard_stop
from gpushare.verify.workload_capacity import (
    GPU_POD_OUTSIDE_POOLS,
    ROLLOUT_STUCK_ON_SURGE,
    WORKLOAD_OVER_SLOTS,
    WorkloadSnapshot,
)


def read_workloads(api: client.ApiClient) -> WorkloadSnapshot:
    with hard_stop(RUN_SECONDS + HARD_STOP_GRACE_SECONDS, str(api.configuration.host)):
        reader = _Reader(api)
        pods = reader.list_all(
            "pods",
            None,
            (GPU_POD_OUTSIDE_POOLS,),
            reader.core.list_pod_for_all_namespaces,
            field_selector="spec.nodeName!=",
        )
        deployments = reader.list_all(
            "deployments.apps",
            None,
            (WORKLOAD_OVER_SLOTS, ROLLOUT_STUCK_ON_SURGE),
            reader.apps.list_deployment_for_all_namespaces,
        )
        statefulsets = reader.list_all(
            "statefulsets.apps",
            None,
            (WORKLOAD_OVER_SLOTS,),
            reader.apps.list_stateful_set_for_all_namespaces,
        )
        return WorkloadSnapshot(
            tuple(pods or ()),
            tuple(deployments or ()),
            tuple(statefulsets or ()),
            tuple(reader.denied.values()),
        )
