"""The mocks gpushare's program runs under offline: echo every resource, answer the one invoke.

The program looks the cluster's kubeconfig up by id (`components/providers.py`); offline there is no
cloud, so the lookup answers with a placeholder kubeconfig that holds no credentials.
"""

from __future__ import annotations

from typing import Any

from offline.mock_run import Mocks

GET_CLUSTERS = "tencentcloud:Kubernetes/getClusters:getClusters"
OFFLINE_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n# offline: no cluster\n"
)


def _get_clusters(args: dict[str, Any]) -> dict[str, Any]:
    return {"lists": [{"clusterId": args.get("clusterId", ""), "kubeConfig": OFFLINE_KUBECONFIG}]}


def program_mocks() -> Mocks:
    return Mocks(
        invoke_handlers={GET_CLUSTERS: _get_clusters},
        outputs_by_type={"kubernetes:helm.sh/v3:Release": {"status": {"status": "deployed"}}},
    )
