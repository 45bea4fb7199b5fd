"""Provider resources registered from plain inputs under their type tokens: Kubernetes objects from their
manifests, Helm releases and TKE node pools from the providers' own property names.

The SDKs' typed classes (`k8s.core.v1.ConfigMap`, `k8s.helm.v3.Release`, `tencentcloud.kubernetes.NodePool`,
their `*Args`) are generated wrappers over `pulumi.CustomResource` with the same tokens and the same wire
names. Importing one loads its whole SDK module: `pulumi_kubernetes.core.v1` imports every core kind's
inputs and outputs (0.25 s of CPU), `pulumi_kubernetes.helm.v3` 0.045 s, `tencentcloud_iac_pulumi.kubernetes`
every TKE resource (0.07 s); together more than gpushare's own work in a render (docs/performance.md). The
engine receives the same type, name and inputs either way.

What keeps the plain inputs honest: the render validates every Kubernetes manifest against the schema of
the stack's Kubernetes version, strictly (the typed classes check at runtime only that required
properties are present, which the tests' registration through them still does), and tests hold every
TKE and Helm property name the program sends against the typed classes (tests/test_provider_resources.py).

What the typed classes add and these leave out, on purpose: `aliases` to `extensions/v1beta1` and
`apps/v1beta2` types (gpushare's stacks never had those), and `version`/`pluginDownloadURL` on each
resource, which the engine uses only to pick a default provider: every gpushare resource gets its
provider explicitly, through the component's `providers` (a test checks every render for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from gpushare import resource_types


def kube_type_token(api_version: str, kind: str, *, patch: bool = False) -> str:
    """pulumi-kubernetes' token: `kubernetes:<group>/<version>:<Kind>`, the core group spelled `core`;
    a server-side-apply patch is the kind's `Patch` resource."""
    module = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{module}:{kind}{'Patch' if patch else ''}"


class KubeObject(pulumi.CustomResource):
    """One Kubernetes object as its manifest says; `patch=True` registers it as a server-side-apply patch
    of an object someone else owns (only the fields given are applied)."""

    def __init__(
        self,
        resource_name: str,
        manifest: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        *,
        patch: bool = False,
    ) -> None:
        token = kube_type_token(manifest["apiVersion"], manifest["kind"], patch=patch)
        super().__init__(token, resource_name, dict(manifest), opts)


class HelmRelease(pulumi.CustomResource):
    """A Helm release (`kubernetes:helm.sh/v3:Release`) of `chart` at a pinned `version` from a chart
    repository, with `values`. `status` is what the provider reports after the install."""

    status: pulumi.Output[Any]

    def __init__(
        self,
        resource_name: str,
        *,
        name: str,
        chart: str,
        version: str,
        repository: str,
        namespace: str,
        values: Mapping[str, Any],
        create_namespace: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        properties: dict[str, Any] = {
            "name": name,
            "chart": chart,
            "version": version,
            "repositoryOpts": {"repo": repository},
            "namespace": namespace,
            **({"createNamespace": True} if create_namespace else {}),
            "values": dict(values),
            # A constant of the provider's schema that every SDK's Release sends.
            "compat": "true",
            # An output only, declared so that the resource has a `status` attribute.
            "status": None,
        }
        super().__init__(resource_types.HELM_RELEASE, resource_name, properties, opts)


class TkeNodePool(pulumi.CustomResource):
    """A TKE node pool (`tencentcloud_kubernetes_node_pool`); `properties` in the Pulumi provider's names
    (`clusterId`, `autoScalingConfig.instanceType`, ...). Its `id` is the node pool's id."""

    def __init__(
        self, resource_name: str, properties: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.NODE_POOL, resource_name, dict(properties), opts)


def tke_cluster_kubeconfig(cluster_id: str, provider: pulumi.ProviderResource) -> pulumi.Output[str]:
    """The TKE cluster's kubeconfig (`tencentcloud_kubernetes_clusters`' first `kube_config`), secret."""
    clusters = pulumi.runtime.invoke_output(
        resource_types.GET_CLUSTERS,
        {"clusterId": cluster_id},
        opts=pulumi.InvokeOutputOptions(provider=provider),
    )

    def first_kubeconfig(found: Mapping[str, Any]) -> str:
        listed = found.get("lists") or []
        kubeconfig = listed[0].get("kubeConfig") if listed else None
        if not kubeconfig:
            # Without this the Kubernetes provider would fall back to the ambient kubeconfig: some other
            # cluster, or none.
            raise pulumi.RunError(
                f"TKE cluster {cluster_id}: no kubeconfig from getClusters (is gpushare:cluster.id right, in "
                "this region? does the cluster expose its API server?); or set a secret gpushare:kubeconfig"
            )
        return str(kubeconfig)

    return pulumi.Output.secret(clusters.apply(first_kubeconfig))
