"""The two explicit providers every resource gets through `opts`: TencentCloud and Kubernetes."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import tencentcloud_iac_pulumi as tencentcloud

from components.provider_resources import tke_cluster_kubeconfig
from gpushare.stack_config import PROJECT, StackConfig


def tencentcloud_provider(stack: StackConfig) -> tencentcloud.Provider:
    # Credentials come from TENCENTCLOUD_SECRET_ID/KEY (or secret `tencentcloud:*` config), never from here.
    return tencentcloud.Provider("tencentcloud", region=stack.region)


def kubernetes_provider(stack: StackConfig, cloud: tencentcloud.Provider) -> k8s.Provider:
    """Built from a secret `gpushare:kubeconfig` if the stack has one, else from the TKE cluster's own
    kubeconfig looked up by cluster id."""
    kubeconfig: pulumi.Input[str]
    if stack.has_kubeconfig:
        kubeconfig = pulumi.Config(PROJECT).require_secret("kubeconfig")
    else:
        kubeconfig = tke_cluster_kubeconfig(stack.cluster.id, cloud)
    return k8s.Provider(
        "kubernetes",
        kubeconfig=kubeconfig,
        # Server-side apply is what lets the managed-plugin patch own only the fields it sets.
        enable_server_side_apply=True,
    )
