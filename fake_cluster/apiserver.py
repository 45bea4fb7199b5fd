"""A small read-only Kubernetes API server for tests, on 127.0.0.1, reached through a kubeconfig.

It serves objects shaped as a real API server serves them: single objects with `apiVersion`/`kind`,
List kinds with `metadata.resourceVersion` and `items` (items without kind/apiVersion), label and field
selectors (field labels limited to what the real server supports per resource), `Status` objects for
404/403/400, and enough discovery (`/api`, `/apis`, `/api/v1`, `/apis/apps/v1`, `/version`) for kubectl.
Every request is recorded; any write is refused (405) and recorded in `writes`.

Exporter pages are served through the pod proxy (`/api/v1/namespaces/NS/pods/POD:PORT/proxy/metrics`,
from `pages`) as the API server relays them, and a Prometheus HTTP API stand-in answers `/api/v1/query`
behind a service proxy path (`prometheus_series`; see `_prometheus`).

A test can make it misbehave as hostile or broken servers do: `override` answers a request instead of the
state (a `Reply`: any status, headers such as Retry-After, a body, optionally dripped a byte at a time),
for pagination loops, 429s, slow bodies and malformed objects.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True)
class Kind:
    kind: str
    group_version: str  # "v1" or "apps/v1"
    plural: str
    namespaced: bool
    field_labels: frozenset[str]

    @property
    def prefix(self) -> str:
        return "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"

    @property
    def group(self) -> str:
        return "" if self.group_version == "v1" else self.group_version.split("/")[0]


_META = frozenset({"metadata.name", "metadata.namespace"})
KINDS = {
    k.kind: k
    for k in (
        Kind("Node", "v1", "nodes", False, _META | {"spec.unschedulable"}),
        Kind(
            "Pod",
            "v1",
            "pods",
            True,
            _META
            | {
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            },
        ),
        Kind(
            "Event",
            "v1",
            "events",
            True,
            _META
            | {
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            },
        ),
        Kind("ConfigMap", "v1", "configmaps", True, _META),
        Kind("DaemonSet", "apps/v1", "daemonsets", True, _META),
        Kind("Deployment", "apps/v1", "deployments", True, _META),
        Kind("ReplicaSet", "apps/v1", "replicasets", True, _META | {"status.replicas"}),
        Kind("StatefulSet", "apps/v1", "statefulsets", True, _META),
    )
}
_BY_ROUTE = {(k.prefix, k.plural): k for k in KINDS.values()}
_POD_PROXY = re.compile(
    r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<pod>[^/:]+):(?P<port>[0-9]+)/proxy/(?P<path>.*)$"
)
_SERVICE_PROXY = re.compile(
    r"^/api/v1/namespaces/(?P<ns>[^/]+)/services/(?P<svc>[^/]+)/proxy(?P<path>/api/v1/query)$"
)
# Not an API kind: a page the pod proxy serves for (namespace, pod, port), loaded with the objects.
PAGE_KIND = "test/ExporterPage"
# What the stand-in answers `count_over_time(...)` with: a week of one sample a minute.
PROMETHEUS_COUNT = 7 * 24 * 60
_QUERY = re.compile(
    r"^(?:(?P<fn>max_over_time|count_over_time)\()?(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)(?:\[[0-9a-z]+\]\))?$"
)
_ROUTE = re.compile(
    r"^(?P<prefix>/api/v1|/apis/[a-z0-9.]+/v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[a-z]+)(?:/(?P<name>[^/]+))?$"
)


class SelectorError(ValueError):
    pass


@dataclass(frozen=True)
class Reply:
    """An answer `FakeApiServer.override` gives instead of the cluster state."""

    status: int
    body: bytes | dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    drip_seconds: float = 0.0
    """Send the body one byte at a time, this long apart (Content-Length still announces all of it)."""
    drip_headers: bool = False
    """Drip the status line and headers too (a socket read timeout never fires, nor a body deadline)."""


Override = Callable[[str, dict[str, list[str]]], Reply | None]


def _split_requirements(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def label_selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Kubernetes label selector syntax: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`."""
    for requirement in _split_requirements(selector):
        set_match = re.match(r"^(\S+)\s+(in|notin)\s+\((.*)\)$", requirement)
        if set_match:
            key, op, values = set_match[1], set_match[2], {v.strip() for v in set_match[3].split(",")}
            if (op == "in") != (key in labels and labels[key] in values):
                return False
            continue
        if requirement.startswith("!"):
            if requirement[1:] in labels:
                return False
            continue
        match = re.match(r"^([^=!]+)(==|=|!=)(.*)$", requirement)
        if match is None:
            if not re.match(r"^[A-Za-z0-9./_-]+$", requirement):
                raise SelectorError(f"unable to parse requirement: {requirement!r}")
            if requirement not in labels:
                return False
            continue
        key, op, value = match[1].strip(), match[2], match[3].strip()
        if (op == "!=") == (labels.get(key) == value):
            return False
    return True


