"""The two explicit providers every resource gets through `opts`: TencentCloud and Kubernetes."""

from __future__ import annotations

import os

import pulumi
import pulumi_kubernetes as k8s
import tencentcloud_iac_pulumi as tencentcloud

from gpushare.stack.model import PROJECT, StackConfig
from gpushare.stack.tencentcloud_keys import NAMESPACE, PROVIDER_KEYS

# Each credential of the TencentCloud provider: its stack config key (`tencentcloud:<key>`, secret) and the
# environment variable the SDK itself falls back to.
_CREDENTIALS = (
    ("secret_id", "secretId", "TENCENTCLOUD_SECRET_ID"),
    ("secret_key", "secretKey", "TENCENTCLOUD_SECRET_KEY"),
    ("security_token", "securityToken", "TENCENTCLOUD_SECURITY_TOKEN"),
)


def _credential(config: pulumi.Config, key: str, variable: str) -> pulumi.Output[str] | None:
    """A secret `tencentcloud:<key>`, else the environment variable, as a secret; None if neither is set.

    An explicit provider gets none of the stack's `tencentcloud:` config (that reaches the default provider
    only), and the SDK copies TENCENTCLOUD_SECRET_ID into the provider's inputs in plain text: the access
    key id would land in the state unencrypted."""
    configured = config.get_secret(key)
    if configured is not None:
        return configured
    value = os.environ.get(variable)
    return None if value is None else pulumi.Output.secret(value)


def _setting(config: pulumi.Config, key: str) -> pulumi.Input[object] | None:
    """`tencentcloud:<key>` as its provider argument: a bool, JSON (lists, objects) or a string; a secret
    stays a secret (`pulumi config set --secret tencentcloud:assumeRole ...`)."""
    _, kind = PROVIDER_KEYS[key]
    if pulumi.runtime.is_config_secret(f"{NAMESPACE}:{key}"):
        if kind == "bool":
            return config.get_secret_bool(key)
        return config.get_secret_object(key) if kind == "json" else config.get_secret(key)
    if kind == "bool":
        return config.get_bool(key)
    return config.get_object(key) if kind == "json" else config.get(key)


def tencentcloud_provider(stack: StackConfig) -> tencentcloud.Provider:
    """An explicit provider receives none of the stack's `tencentcloud:` config by itself (that reaches
    the default provider only): every key the stack sets is handed over here, so `tencentcloud:profile` or
    `assumeRole` is not dropped (the loader refuses keys the provider does not read)."""
    config = pulumi.Config(NAMESPACE)
    credentials = {name: _credential(config, key, variable) for name, key, variable in _CREDENTIALS}
    credential_keys = {key for _, key, _ in _CREDENTIALS}
    settings = {
        PROVIDER_KEYS[key][0]: _setting(config, key)
        for key in stack.provider_keys
        if key not in credential_keys
    }
    return tencentcloud.Provider("tencentcloud", region=stack.region, **credentials, **settings)


def tke_cluster_kubeconfig(cluster_id: str, provider: tencentcloud.Provider) -> pulumi.Output[str]:
    """The TKE cluster's kubeconfig (`tencentcloud_kubernetes_clusters`' first `kube_config`), secret."""
    clusters = tencentcloud.kubernetes.get_clusters_output(
        cluster_id=cluster_id, opts=pulumi.InvokeOutputOptions(provider=provider)
    )

    def first_kubeconfig(found: list[tencentcloud.kubernetes.outputs.GetClustersListResult]) -> str:
        kubeconfig = found[0].kube_config if found else None
        if not kubeconfig:
            # Without this the Kubernetes provider would fall back to the ambient kubeconfig: some other
            # cluster, or none.
            raise pulumi.RunError(
                f"TKE cluster {cluster_id}: no kubeconfig from getClusters (is gpushare:cluster.id right, in "
                "this region? does the cluster expose its API server?); or set a secret gpushare:kubeconfig"
            )
        return kubeconfig

    return pulumi.Output.secret(clusters.lists.apply(first_kubeconfig))


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
        # The kubeconfig changes without the cluster changing (public <-> intranet endpoint, rotated
        # credentials); without an identifier the provider guesses from the kubeconfig whether it is
        # replaced, and a replaced provider replaces every object it owns. Only another cluster replaces it.
        cluster_identifier=stack.cluster.id,
        # Server-side apply is what lets the managed-plugin patch own only the fields it sets.
        enable_server_side_apply=True,
        # A new measurement changes the device-plugin ConfigMap's data. Without this the provider replaces a
        # ConfigMap whose data changes, and this one has a fixed name (the plugins mount it), so it is
        # deleted first and every plugin DaemonSet depending on it is replaced too (tests/test_engine_up.py
        # showed both). With it the ConfigMap is updated in place and the pods' config checksum rolls only
        # the plugins whose key changed.
        enable_config_map_mutable=True,
    )
