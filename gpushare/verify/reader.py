"""Read the live cluster for `verify` with the official `kubernetes` client: GET and LIST only.

Returns a `ClusterSnapshot` of plain objects as the API server serves them (the client's typed models,
which check required fields, serialised back to camelCase JSON). A 403 on one kind becomes a `Denial`
(a warning naming the missing permission); no cluster, bad credentials or a 403 on nodes raise
`ClusterUnavailable` (exit 2).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpushare.errors import GpushareError
from gpushare.input_files import InputFileError, read_text, size_text
from gpushare.verify.expectations import ClusterExpectation, ObjectRef
from gpushare.verify.report import (
    GPU_PENDING_PODS,
    MANAGED_PLUGIN_DRIFT,
    PLUGIN_CONFIG_CURRENT,
    PLUGIN_CRASHLOOP,
    ROLLOUT_STUCK,
    ClusterSnapshot,
    Denial,
    K8sObject,
)
from gpushare.verify.workload_checks import gpu_pending_pods
from gpushare.yaml_bounds import YamlBoundError, YamlTooDeepError, check_flow_depth, loads_json_bounded

# Every request ends: connect within CONNECT_SECONDS, each read from the socket within READ_SECONDS, the
# whole answer (headers and body) within REQUEST_SECONDS, and all of verify's reading within RUN_SECONDS
# (a cron job must end even when the API server hangs, or drips a body a byte at a time).
CONNECT_SECONDS = 10.0
READ_SECONDS = 10.0
REQUEST_SECONDS = 30.0
RUN_SECONDS = 120.0
PAGE_SIZE = 500
# At most MAX_PAGES pages of one list (100 000 objects: more than any cluster's nodes or pending pods), at
# most MAX_RESPONSE_BYTES in one answer (500 fat objects) and MAX_RUN_BYTES in all: memory stays bounded
# whatever the server sends. A `continue` token seen before means the server loops: refused at once.
MAX_PAGES = 200
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_RUN_BYTES = 256 * 1024 * 1024
# 429 Too Many Requests: wait what Retry-After says, up to MAX_RETRY_AFTER_SECONDS, at most
# MAX_THROTTLED_RETRIES times per request (API Priority and Fairness answers `Retry-After: 1`).
MAX_RETRY_AFTER_SECONDS = 5.0
MAX_THROTTLED_RETRIES = 3
# The backstop behind the deadlines above, for what they cannot see (a server that drips its status line
# and headers, a TLS handshake or an exec credential plugin that never ends): an interval timer in the
# main thread stops the reading HARD_STOP_GRACE_SECONDS after RUN_SECONDS.
HARD_STOP_GRACE_SECONDS = 10.0
HARD_STOP_REPEAT_SECONDS = 0.25
_CHUNK = 64 * 1024
_PLUGIN_CHECKS = (PLUGIN_CONFIG_CURRENT, PLUGIN_CRASHLOOP, MANAGED_PLUGIN_DRIFT)
# Owners of pending pods, read to see whether a rollout waits behind them.
_OWNER_KINDS = ("ReplicaSet", "StatefulSet")
NOT_FOUND = object()


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


class ClusterUnavailable(GpushareError):
    """The cluster cannot be checked at all: no kubeconfig, no answer, bad credentials, no nodes access."""


class MalformedAnswer(ClusterUnavailable):
    """The API server answered something that is not what a Kubernetes API server sends."""


class _HardStop(BaseException):
    """Raised by the interval timer: a BaseException, so that no `except Exception` on the way swallows it."""


@contextlib.contextmanager
def hard_stop(seconds: float, server: str) -> Iterator[None]:
    """Stop whatever runs inside after `seconds` (ClusterUnavailable). Only in the main thread, and only
    when no other interval timer is set (a caller's own guard stays in charge)."""
    if threading.current_thread() is not threading.main_thread() or signal.getitimer(signal.ITIMER_REAL)[0]:
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise _HardStop()

    previous = signal.signal(signal.SIGALRM, stop)
    # Then again every HARD_STOP_REPEAT_SECONDS: Python swallows an exception raised while it runs a
    # garbage-collector callback ("Exception ignored in ... WeakSet"), and the stop must not be lost so.
    signal.setitimer(signal.ITIMER_REAL, seconds, HARD_STOP_REPEAT_SECONDS)
    try:
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)  # disarmed before anything else runs
    except _HardStop:
        raise ClusterUnavailable(
            f"{server}: no complete answers within {seconds:g} s; verify stopped"
        ) from None
    finally:
        signal.signal(signal.SIGALRM, previous)


