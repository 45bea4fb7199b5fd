"""The mocks gpushare's program runs under offline: echo every resource, answer the one invoke.

The program looks the cluster's kubeconfig up by id (`components/providers.py`); offline there is no
cloud, so the lookup answers with a placeholder kubeconfig that names no real server and holds no
credentials.
"""

from __future__ import annotations

from typing import Any, Final

from gpushare import resource_types
from gpushare.offline.echo_mocks import Mocks

GET_CLUSTERS: Final = resource_types.GET_CLUSTERS

OFFLINE_KUBECONFIG: Final = """\
# Offline render placeholder: no server is contacted and there are no credentials here.
apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: https://{cluster}.offline.invalid
contexts:
- name: {cluster}
  context:
    cluster: {cluster}
    user: offline
current-context: {cluster}
users:
- name: offline
  user: {{}}
"""


def _get_clusters(args: dict[str, Any]) -> dict[str, Any]:
    # The program reads only `lists[0].kubeConfig`.
    cluster_id = str(args.get("clusterId") or "cls-offline")
    return {
        "clusterId": cluster_id,
        "lists": [{"clusterId": cluster_id, "kubeConfig": OFFLINE_KUBECONFIG.format(cluster=cluster_id)}],
    }


def program_mocks() -> Mocks:
    return Mocks(
        invoke_handlers={GET_CLUSTERS: _get_clusters},
        outputs_by_type={resource_types.HELM_RELEASE: {"status": {"status": "deployed"}}},
    )
