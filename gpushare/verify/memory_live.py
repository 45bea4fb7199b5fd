"""Read GPU memory from the live cluster through the API server, GET only, bounded in time and size.

Per GPU node of the stack: the pods on it (`spec.nodeName` field selector), which gives both the slots
its pods hold and the exporter pod serving that node; then each exporter pod's page through the pod
proxy (`/api/v1/namespaces/NS/pods/POD:PORT/proxy/metrics`, `Accept: text/plain`: a Service proxy
would reach one random endpoint, not every node), or one Prometheus HTTP API (`--prometheus URL`,
instant vectors, `max_over_time` over a window for `measure`). Whatever cannot be read (403 on
`pods/proxy`, an exporter that does not answer, a hostile page) becomes a problem of the observation,
named, never an exception: the other checks go on.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpushare.verify.expectations import ClusterExpectation
from gpushare.verify.memory_budget import budget_findings, shared_pool_nodes
from gpushare.verify.memory_exporters import ExporterPod, exporter_pod
from gpushare.verify.memory_observation import GpuPods, LiveMemory, MemoryObservation
from gpushare.verify.memory_series import (
    MIB,
    USED_METRICS,
    PageError,
    Readings,
    Sample,
    by_node,
    page_samples,
    readings,
    vector_samples,
)
from gpushare.verify.memory_source import MemorySource
from gpushare.verify.objects import resource_count as _count
from gpushare.verify.report import Finding
from gpushare.yaml_bounds import loads_json_bounded

# Connect within CONNECT_SECONDS; one request (an exporter page, a Prometheus query, a node's pod list),
# headers and whole body, within REQUEST_SECONDS (a page dripped a byte at a time meets it, not only each
# socket read); all GPU memory reads of one run within TOTAL_SECONDS. Behind them, the callers' hard stop
# (reader.hard_stop) ends what these cannot see (a server dripping its status line and headers).
CONNECT_SECONDS = 5.0
REQUEST_SECONDS = 15.0
TOTAL_SECONDS = 90.0
_CHUNK = 64 * 1024
# A dcgm-exporter page of an 8-GPU node with every default counter is ~150 KiB.
MAX_PAGE_BYTES = 8 * 1024 * 1024
ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
_TERMINATED = ("Succeeded", "Failed")
_NODE_LABELS = (
    "Hostname",
    "hostname",
    "node",
    "kubernetes_node",
    "nodename",
    "instance",
    "exported_instance",
)
LOOKED_FOR = (
    "dcgm-exporter (labels app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter, or its image), "
    "nvidia_gpu_exporter (its image), TKE's kube-system/nvidia-gpu-exporter"
)


def pod_gpu_resources(pod: Mapping[str, Any]) -> dict[str, int]:
    """The `nvidia.com/*` slots a pod holds: its containers' limits (requests where no limit), or an init
    container's if larger, as the scheduler counts them."""
    spec = pod.get("spec") or {}

    def wanted(container: Mapping[str, Any]) -> dict[str, int]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return {r: _count(v) for r, v in merged.items() if str(r).startswith("nvidia.com/") and _count(v)}

    total: dict[str, int] = defaultdict(int)
    for container in spec.get("containers") or []:
        for resource, slots in wanted(container).items():
            total[resource] += slots
    for container in spec.get("initContainers") or []:
        for resource, slots in wanted(container).items():
            total[resource] = max(total[resource], slots)
    return dict(total)


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    @property
    def passed(self) -> bool:
        return time.monotonic() > self.end

    def left(self) -> float:
        return self.end - time.monotonic()