def _kubeconfig_files(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    listed = os.environ.get("KUBECONFIG")
    if listed:
        return [path for path in listed.split(os.pathsep) if path]
    default = Path.home() / ".kube" / "config"
    return [str(default)] if default.exists() else []


def _check_kubeconfig_file(path: str) -> None:
    """The client opens and parses a kubeconfig itself, without bounds: a FIFO blocks its `open()`
    forever, `/dev/zero` never ends, 25 000 nested `[` crash libyaml. Read it once within bounds first."""
    try:
        text = read_text(path)
    except InputFileError as err:
        if err.message == "no such file":
            return  # the client's own message names it
        raise ClusterUnavailable(f"cannot load the kube config ({path}): {err.message}") from None
    try:
        check_flow_depth(text)
    except (YamlBoundError, YamlTooDeepError):
        raise ClusterUnavailable(f"cannot load the kube config ({path}): nested too deeply") from None


def _retries() -> urllib3.Retry:
    # One retry of a failed connection (fail fast on a dead endpoint, no back-off), nothing else: urllib3's
    # default would honour any Retry-After on a 429 or 503 (an hour, if the server says so).
    return urllib3.Retry(
        total=1, connect=1, read=0, redirect=0, status=0, other=0, respect_retry_after_header=False
    )


def api_client(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    """A client from `kubeconfig` (or `$KUBECONFIG`, `~/.kube/config`), else the in-cluster service account."""
    for path in _kubeconfig_files(kubeconfig):
        _check_kubeconfig_file(path)
    configuration = client.Configuration()
    configuration.retries = _retries()
    try:
        explicit = kubeconfig or os.environ.get("KUBECONFIG")
        default = Path.home() / ".kube" / "config"
        if not explicit and not default.exists() and not os.environ.get("KUBERNETES_SERVICE_HOST"):
            # The client's own words for this are "Invalid kube-config file. No configuration found."
            raise ClusterUnavailable(
                f"no kubeconfig: {default} does not exist, $KUBECONFIG is not set, and this is not a pod "
                "(no KUBERNETES_SERVICE_HOST); give --kubeconfig PATH"
            )
        if explicit or default.exists() or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            api = config.new_client_from_config(
                config_file=kubeconfig,
                context=context,
                persist_config=False,
                client_configuration=configuration,
            )
        else:
            config.load_incluster_config(client_configuration=configuration)
            api = client.ApiClient(configuration)
    # What the client's loader raises for a missing, unreadable or malformed kubeconfig (it does not wrap
    # YAML errors, nor a document of the wrong shape).
    except (
        ConfigException,
        OSError,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        RecursionError,
        yaml.YAMLError,
    ) as err:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ClusterUnavailable(f"cannot load the kube config ({where}): {_one_line(err)}") from None
    return api


@dataclass
class Deadline:
    """A budget of seconds from now."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)


class BoundedGet:
    """GET requests with every bound above: the one way `verify` (and anything else that reads the cluster
    through the same client, such as proxied pages) sends a request. `read` returns the whole body."""

    def __init__(self, api: client.ApiClient, run: Deadline | None = None) -> None:
        self.api = api
        self.run = run or Deadline(RUN_SECONDS)
        self.bytes_read = 0

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def _timeout(self, request: Deadline, what: str) -> tuple[float, float]:
        left = min(request.remaining(), self.run.remaining())
        if left <= 0:
            self._out_of_time(request, what)
        return (min(CONNECT_SECONDS, left), min(READ_SECONDS, left))

    def _out_of_time(self, request: Deadline, what: str) -> None:
        if self.run.remaining() <= 0:
            raise ClusterUnavailable(
                f"{self.server}: {what}: no answer within verify's {RUN_SECONDS:g} s for all its requests"
            )
        raise ClusterUnavailable(f"{self.server}: {what}: no complete answer within {REQUEST_SECONDS:g} s")

    def read(self, request: Callable[..., Any], what: str, **kwargs: Any) -> bytes:
        """`request(**kwargs)` (a client method, or `api.call_api`-like callable) without preloading,
        retried on 429 within bounds; its body, read in chunks against the deadlines and byte limits.
        ApiException propagates for other statuses."""
        deadline = Deadline(REQUEST_SECONDS)
        for attempt in range(MAX_THROTTLED_RETRIES + 1):
            try:
                response = request(
                    **kwargs, _preload_content=False, _request_timeout=self._timeout(deadline, what)
                )
                break
            except ApiException as err:
                if err.status != 429 or attempt == MAX_THROTTLED_RETRIES:
                    raise
                wait = _retry_after(err)
                if wait is None or wait > MAX_RETRY_AFTER_SECONDS:
                    said = "no Retry-After" if wait is None else f"Retry-After {wait:g} s"
                    raise ClusterUnavailable(
                        f"{self.server}: {what}: 429 Too Many Requests ({said}; verify waits at most "
                        f"{MAX_RETRY_AFTER_SECONDS:g} s)"
                    ) from None
                if wait >= min(deadline.remaining(), self.run.remaining()):
                    self._out_of_time(deadline, what)
                time.sleep(wait)
        try:
            return self._body(response, deadline, what)
        finally:
            response.release_conn()

    def _body(self, response: Any, deadline: Deadline, what: str) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            if min(deadline.remaining(), self.run.remaining()) <= 0:
                response.close()
                self._out_of_time(deadline, what)
            chunk = response.read1(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            self.bytes_read += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                response.close()
                raise MalformedAnswer(
                    f"{self.server}: {what}: the answer is larger than {size_text(MAX_RESPONSE_BYTES)}"
                )
            if self.bytes_read > MAX_RUN_BYTES:
                response.close()
                raise MalformedAnswer(
                    f"{self.server}: {what}: the answers add up to more than {size_text(MAX_RUN_BYTES)}; "
                    "not read further"
                )
            chunks.append(chunk)


def _retry_after(err: ApiException) -> float | None:
    """Retry-After in seconds (delta-seconds form; an HTTP date or garbage counts as none)."""
    value = (err.headers or {}).get("Retry-After")
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


# What each request of the client answers (the client's model names, for `deserialize`).
_ANSWER_TYPES = {
    "list_node": "V1NodeList",
    "list_namespaced_pod": "V1PodList",
    "list_pod_for_all_namespaces": "V1PodList",
    "list_event_for_all_namespaces": "CoreV1EventList",
    "read_namespaced_config_map": "V1ConfigMap",
    "read_namespaced_daemon_set": "V1DaemonSet",
    "read_namespaced_replica_set": "V1ReplicaSet",
    "read_namespaced_deployment": "V1Deployment",
    "read_namespaced_stateful_set": "V1StatefulSet",
    # The workload checks' lists (gpushare/verify/workload_reader.py).
    "list_deployment_for_all_namespaces": "V1DeploymentList",
    "list_stateful_set_for_all_namespaces": "V1StatefulSetList",
}


@dataclass
class _Reader:
    api: client.ApiClient
    core: client.CoreV1Api = field(init=False)
    apps: client.AppsV1Api = field(init=False)
    http: BoundedGet = field(init=False)
    denied: dict[tuple[str, str, str | None], Denial] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.http = BoundedGet(self.api)

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
        scope: str | None,
        checks: tuple[str, ...],
        request: Callable[..., Any],
        **kwargs: Any,
    ) -> Any:
        """Run one request: its answer as the client's model, `NOT_FOUND` on 404, None when forbidden
        (403, recorded)."""
        what = f"{verb} {resource}"
        try:
            body = self.http.read(request, what, **kwargs)
            text = body.decode("utf-8")
            # The client's deserialize recurses through json.loads: the depth is bounded first.
            loads_json_bounded(text)
            return self.api.deserialize(text, _ANSWER_TYPES[request.__name__], "application/json")
        except ApiException as err:
            if err.status == 404:
                return NOT_FOUND
            if err.status == 403:
                key = (verb, resource, scope)
                known = self.denied.get(key)
                merged = tuple(dict.fromkeys((*(known.checks if known else ()), *checks)))
                self.denied[key] = Denial(verb, resource, scope, merged)
                return None
            if err.status == 401:
                raise ClusterUnavailable(
                    f"{self.server}: the API server rejected the credentials (401 Unauthorized)"
                ) from None
            raise ClusterUnavailable(
                f"{self.server}: {what} failed: {err.status} {str(err.reason or '').strip()}"
            ) from None
        except urllib3.exceptions.HTTPError as err:
            reason = getattr(err, "reason", None) or err
            if isinstance(err, urllib3.exceptions.ReadTimeoutError | urllib3.exceptions.ProtocolError):
                reason = f"{what}: {reason}"
            raise ClusterUnavailable(f"cannot reach the API server at {self.server}: {reason}") from None
        except ConfigException as err:  # credentials refreshed per request (exec plugins, tokens)
            raise ClusterUnavailable(f"{self.server}: credentials: {_one_line(err)}") from None
        except (ValueError, TypeError, AttributeError, RecursionError) as err:
            # Not JSON, or the client's models reject an answer without required fields (not an API server's).
            raise MalformedAnswer(
                f"{self.server}: {what}: the answer is not a Kubernetes object the client accepts: "
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
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page: dict[str, Any] = dict(kwargs, limit=PAGE_SIZE)
            if token:
                page["_continue"] = token
            response = self._call("list", resource, scope, checks, request, **page)
            if response is None:
                return None
            if response is NOT_FOUND:
                return items
            items.extend(self._plain(item) for item in response.items or [])
            token = response.metadata._continue if response.metadata else None
            if not token:
                return items
            if token in seen:
                raise MalformedAnswer(
                    f"{self.server}: list {resource}: the server sent the same `continue` token twice "
                    "(its pages loop)"
                )
            seen.add(token)
        raise MalformedAnswer(
            f"{self.server}: list {resource}: more than {MAX_PAGES} pages of {PAGE_SIZE}; not read further"
        )

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
            "get", resource, ref.namespace, checks, read, name=ref.name, namespace=ref.namespace
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
    """Everything `verify` checks, read within the bounds above (and the hard stop behind them)."""
    with hard_stop(RUN_SECONDS + HARD_STOP_GRACE_SECONDS, str(api.configuration.host)):
        return _read_snapshot(api, expected, now)


def _read_snapshot(
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
        if daemonset is None:
            continue
        # A selector without matchLabels (set-based only: a DaemonSet recreated by hand) narrows nothing
        # here: the namespace's pods are listed and kept by owner, as with any selector.
        selector = _selector(daemonset) or None
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
        namespace = metadata.get("namespace")
        if not namespace:
            # Every pod lives in a namespace; an answer without one is no API server's.
            raise MalformedAnswer(
                f"{reader.server}: list pods: pod {metadata.get('name')!r} has no metadata.namespace "
                "(a malformed answer)"
            )
        for owner in metadata.get("ownerReferences") or []:
            if owner.get("kind") not in _OWNER_KINDS:
                continue
            owner_object = fetch(ObjectRef(owner["kind"], namespace, owner["name"]), (ROLLOUT_STUCK,))
            for grand in ((owner_object or {}).get("metadata") or {}).get("ownerReferences") or []:
                if grand.get("kind") == "Deployment":
                    fetch(ObjectRef("Deployment", namespace, grand["name"]), (ROLLOUT_STUCK,))
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


def read_objects(api: client.ApiClient, refs: tuple[ObjectRef, ...]) -> dict[ObjectRef, K8sObject]:
    """The objects of `refs` that exist and may be read (404 and 403 leave them out), within the bounds
    above: what `measure` reads to confirm the cluster's identity before anything else."""
    with hard_stop(RUN_SECONDS + HARD_STOP_GRACE_SECONDS, str(api.configuration.host)):
        reader = _Reader(api)
        found: dict[ObjectRef, K8sObject] = {}
        for ref in refs:
            obj = reader.get(ref, ())
            if isinstance(obj, dict):
                found[ref] = obj
        return found