def _field(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


NODE_NAME = "spec.nodeName"


def _node_name_selected(query: Mapping[str, list[str]]) -> str | None:
    """The node of a request whose one field selector is the single requirement `spec.nodeName=NODE`."""
    selectors = query.get("fieldSelector", [])
    requirements = _split_requirements(selectors[0]) if len(selectors) == 1 else []
    if len(requirements) != 1:
        return None
    match = re.match(r"^spec\.nodeName==?(.*)$", requirements[0])
    return None if match is None else match[1]


def field_selector_matches(selector: str, obj: Mapping[str, Any], kind: Kind) -> bool:
    for requirement in _split_requirements(selector):
        match = re.match(r"^([A-Za-z.]+)(==|=|!=)(.*)$", requirement)
        if match is None:
            raise SelectorError(f"invalid field selector: {requirement!r}")
        path, op, value = match[1], match[2], match[3]
        if path not in kind.field_labels:
            raise SelectorError(f"field label not supported: {path}")
        if (op == "!=") == (_field(obj, path) == value):
            return False
    return True


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


class _QuietServer(ThreadingHTTPServer):
    """A client that gives up mid-answer (verify's deadlines, by design in the hostile tests) is no error
    worth a traceback on the test's stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeApiServer:
    """Start once per test module; `load()` a cluster state per test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        # Indexes over `_objects`, rebuilt by `load`: each kind's keys in order, and pods by spec.nodeName
        # (as kube-apiserver's watch cache indexes them), so a per-node pod list does not scan every pod:
        # bench/live.py serves clusters of thousands of pods, and verify lists the pods of each GPU node.
        self._keys_by_kind: dict[str, list[tuple[str, str, str]]] = {}
        self._pods_by_node: dict[str, list[tuple[str, str, str]]] = {}
        self._resource_version = 1000
        self.requests: list[tuple[str, str]] = []
        self.writes: list[tuple[str, str]] = []
        # The Authorization header of each request in `requests` (None: none sent).
        self.authorization: list[str | None] = []
        # (plural, namespace or None for every scope) answered 403.
        self.forbidden: set[tuple[str, str | None]] = set()
        # (namespace, pod, port) -> the exporter page the pod proxy relays (text, or raw bytes).
        self.pages: dict[tuple[str, str, int], str | bytes] = {}
        # Seconds the pod proxy waits before answering (an exporter that hangs).
        self.page_delay = 0.0
        # Prometheus stand-in: metric name -> [(labels, value)], the peak for max_over_time too.
        self.prometheus_series: dict[str, list[tuple[dict[str, str], float]]] = {}
        # (path, query) -> a Reply instead of the state, or None to answer from the state.
        self.override: Override | None = None
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def close(self) -> None:
        """Release the port of a server that was never started."""
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        # typeshed allows bytes here; an AF_INET server's address is a str.
        address = host.decode() if isinstance(host, bytes) else host
        return f"http://{address}:{port}"

    def write_kubeconfig(self, path: Path, context: str = "fake") -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "verify", "user": {}}],
                    "contexts": [{"name": context, "context": {"cluster": "fake", "user": "verify"}}],
                    "current-context": context,
                }
            )
        )
        return path

    # -- state ---------------------------------------------------------------------------------
    def load(
        self, objects: Iterable[Mapping[str, Any]], forbidden: Iterable[tuple[str, str | None]] = ()
    ) -> None:
        with self._lock:
            self._objects = {}
            self.pages = {}
            for obj in objects:
                if obj.get("kind") == PAGE_KIND:
                    pod, port = obj["metadata"]["name"].rsplit(":", 1)
                    self.pages[(obj["metadata"]["namespace"], pod, int(port))] = obj["page"]
                else:
                    self._add(obj)
            self._keys_by_kind = {}
            self._pods_by_node = {}
            for key in sorted(self._objects):
                self._keys_by_kind.setdefault(key[0], []).append(key)
                if key[0] == "Pod":
                    self._pods_by_node.setdefault(_field(self._objects[key], NODE_NAME), []).append(key)
            self.forbidden = set(forbidden)
            self.override = None
            self.requests.clear()
            self.authorization.clear()
            self.page_delay = 0.0
            self.prometheus_series = {}

    def _add(self, original: Mapping[str, Any]) -> None:
        obj = copy.deepcopy(dict(original))
        kind = KINDS[obj["kind"]]
        metadata = obj.setdefault("metadata", {})
        if kind.namespaced:
            metadata.setdefault("namespace", "default")
        else:
            metadata.pop("namespace", None)
        namespace = metadata.get("namespace", "")
        metadata.setdefault(
            "uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind.kind}/{namespace}/{metadata['name']}"))
        )
        self._resource_version += 1
        metadata.setdefault("resourceVersion", str(self._resource_version))
        metadata.setdefault("creationTimestamp", "2025-06-01T00:00:00Z")
        obj["apiVersion"] = kind.group_version
        key = (kind.kind, namespace, metadata["name"])
        if key in self._objects:
            raise ValueError(f"duplicate object {key}")
        self._objects[key] = obj

    # -- HTTP ------------------------------------------------------------------------------------
    def _discovery(self, path: str) -> dict[str, Any] | None:
        if path == "/version":
            return {"major": "1", "minor": "30", "gitVersion": "v1.30.0", "platform": "linux/amd64"}
        if path == "/api":
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.url[7:]}],
            }
        if path == "/apis":
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": "apps",
                        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
                    }
                ],
            }
        for prefix, group_version in (("/api/v1", "v1"), ("/apis/apps/v1", "apps/v1")):
            if path == prefix:
                return {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": group_version,
                    "resources": [
                        {
                            "name": k.plural,
                            "singularName": k.kind.lower(),
                            "namespaced": k.namespaced,
                            "kind": k.kind,
                            "verbs": ["get", "list"],
                        }
                        for k in KINDS.values()
                        if k.group_version == group_version
                    ],
                }
        return None

    def answer(self, path: str, query: dict[str, list[str]] | None = None) -> dict[str, Any]:
        """What the server answers from its state (for an `override` that edits a real answer)."""
        body = self._get(path, query or {})[1]
        assert isinstance(body, dict), f"{path} answers a page, not an API object"
        return body

    def _forbidden_proxy(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        return status(
            403,
            "Forbidden",
            f'{resource} "{name}" is forbidden: User "system:serviceaccount:ops:gpushare-verify" cannot get '
            f'resource "{resource}" in API group "" in the namespace "{namespace}"',
            {"name": name, "kind": resource.split("/")[0]},
        )

    def _pod_proxy(self, match: re.Match[str]) -> tuple[int, dict[str, Any] | bytes]:
        """The API server's pod proxy: 404 for a pod it does not have, 503 when nothing listens."""
        namespace, name, port = match["ns"], match["pod"], int(match["port"])
        if ("pods/proxy", None) in self.forbidden or ("pods/proxy", namespace) in self.forbidden:
            return 403, self._forbidden_proxy("pods/proxy", namespace, f"{name}:{port}")
        with self._lock:
            pod = self._objects.get(("Pod", namespace, name))
            page = self.pages.get((namespace, name, port))
        if pod is None:
            return 404, status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        if page is None or match["path"] != "metrics":
            ip = (pod.get("status") or {}).get("podIP", "172.16.0.9")
            return 503, status(
                503,
                "ServiceUnavailable",
                f"error trying to reach service: dial tcp {ip}:{port}: connect: connection refused",
            )
        if self.page_delay:
            time.sleep(self.page_delay)
        return 200, page.encode() if isinstance(page, str) else page

    def _prometheus(self, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """`/api/v1/query` for `METRIC`, `max_over_time(METRIC[W])` (the stored values are the peaks) and
        `count_over_time(METRIC[W])` (PROMETHEUS_COUNT per series), as vectors; anything else is a 400."""
        expression = (query.get("query") or [""])[0]
        match = _QUERY.match(expression)
        if match is None:
            return 400, {"status": "error", "errorType": "bad_data", "error": f"parse error: {expression!r}"}
        result = []
        for labels, value in self.prometheus_series.get(match["metric"], []):
            shown = PROMETHEUS_COUNT if match["fn"] == "count_over_time" else value
            metric = labels if match["fn"] else {"__name__": match["metric"], **labels}
            result.append({"metric": metric, "value": [1764633600.0, str(shown)]})
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}

    def _get(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any] | bytes]:
        path = unquote(path)
        proxied = _POD_PROXY.match(path)
        if proxied:
            return self._pod_proxy(proxied)
        if _SERVICE_PROXY.match(path) or path == "/api/v1/query":
            return self._prometheus(query)
        discovery = self._discovery(path)
        if discovery is not None:
            return 200, discovery
        match = _ROUTE.match(path)
        kind = _BY_ROUTE.get((match["prefix"], match["plural"])) if match else None
        if match is None or kind is None:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        namespace, name = match["ns"], match["name"]
        resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
        if (kind.plural, None) in self.forbidden or (kind.plural, namespace) in self.forbidden:
            verb = "get" if name else "list"
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            return 403, status(
                403,
                "Forbidden",
                f'{resource} is forbidden: User "system:serviceaccount:ops:gpushare-verify" cannot {verb} '
                f'resource "{kind.plural}" in API group "{kind.group}" {scope}',
                {"kind": kind.plural, **({"name": name} if name else {})},
            )
        with self._lock:
            if name is not None:
                obj = self._objects.get((kind.kind, namespace or "", name))
                if obj is None:
                    return 404, status(
                        404,
                        "NotFound",
                        f'{resource} "{name}" not found',
                        {"name": name, "group": kind.group, "kind": kind.plural},
                    )
                return 200, {"kind": kind.kind, **copy.deepcopy(obj)}
            on_node = _node_name_selected(query) if kind.kind == "Pod" else None
            keys = (
                self._keys_by_kind.get(kind.kind, [])
                if on_node is None
                else self._pods_by_node.get(on_node, [])
            )
            # The selectors below still run over these: the index only narrows what they look at.
            items = [self._objects[key] for key in keys if not namespace or key[1] == namespace]
            version = str(self._resource_version)
        try:
            for selector in query.get("labelSelector", []):
                items = [
                    o for o in items if label_selector_matches(selector, o["metadata"].get("labels") or {})
                ]
            for selector in query.get("fieldSelector", []):
                items = [o for o in items if field_selector_matches(selector, o, kind)]
        except SelectorError as err:
            return 400, status(400, "BadRequest", str(err))
        listed = [
            {k: v for k, v in copy.deepcopy(o).items() if k not in ("kind", "apiVersion")} for o in items
        ]
        return 200, {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.group_version,
            "metadata": {"resourceVersion": version},
            "items": listed,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: without this, Nagle + delayed ACK add ~40 ms each.
            disable_nagle_algorithm = True

            def _reply(self, code: int, body: dict[str, Any] | bytes) -> None:
                text = isinstance(body, bytes)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; version=0.0.4" if text else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                server.requests.append(("GET", self.path))
                server.authorization.append(self.headers.get("Authorization"))
                query = parse_qs(parts.query)
                override = server.override(parts.path, query) if server.override else None
                if override is not None:
                    self._send(override)
                    return
                code, body = server._get(parts.path, query)
                self._reply(code, body)

            def _send(self, reply: Reply) -> None:
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                if reply.drip_headers:
                    head = f"HTTP/1.1 {reply.status} OK\r\nContent-Type: application/json\r\n"
                    data = f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data
                    self._drip(data, reply.drip_seconds)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if not reply.drip_seconds:
                    self.wfile.write(data)
                    return
                self._drip(data, reply.drip_seconds)

            def _drip(self, data: bytes, seconds: float) -> None:
                try:
                    for offset in range(len(data)):
                        self.wfile.write(data[offset : offset + 1])
                        self.wfile.flush()
                        time.sleep(seconds)
                except OSError:
                    pass  # the client gave up, as it should

            def _refuse(self) -> None:
                server.writes.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self._reply(405, status(405, "MethodNotAllowed", "this fake API server is read-only"))

            do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