class _Late(Exception):
    """A request that did not end within REQUEST_SECONDS (or the run's TOTAL_SECONDS)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


def _one_line(text: object, limit: int = 160) -> str:
    return " ".join(str(text).split())[:limit]


class _Http:
    """GET through the API server with the kubeconfig's credentials, or to another host without them."""

    def __init__(self, api: client.ApiClient, run: _Deadline | None = None) -> None:
        self.api = api
        self.run = run or _Deadline(TOTAL_SECONDS)
        self._plain: urllib3.PoolManager | None = None

    def get(self, url_or_path: str, accept: str) -> tuple[int, bytes]:
        """(status, body of at most MAX_PAGE_BYTES + 1 bytes), read whole within REQUEST_SECONDS and the
        run's deadline (`_Late` past either); urllib3/ApiException errors propagate."""
        limit = min(REQUEST_SECONDS, self.run.left())
        if limit <= 0:
            raise _Late(0)
        request = _Deadline(limit)
        timeout = (min(CONNECT_SECONDS, limit), limit)
        host = str(self.api.configuration.host).rstrip("/")
        if url_or_path.startswith("/") or url_or_path.startswith(host + "/"):
            path = url_or_path.removeprefix(host)
            method, url, headers, _, _ = self.api.param_serialize(
                "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
            )
            response = self.api.call_api(method, url, header_params=headers, _request_timeout=timeout)
            raw = response.response
        else:
            # Another host: the cluster's credentials are not sent there.
            self._plain = self._plain or urllib3.PoolManager(retries=False)
            raw = self._plain.request(
                "GET",
                url_or_path,
                headers={"Accept": accept},
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                preload_content=False,
                redirect=False,
            )
        try:
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_PAGE_BYTES:
                if request.passed:
                    raw.close()
                    raise _Late(limit)
                chunk = raw.read1(_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return raw.status, b"".join(chunks)
        finally:
            raw.release_conn()


def _status_message(body: bytes) -> str:
    """The message of the API server's Status object, else the start of the body."""
    try:
        status = loads_json_bounded(body)
    except ValueError:
        status = None
    message = status.get("message") if isinstance(status, dict) else None
    return _one_line(message or body[:200].decode("utf-8", "replace") or "no body")


def _failure(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"the API server answered {err.status} {_one_line(err.reason or '')}".rstrip()
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        err = err.reason
    if isinstance(err, _Late):
        return f"no complete answer within {err.seconds:g} s"
    if isinstance(err, urllib3.exceptions.ReadTimeoutError | urllib3.exceptions.ConnectTimeoutError):
        return f"no answer within {REQUEST_SECONDS:g} s"
    return f"no answer: {_one_line(getattr(err, 'reason', None) or err)}"


class _Session:
    def __init__(self, api: client.ApiClient, source: MemorySource) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.deadline = _Deadline(TOTAL_SECONDS)
        self.http = _Http(api, self.deadline)
        self.source = source
        self.problems: list[tuple[str, str]] = []
        self.unread: set[str] = set()

    def problem(self, obj: str, message: str, nodes: Iterable[str] = ()) -> None:
        self.problems.append((obj, message))
        self.unread.update(nodes)

    def node_pods(self, node: str) -> list[dict[str, Any]] | None:
        """Every pod bound to `node`; None (and a problem) when they cannot be listed."""
        path = f"/api/v1/pods?{urlencode({'fieldSelector': f'spec.nodeName={node}'})}"
        try:
            status, body = self.http.get(path, "application/json")
        except (ApiException, urllib3.exceptions.HTTPError, ConfigException, _Late) as err:
            if isinstance(err, ApiException) and err.status == 403:
                raise _Forbidden("list pods at cluster scope") from None
            self.problem(f"node/{node}", f"cannot list the pods on this node: {_failure(err)}", [node])
            return None
        if status == 403:
            raise _Forbidden("list pods at cluster scope")
        items = None
        if status == 200 and len(body) <= MAX_PAGE_BYTES:
            try:
                answer = loads_json_bounded(body)
            except ValueError:
                answer = None
            items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not all(isinstance(p, dict) for p in items):
            said = (
                f"answered {status}: {_status_message(body)}"
                if status != 200
                else "the answer is not a PodList"
            )
            self.problem(f"node/{node}", f"cannot list the pods on this node: {said}", [node])
            return None
        return [p for p in items if (p.get("status") or {}).get("phase") not in _TERMINATED]

    def scrape(self, exporter: ExporterPod) -> list[Readings] | None:
        path = f"/api/v1/namespaces/{exporter.namespace}/pods/{exporter.name}:{exporter.port}/proxy/metrics"
        where = f"{exporter.kind} {exporter}"
        try:
            status, body = self.http.get(path, ACCEPT)
        except (ApiException, urllib3.exceptions.HTTPError, ConfigException, _Late) as err:
            self.problem(str(exporter), f"{where} on node {exporter.node}: {_failure(err)}", [exporter.node])
            return None
        if status == 403:
            raise _Forbidden(f"get pods/proxy in namespace {exporter.namespace}")
        if status != 200:
            self.problem(
                str(exporter),
                f"{where} on node {exporter.node}: the pod proxy answered {status}: {_status_message(body)}",
                [exporter.node],
            )
            return None
        if len(body) > MAX_PAGE_BYTES:
            self.problem(
                str(exporter),
                f"{where} on node {exporter.node}: its page is larger than {MAX_PAGE_BYTES // MIB} MiB; not read",
                [exporter.node],
            )
            return None
        try:
            samples = page_samples(body.decode("utf-8", "replace"))
        except PageError as err:
            self.problem(str(exporter), f"{where} on node {exporter.node}: {err.message}", [exporter.node])
            return None
        found = readings(samples, lambda _labels: exporter.node, self.source.tke_gpu_label)
        for result in found:
            for problem in result.problems:
                self.problem(str(exporter), f"{where} on node {exporter.node}: {problem}")
        return found

    def query(self, expression: str, metric: str) -> list[Sample] | None:
        assert self.source.prometheus is not None
        url = f"{self.source.prometheus.rstrip('/')}/api/v1/query?{urlencode({'query': expression})}"
        where = f"Prometheus at {self.source.prometheus}"
        try:
            status, body = self.http.get(url, "application/json")
        except (ApiException, urllib3.exceptions.HTTPError, ConfigException, _Late) as err:
            self.problem("prometheus", f"{where}: {expression}: {_failure(err)}")
            return None
        if status == 403:
            self.problem("prometheus", f"{where}: {expression}: the server answered 403 (no permission)")
            return None
        if len(body) > MAX_PAGE_BYTES:
            self.problem(
                "prometheus", f"{where}: {expression}: answer larger than {MAX_PAGE_BYTES // MIB} MiB"
            )
            return None
        try:
            answer = loads_json_bounded(body)
        except ValueError as err:
            self.problem(
                "prometheus", f"{where}: {expression}: answered {status}, not JSON ({_one_line(err, 80)})"
            )
            return None
        if status != 200:
            said = answer.get("error") or answer.get("message") if isinstance(answer, dict) else None
            self.problem(
                "prometheus", f"{where}: {expression}: answered {status} ({_one_line(said or answer)})"
            )
            return None
        try:
            return vector_samples(answer, metric)
        except PageError as err:
            self.problem("prometheus", f"{where}: {expression}: {err.message}")
            return None


class _Forbidden(Exception):
    """A 403 that stops all GPU memory reads (the same request would be refused for every node)."""

    def __init__(self, permission: str) -> None:
        self.permission = permission


def _node_names(nodes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every name and address a node is known by -> its name (Prometheus labels name either)."""
    names: dict[str, str] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        names[name] = name
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("address"):
                names.setdefault(str(address["address"]), name)
    return names


def _node_of(names: Mapping[str, str]) -> Any:
    def node_of(labels: Mapping[str, str]) -> str | None:
        for key in _NODE_LABELS:
            value = labels.get(key)
            if not value:
                continue
            host = value.rsplit(":", 1)[0] if key.endswith("instance") else value
            if host in names:
                return names[host]
        return None

    return node_of


def _prometheus(session: _Session, names: Mapping[str, str]) -> tuple[list[Readings], dict[str, int]]:
    window = session.source.window
    found: list[Readings] = []
    counted: list[Readings] = []
    answered = False
    for metric, (_, factor) in USED_METRICS.items():
        samples = session.query(f"max_over_time({metric}[{window}])" if window else metric, metric)
        if samples is None:
            continue
        answered = True
        for result in readings(samples, _node_of(names), session.source.tke_gpu_label):
            found.append(result)
            for problem in result.problems:
                session.problem("prometheus", f"Prometheus at {session.source.prometheus}: {problem}")
        if window and samples:
            counts = session.query(f"count_over_time({metric}[{window}])", metric) or []
            # Counts are not memory: undo the exporter's unit so they come out as counts.
            unscaled = [Sample(s.name, s.labels, s.value / factor) for s in counts]
            counted += readings(unscaled, _node_of(names), session.source.tke_gpu_label)
    samples_per_node = {
        node: int(min(r.used_mib.values())) for node, r in by_node(counted).items() if r.used_mib
    }
    if not answered:
        session.unread.update(names.values())
    return found, samples_per_node


def read_gpu_memory(
    api: client.ApiClient,
    nodes: Sequence[Mapping[str, Any]],
    node_names: Sequence[str],
    source: MemorySource,
) -> LiveMemory:
    """Readings, slots and problems for `node_names` (the GPU nodes of the stack's pools)."""
    session = _Session(api, source)
    gpu_pods: dict[str, GpuPods] = {}
    exporters: dict[str, list[ExporterPod]] = {}
    names = _node_names(nodes)
    found: list[Readings] = []
    samples: dict[str, int] = {}
    try:
        for node in node_names:
            if session.deadline.passed:
                session.problem(
                    f"node/{node}", f"not read: the {TOTAL_SECONDS} s for GPU memory ran out", [node]
                )
                continue
            pods = session.node_pods(node)
            if pods is None:
                continue
            holding = {
                f"{(p.get('metadata') or {}).get('namespace')}/{(p.get('metadata') or {}).get('name')}": pod_gpu_resources(
                    p
                )
                for p in pods
            }
            gpu_pods[node] = GpuPods({k: v for k, v in holding.items() if v})
            exporters[node] = [e for e in (exporter_pod(p, source.named) for p in pods) if e is not None]
            for pod in pods:
                ip = (pod.get("status") or {}).get("podIP")
                if ip:
                    names.setdefault(str(ip), node)
        if source.prometheus:
            found, samples = _prometheus(session, names)
        elif node_names and not any(exporters.values()):
            named = ", ".join(str(n) for n in source.named)
            session.problem(
                "cluster",
                f"no GPU memory exporter runs on the pools' nodes (looked for {named or LOOKED_FOR}); "
                "memory-budget not checked: install one, name it with --exporter NAMESPACE/NAME[:PORT], "
                "or give --prometheus URL",
                node_names,
            )
        else:
            for node in node_names:
                if node not in exporters or node in session.unread:
                    continue
                if not exporters[node]:
                    session.problem(
                        f"node/{node}", "no GPU memory exporter pod runs on this node; not checked", [node]
                    )
                for exporter in exporters[node]:
                    if session.deadline.passed:
                        session.problem(
                            str(exporter), f"not read: the {TOTAL_SECONDS} s for GPU memory ran out", [node]
                        )
                        break
                    found += session.scrape(exporter) or []
    except _Forbidden as denied:
        session.problem(
            "permission",
            f"missing permission: {denied.permission} (the API server answered 403); memory-budget not "
            "checked; see docs/measurement-loop.md for the ClusterRole",
            node_names,
        )
    where = f"Prometheus at {source.prometheus}" if source.prometheus else "the exporters"
    observation = MemoryObservation(
        source=where,
        readings=by_node(found),
        allocated={node: pods.allocated() for node, pods in gpu_pods.items()},
        unread=frozenset(session.unread),
        problems=tuple(session.problems),
    )
    return LiveMemory(observation, gpu_pods, samples)


def memory_findings(
    api: client.ApiClient,
    expected: ClusterExpectation,
    nodes: Sequence[Mapping[str, Any]],
    source: MemorySource,
) -> list[Finding]:
    """`verify`'s memory-budget findings: the shared pools' nodes read, then checked against the plan."""
    shared = sorted(shared_pool_nodes(expected, nodes))
    live = read_gpu_memory(api, nodes, shared, source)
    return budget_findings(expected, nodes, live.observation)
