"""The Pulumi type tokens of what the program creates, as the engine, the offline render and the policy
pack name them. Strings only: this package imports no Pulumi.
"""

from typing import Final

CONFIG_MAP: Final = "kubernetes:core/v1:ConfigMap"
DAEMON_SET: Final = "kubernetes:apps/v1:DaemonSet"
DAEMON_SET_PATCH: Final = "kubernetes:apps/v1:DaemonSetPatch"
HELM_RELEASE: Final = "kubernetes:helm.sh/v3:Release"
NODE_POOL: Final = "tencentcloud:Kubernetes/nodePool:NodePool"
# qGPU pools (TKE runs qGPU on native nodes only) and TKE's add-ons (the qGPU add-on among them).
NATIVE_NODE_POOL: Final = "tencentcloud:Kubernetes/nativeNodePool:NativeNodePool"
ADDON: Final = "tencentcloud:Kubernetes/addon:Addon"

KUBERNETES_PROVIDER: Final = "pulumi:providers:kubernetes"
TENCENTCLOUD_PROVIDER: Final = "pulumi:providers:tencentcloud"

# The one invoke the program makes: the TKE cluster lookup of its kubeconfig (components/providers.py).
GET_CLUSTERS: Final = "tencentcloud:Kubernetes/getClusters:getClusters"


def is_chart_rendered(urn: str) -> bool:
    """An object the offline `check` rendered from a Helm release's chart and passed to the pack as a child
    of the Release: the engine qualifies a child's URN type with its parent's (`<Release type>$<type>`)."""
    return f"{HELM_RELEASE}$" in urn
