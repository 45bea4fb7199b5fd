"""Read the live cluster for `verify` with the official `kubernetes` client: GET and LIST only.

Returns a `ClusterSnapshot` of plain objects as the API server serves them (the client's typed models,
which check required fields, serialised back to camelCase JSON). A 403 on one kind becomes a `Denial`
(a warning naming the missing permission); no cluster, bad credentials or a 403 on nodes raise
`ClusterUnavailable` (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpushare.cluster_expectations import ClusterExpectation, ObjectRef
from gpushare.errors import GpushareError
from gpushare.verify_checks import (
    GPU_PENDING_PODS,
    MANAGED_PLUGIN_DRIFT,
    PLUGIN_CONFIG_CURRENT,
    PLUGIN_CRASHLOOP,
    ROLLOUT_STUCK,
    ClusterSnapshot,
    Denial,
    K8sObject,
    gpu_pending_pods,
)

# (connect, read) seconds per request: a cron job must end even when the API server hangs.
REQUEST_TIMEOUT = (10, 60)
PAGE_SIZE = 500
_PLUGIN_CHECKS = (PLUGIN_CONFIG_CURRENT, PLUGIN_CRASHLOOP, MANAGED_PLUGIN_DRIFT)
# Owners of pending pods, read to see whether a rollout waits behind them.
_OWNER_KINDS = ("ReplicaSet", "StatefulSet")
NOT_FOUND = object()


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


class ClusterUnavailable(GpushareError):
    """The cluster cannot be checked at all: no kubeconfig, no answer, bad credentials, no nodes access."""


def api_client(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    """A client from `kubeconfig` (or `$KUBECONFIG`, `~/.kube/config`), else the in-cluster service account."""
    try:
        explicit = kubeconfig or os.environ.get("KUBECONFIG")
        default = Path.home() / ".kube" / "config"
        if explicit or default.exists() or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            api = config.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            api = client.ApiClient(configuration)
    # What the client's loader raises for a missing, unreadable or malformed kubeconfig (it does not wrap
    # YAML errors, nor a document of the wrong shape).
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as err:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ClusterUnavailable(f"cannot load the kube config ({where}): {_one_line(err)}") from None
    # Fail fast on a dead endpoint instead of urllib3's retries with back-off.
    api.configuration.retries = 1
    return api


@dataclass
class _Reader:
    api: client.ApiClient
    core: client.CoreV1Api = field(init=False)
    apps: client.AppsV1Api = field(init=False)
    denied: dict[tuple[str, str, str | None], Denial] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def _plain(self, model: Any) -> K8sObject:
        plain: K8sObject = self.api.sanitize_for_serialization(model)
        return plain

    def _call(
        self,
        verb: str,
        resource: str,
        namespace: str | None,
        checks: tuple[str, ...],
        request: Callable[[], Any],
    ) -> Any:
        """Run one request: its result, `NOT_FOUND` on 404, None when forbidden (403, recorded)."""
        try:
            return request()
        except ApiException as err:
            if err.status == 404:
                return NOT_FOUND
            if err.status == 403:
                key = (verb, resource, namespace)
                known = self.denied.get(key)
                merged = tuple(dict.fromkeys((*(known.checks if known else ()), *checks)))
                self.denied[key] = Denial(verb, resource, namespace, merged)
                return None
            if err.status == 401:
                raise ClusterUnavailable(
                    f"{self.server}: the API server rejected the credentials (401 Unauthorized)"
                ) from None
            raise ClusterUnavailable(
                f"{self.server}: {verb} {resource} failed: {err.status} {str(err.reason or '').strip()}"
            ) from None
        except urllib3.exceptions.HTTPError as err:
            reason = getattr(err, "reason", None) or err
            raise ClusterUnavailable(f"cannot reach the API server at {self.server}: {reason}") from None
        except ConfigException as err:  # credentials refreshed per request (exec plugins, tokens)
            raise ClusterUnavailable(f"{self.server}: credentials: {_one_line(err)}") from None
        except ValueError as err:
            # The client's models reject an answer without required fields (not an API server's).
            raise ClusterUnavailable(
                f"{self.server}: {verb} {resource}: the answer is not a Kubernetes object the client accepts: "
                f"{_one_line(err)[:300]}"
            ) from None

    def list_all(
        self,
        resource: str,
        scope: str | None,
        checks: tuple[str, ...],
        request: Callable[..., Any],
        **kwargs: Any,
    ) -> list[K8sObject] | None:
        """Every item, page by page; None when forbidden."""
        items: list[K8sObject] = []
        token: str | None = None
        while True:
            page: dict[str, Any] = dict(kwargs, limit=PAGE_SIZE, _request_timeout=REQUEST_TIMEOUT)
            if token:
                page["_continue"] = token
            response = self._call("list", resource, scope, checks, partial(request, **page))
            if response is None:
                return None
            if response is NOT_FOUND:
                return items
            items.extend(self._plain(item) for item in response.items)
            token = response.metadata._continue if response.metadata else None
            if not token:
                return items

    def get(self, ref: ObjectRef, checks: tuple[str, ...]) -> K8sObject | object | None:
        """The object, `NOT_FOUND`, or None when forbidden."""
        resource, read = {
            "ConfigMap": ("configmaps", self.core.read_namespaced_config_map),
            "DaemonSet": ("daemonsets.apps", self.apps.read_namespaced_daemon_set),
            "ReplicaSet": ("replicasets.apps", self.apps.read_namespaced_replica_set),
            "Deployment": ("deployments.apps", self.apps.read_namespaced_deployment),
            "StatefulSet": ("statefulsets.apps", self.apps.read_namespaced_stateful_set),
        }[ref.kind]
        model = self._call(
            "get",
            resource,
            ref.namespace,
            checks,
            lambda: read(ref.name, ref.namespace, _request_timeout=REQUEST_TIMEOUT),
        )
        return model if model is None or model is NOT_FOUND else self._plain(model)


def _selector(daemonset: K8sObject) -> str:
    labels = ((daemonset.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _owned_by(pod: K8sObject, uid: str) -> bool:
    return any(o.get("uid") == uid for o in (pod.get("metadata") or {}).get("ownerReferences") or [])


def read_snapshot(
    api: client.ApiClient, expected: ClusterExpectation, now: datetime | None = None
) -> ClusterSnapshot:
    reader = _Reader(api)
    nodes = reader.list_all("nodes", None, (), reader.core.list_node)
    if nodes is None:
        raise ClusterUnavailable(
            f"{reader.server}: missing permission: list nodes at cluster scope (the API server answered 403); "
            "verify needs at least that (see the ClusterRole in docs/verify.md)"
        )
    objects: dict[ObjectRef, K8sObject] = {}
    missing: set[ObjectRef] = set()

    def fetch(ref: ObjectRef, checks: tuple[str, ...]) -> K8sObject | None:
        if ref in objects or ref in missing:
            return objects.get(ref)
        obj = reader.get(ref, checks)
        if obj is NOT_FOUND:
            missing.add(ref)
            return None
        if isinstance(obj, dict):
            objects[ref] = obj
            return obj
        return None

    fetch(expected.config_map, (PLUGIN_CONFIG_CURRENT,))
    daemonset_pods: dict[ObjectRef, tuple[K8sObject, ...]] = {}
    for ref in expected.daemonsets:
        daemonset = fetch(ref, _PLUGIN_CHECKS)
        selector = _selector(daemonset) if daemonset else ""
        if daemonset is None or not selector:
            continue
        uid = str((daemonset.get("metadata") or {}).get("uid"))
        pods = reader.list_all(
            "pods",
            ref.namespace,
            _PLUGIN_CHECKS,
            reader.core.list_namespaced_pod,
            namespace=ref.namespace,
            label_selector=selector,
        )
        daemonset_pods[ref] = tuple(p for p in pods or [] if _owned_by(p, uid))

    pending = (
        reader.list_all(
            "pods",
            None,
            (GPU_PENDING_PODS, ROLLOUT_STUCK),
            reader.core.list_pod_for_all_namespaces,
            field_selector="status.phase=Pending",
        )
        or []
    )
    events = (
        reader.list_all(
            "events",
            None,
            (f"{GPU_PENDING_PODS} from FailedScheduling events",),
            reader.core.list_event_for_all_namespaces,
            field_selector="reason=FailedScheduling",
        )
        or []
    )
    # Only the owners of pods waiting for a GPU: a rollout frozen behind one is what rollout-stuck reports.
    for pod, _ in gpu_pending_pods(pending, events):
        metadata = pod.get("metadata") or {}
        for owner in metadata.get("ownerReferences") or []:
            if owner.get("kind") not in _OWNER_KINDS:
                continue
            owner_object = fetch(
                ObjectRef(owner["kind"], metadata["namespace"], owner["name"]), (ROLLOUT_STUCK,)
            )
            for grand in ((owner_object or {}).get("metadata") or {}).get("ownerReferences") or []:
                if grand.get("kind") == "Deployment":
                    fetch(ObjectRef("Deployment", metadata["namespace"], grand["name"]), (ROLLOUT_STUCK,))
    return ClusterSnapshot(
        now=now or datetime.now(UTC),
        nodes=tuple(nodes),
        objects=objects,
        missing=frozenset(missing),
        daemonset_pods=daemonset_pods,
        pending_pods=tuple(pending),
        scheduling_events=tuple(events),
        denied=tuple(reader.denied.values()),
    )
