"""Run a Pulumi Python program offline and record everything the engine would see.

`run_program` reproduces what `pulumi-language-python-exec` does for `pulumi preview/up`
(config via `set_all_config`, `Settings`, a fresh event loop, `run_in_stack(runpy.run_path(DIR))`,
cwd = the project directory), but the resource monitor is a `RecordingMonitor`: a `MockMonitor`
that keeps every registration (type, name, engine-style URN, parent, provider reference, decoded
wire inputs/outputs, dependencies, options, secret paths), every invoke and every
`register_outputs` payload. `load_stack_config` reads `Pulumi.<stack>.yaml` the way the CLI does,
without decrypting secrets.

The wire format is decoded here on purpose instead of with `pulumi.runtime.rpc.deserialize_properties`:
that function rehydrates resource references into live `Resource` objects and hangs when called from
a monitor worker (reproduced with Helm v3 `Chart`, whose outputs hold references).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import hashlib
import json
import logging
import os
import re
import runpy
import sys
import threading
import types
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, TypeVar

import pulumi
import yaml
from google.protobuf import empty_pb2, struct_pb2  # type: ignore[import-untyped]  # no stubs installed
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.proto import engine_pb2, provider_pb2, resource_pb2
from pulumi.runtime.stack import run_in_stack

from gpushare.resource_types import HELM_RELEASE
from gpushare.stack_yaml import load_cli_yaml
from offline import wire

try:  # private helper: maps the transform callbacks of a request back to the Python callables
    from pulumi.runtime.mocks import _resolve_callbacks
except ImportError:  # pragma: no cover - only if a future SDK drops it

    def _resolve_callbacks(callbacks: Any) -> list[Any]:
        return []


__all__ = [
    "SECRET_PLACEHOLDER",
    "STACK_TYPE",
    "UNKNOWN",
    "UNKNOWN_WIRE",
    "Mocks",
    "ProgramRun",
    "RecordedResource",
    "RecordingMonitor",
    "ResourceRef",
    "decode_struct",
    "encode_struct",
    "engine_urn",
    "is_unknown",
    "load_stack_config",
    "read_project_name",
    "run_program",
    "urn_qualified_type",
]

_T = TypeVar("_T")
_LOG = logging.getLogger("offline.program")

STACK_TYPE: Final = "pulumi:pulumi:Stack"
SECRET_PLACEHOLDER: Final = "[secret]"
"""What `load_stack_config` returns for a `secure:` value (it never decrypts)."""

UNKNOWN_WIRE: Final = wire.UNKNOWN
"""The engine's unknown sentinel; decoded, it becomes `UNKNOWN`."""
_MAX_EXACT_DOUBLE: Final = 2**53


class _Unknown(str):
    """A value that is not known yet (preview). Serialises to JSON as the string "<unknown>"."""

    __slots__ = ()

    def __new__(cls) -> _Unknown:
        return super().__new__(cls, "<unknown>")

    def __repr__(self) -> str:
        return "UNKNOWN"

    # Keep the singleton through copy/deepcopy/pickle so `value is UNKNOWN` stays reliable.
    def __copy__(self) -> _Unknown:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Unknown:
        return self

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()


def is_unknown(value: object) -> bool:
    return isinstance(value, _Unknown)


class ResourceRef(dict[str, str]):
    """A resource reference from the wire: equal to the plain dict ``{"urn": ..., "id": ...}``.

    Being a distinct type lets the monitor send it back to the program as a reference again.
    """

    @property
    def urn(self) -> str:
        return self["urn"]

    @property
    def id(self) -> str | None:
        return self.get("id")


@dataclass(frozen=True)
class RecordedResource:
    type: str
    name: str
    urn: str
    parent: str | None
    custom: bool
    remote: bool
    provider: str | None
    """Provider reference "urn::id" as the engine sees it; None for default providers (never registered)."""
    inputs: dict[str, Any]
    """Decoded wire JSON: camelCase keys, secrets unwrapped (see `secret_input_paths`), UNKNOWN for unknowns."""
    outputs: dict[str, Any]
    """What the mocks returned; for components merged with their `register_outputs` payload."""
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    protect: bool
    ignore_changes: list[str]
    delete_before_replace: bool
    additional_secret_outputs: list[str]
    secret_input_paths: list[str]
    """Property paths (engine syntax: `stringData.token`, `data["a.b"]`, `items[0]`) that were secret."""
    id: str | None = None
    external: bool = False
    """True for `Resource.get(...)` reads (ReadResource) rather than registrations."""
    replace_on_changes: list[str] = field(default_factory=list)
    """Property paths whose change makes the engine plan a replacement (`replace_on_changes`)."""


@dataclass(frozen=True)
class ProgramRun:
    resources: list[RecordedResource]
    """Registration order; the `pulumi:pulumi:Stack` root comes first."""
    stack_outputs: dict[str, Any]
    component_outputs: dict[str, dict[str, Any]]
    """urn -> `register_outputs` payload (the stack's own payload is `stack_outputs`)."""
    invokes: list[tuple[str, dict[str, Any]]]
    logs: list[tuple[str, str]] = field(default_factory=list)
    """(severity, message) of `pulumi.log.info/warn/error` calls; debug messages are not kept."""

    def resource(self, type_: str, name: str) -> RecordedResource:
        for resource in self.resources:
            if resource.type == type_ and resource.name == name:
                return resource
        raise KeyError(f"no {type_} named {name!r} was registered")

    def by_urn(self, urn: str) -> RecordedResource:
        for resource in self.resources:
            if resource.urn == urn:
                return resource
        raise KeyError(urn)


# --------------------------------------------------------------------------------------------------
# URNs


def urn_qualified_type(urn: str) -> str:
    # urn:pulumi:<stack>::<project>::<qualified type>::<name>; only the name may contain "::".
    parts = urn.split("::", 3)
    if len(parts) != 4 or not parts[0].startswith("urn:pulumi:"):
        raise ValueError(f"not a Pulumi URN: {urn!r}")
    return parts[2]


def engine_urn(stack: str, project: str, parent_urn: str | None, type_: str, name: str) -> str:
    """The engine's `generateURN`: parent's full qualified type + "$" + type, the root Stack skipped."""
    qualified = type_
    if parent_urn:
        parent_type = urn_qualified_type(parent_urn)
        if parent_type != STACK_TYPE:
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


# --------------------------------------------------------------------------------------------------
# Wire encoding


def _requires_quote(char: str) -> bool:
    return not (char.isascii() and (char.isalnum() or char == "_"))


def _path_key(prefix: str, key: str) -> str:
    # Same rendering as the engine's PropertyPath.String().
    if any(_requires_quote(char) for char in key):
        escaped = key.replace('"', '\\"')
        return f'{prefix}["{escaped}"]'
    return f"{prefix}.{key}" if prefix else key


def _path_index(prefix: str, index: int) -> str:
    return f"{prefix}[{index}]"


def decode_struct(struct: struct_pb2.Struct) -> tuple[dict[str, Any], list[str]]:
    """Decode a wire Struct into plain Python, returning it and the paths of the secrets inside.

    Keys are sorted: protobuf maps have no order, and sorted keys make recordings deterministic.
    """
    secret_paths: list[str] = []
    decoded = {
        key: _decode_value(struct.fields[key], _path_key("", key), secret_paths)
        for key in sorted(struct.fields)
    }
    return decoded, secret_paths


def _decode_value(value: struct_pb2.Value, path: str, secret_paths: list[str]) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        # Numbers cross the wire as doubles; give integral ones back as int so manifests read right.
        if number.is_integer() and abs(number) <= _MAX_EXACT_DOUBLE:
            return int(number)
        return number
    if kind == "string_value":
        return UNKNOWN if value.string_value == UNKNOWN_WIRE else value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "list_value":
        return [
            _decode_value(item, _path_index(path, index), secret_paths)
            for index, item in enumerate(value.list_value.values)
        ]
    if kind == "struct_value":
        return _decode_object(value.struct_value, path, secret_paths)
    return None  # null_value, or an unset Value


def _decode_object(struct: struct_pb2.Struct, path: str, secret_paths: list[str]) -> Any:
    fields = struct.fields
    signature = fields[wire.SIG_KEY].string_value if wire.SIG_KEY in fields else None
    if signature == wire.SECRET_SIG:
        secret_paths.append(path)
        return _decode_value(fields["value"], path, secret_paths) if "value" in fields else None
    if signature == wire.RESOURCE_SIG:
        reference = ResourceRef(urn=fields["urn"].string_value)
        if "id" in fields:
            resource_id = _decode_value(fields["id"], path, secret_paths)
            reference["id"] = resource_id if isinstance(resource_id, str) else ""
        return reference
    if signature == wire.OUTPUT_VALUE_SIG:  # only sent when the monitor supports outputValues (ours does not)
        if "secret" in fields and fields["secret"].bool_value:
            secret_paths.append(path)
        return _decode_value(fields["value"], path, secret_paths) if "value" in fields else UNKNOWN
    # Plain objects; assets/archives keep their signature key, so they re-encode unchanged.
    return {key: _decode_value(fields[key], _path_key(path, key), secret_paths) for key in sorted(fields)}


def encode_struct(values: Mapping[str, Any], secret_paths: Collection[str] = ()) -> struct_pb2.Struct:
    """Encode plain Python (as `decode_struct` returns it) for the program; values at `secret_paths`
    are wrapped as secrets again."""
    struct = struct_pb2.Struct()
    struct.update(
        {str(key): _to_wire(value, _path_key("", str(key)), secret_paths) for key, value in values.items()}
    )
    return struct


def _to_wire(value: Any, path: str, secret_paths: Collection[str]) -> Any:
    encoded: Any
    if isinstance(value, _Unknown):
        encoded = UNKNOWN_WIRE
    elif isinstance(value, ResourceRef):
        encoded = {wire.SIG_KEY: wire.RESOURCE_SIG, **value}
    elif isinstance(value, Mapping):
        encoded = {str(k): _to_wire(v, _path_key(path, str(k)), secret_paths) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        encoded = [_to_wire(item, _path_index(path, index), secret_paths) for index, item in enumerate(value)]
    elif value is None or isinstance(value, (bool, int, float, str)):
        encoded = value
    else:
        raise TypeError(
            f"cannot send {type(value).__name__} at {path or '<root>'!r} to the program: "
            "mocks must return JSON-like values (dict, list, str, int, float, bool, None, UNKNOWN, ResourceRef)"
        )
    if path in secret_paths:
        return wire.secret(encoded)
    return encoded


# --------------------------------------------------------------------------------------------------
# Mocks


ExtraOutputs = Mapping[str, Any] | Callable[[MockResourceArgs], Mapping[str, Any]]
InvokeHandler = Callable[[dict[str, Any]], Mapping[str, Any]]

_NOT_AUTONAMED_KINDS_SUFFIX: Final = "List"


def _auto_name_suffix(type_: str, name: str) -> str:
    # pulumi-kubernetes appends random characters; a hash keeps runs reproducible.
    return hashlib.sha256(f"{type_}::{name}".encode()).hexdigest()[:8]


class Mocks(pulumi.runtime.Mocks):
    """Echo mocks: outputs = inputs, id "<name>_id" for custom resources.

    * `outputs_by_type`: extra outputs per type token, a dict or a callable(MockResourceArgs) -> dict,
      merged over the echoed inputs (e.g. a Helm Release's `status`).
    * `invoke_handlers`: token -> callable(args) -> result. Unhandled invokes return {} (and
      `{"result": []}` for `kubernetes:helm:template`, so Helm v3 `Chart`s render no children).
    * Kubernetes objects without `metadata.name` get one in their outputs, as pulumi-kubernetes'
      Check() would do (`<name>-<8 hex>`, deterministic); so does a Helm v3 Release's `name`.
    * `echo_inputs=False` returns only the extras: in a preview every other output is then unknown.

    Inputs reach these mocks in the recorder's decoded form: secrets unwrapped, `UNKNOWN` for
    unknowns, `ResourceRef` for resource references.
    """

    def __init__(
        self,
        *,
        outputs_by_type: Mapping[str, ExtraOutputs] | None = None,
        invoke_handlers: Mapping[str, InvokeHandler] | None = None,
        echo_inputs: bool = True,
    ) -> None:
        self.outputs_by_type: dict[str, ExtraOutputs] = dict(outputs_by_type or {})
        self.invoke_handlers: dict[str, InvokeHandler] = dict(invoke_handlers or {})
        self.echo_inputs = echo_inputs

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        outputs: dict[str, Any] = copy.deepcopy(dict(args.inputs)) if self.echo_inputs else {}
        if self.echo_inputs and args.custom:
            if args.resource_id:
                self._read_identity(args, outputs)
            self._auto_name(args, outputs)
        extra = self.outputs_by_type.get(args.typ)
        if extra is not None:
            outputs.update(copy.deepcopy(dict(extra(args) if callable(extra) else extra)))
        if args.resource_id:  # reads (`.get`) and imports keep the id they were given
            return args.resource_id, outputs
        return (f"{args.name}_id" if args.custom else None), outputs

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        handler = self.invoke_handlers.get(args.token)
        if handler is not None:
            return dict(handler(dict(args.args))), None
        if args.token == "kubernetes:helm:template":
            return {"result": []}, None
        return {}, None

    @staticmethod
    def _read_identity(args: MockResourceArgs, outputs: dict[str, Any]) -> None:
        # `ConfigMap.get("x", "ns/name")` sends no properties; a real Read returns the object, so at
        # least give it its apiVersion/kind/metadata from the type token and the id.
        package, _, rest = args.typ.partition(":")
        module, _, kind = rest.partition(":")
        if package != "kubernetes" or "/" not in module or not kind or not args.resource_id:
            return
        outputs.setdefault("apiVersion", module.removeprefix("core/"))
        outputs.setdefault("kind", kind)
        namespace, _, name = args.resource_id.rpartition("/")
        metadata = outputs.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.setdefault("name", name)
            if namespace:
                metadata.setdefault("namespace", namespace)

    @staticmethod
    def _auto_name(args: MockResourceArgs, outputs: dict[str, Any]) -> None:
        if not args.typ.startswith("kubernetes:"):
            return
        if args.typ == HELM_RELEASE:
            if not outputs.get("name"):
                outputs["name"] = f"{args.name}-{_auto_name_suffix(args.typ, args.name)}"
            return
        kind = outputs.get("kind")
        if (
            not isinstance(kind, str)
            or "apiVersion" not in outputs
            or kind.endswith(_NOT_AUTONAMED_KINDS_SUFFIX)
        ):
            return
        metadata = outputs.setdefault("metadata", {})
        if isinstance(metadata, dict) and not metadata.get("name"):
            prefix = metadata.get("generateName") or f"{args.name}-"
            metadata["name"] = f"{prefix}{_auto_name_suffix(args.typ, args.name)}"


# --------------------------------------------------------------------------------------------------
# Recording monitor and engine


class RecordingMonitor(MockMonitor):
    """A `MockMonitor` that records every request and answers with engine-style URNs.

    It never calls `rpc.deserialize_properties`/`serialize_properties` (no event loop needed in
    the RPC path); the wire Structs are decoded and encoded by `decode_struct`/`encode_struct`.
    """

    def __init__(self, mocks: pulumi.runtime.Mocks, *, project: str, stack: str) -> None:
        super().__init__(mocks)
        self.project = project
        self.stack = stack
        self._lock = threading.Lock()
        self._registrations: list[RecordedResource] = []
        self._by_urn: dict[str, RecordedResource] = {}
        self._registered_outputs: dict[str, dict[str, Any]] = {}
        self._invokes: list[tuple[str, dict[str, Any]]] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(self.stack, self.project, parent, type_, name)

    @property
    def stack_urn(self) -> str:
        return engine_urn(self.stack, self.project, None, STACK_TYPE, f"{self.project}-{self.stack}")

    def _record(self, resource: RecordedResource) -> None:
        with self._lock:
            self._registrations.append(resource)
            self._by_urn[resource.urn] = resource
            # MockMonitor's own registry backs ExistsResource and get_registered_resources().
            self.resources[resource.urn] = MockMonitor.ResourceRegistration(
                resource.urn, resource.id or "", resource.outputs
            )

    def RegisterResource(self, request: resource_pb2.RegisterResourceRequest) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        inputs, secret_paths = decode_struct(request.object)
        resource_id: str | None = None
        outputs: dict[str, Any] = {}
        response = resource_pb2.RegisterResourceResponse(urn=urn)
        if request.type != STACK_TYPE:  # the root stack gets its outputs from register_outputs
            resource_id, state = self.mocks.new_resource(
                MockResourceArgs(
                    typ=request.type,
                    name=request.name,
                    inputs=copy.deepcopy(inputs),
                    provider=request.provider,
                    resource_id=request.importId,
                    custom=request.custom,
                    transforms=_resolve_callbacks(request.transforms),
                )
            )
            # Like the engine: outputs at secret input paths and additionalSecretOutputs stay secret.
            secret_outputs = {
                *secret_paths,
                *(_path_key("", name) for name in request.additionalSecretOutputs),
            }
            response_object = encode_struct(state, secret_outputs)
            # Record what the program receives (sorted keys, ints), not the mock's own objects.
            outputs, _ = decode_struct(response_object)
            response = resource_pb2.RegisterResourceResponse(
                urn=urn, id=resource_id or "", object=response_object
            )
        self._record(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=urn,
                parent=request.parent or None,
                custom=request.custom,
                remote=request.remote,
                provider=request.provider or None,
                inputs=inputs,
                outputs=outputs,
                # The SDK builds these from sets (hash order varies); the engine treats them as sets too.
                dependencies=sorted(set(request.dependencies)),
                property_dependencies={
                    key: sorted(set(request.propertyDependencies[key].urns))
                    for key in sorted(request.propertyDependencies)
                },
                protect=bool(request.protect),
                ignore_changes=list(request.ignoreChanges),
                delete_before_replace=request.deleteBeforeReplace,
                additional_secret_outputs=list(request.additionalSecretOutputs),
                secret_input_paths=secret_paths,
                id=resource_id or None,
                replace_on_changes=list(request.replaceOnChanges),
            )
        )
        return response

    def ReadResource(self, request: resource_pb2.ReadResourceRequest) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        inputs, secret_paths = decode_struct(request.properties)
        resource_id, state = self.mocks.new_resource(
            MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=copy.deepcopy(inputs),
                provider=request.provider,
                resource_id=request.id,
                custom=True,
            )
        )
        read = RecordedResource(
            type=request.type,
            name=request.name,
            urn=urn,
            parent=request.parent or None,
            custom=True,
            remote=False,
            provider=request.provider or None,
            inputs=inputs,
            outputs=decode_struct(encode_struct(state, secret_paths))[0],
            dependencies=sorted(set(request.dependencies)),
            property_dependencies={},
            protect=False,
            ignore_changes=[],
            delete_before_replace=False,
            additional_secret_outputs=list(request.additionalSecretOutputs),
            secret_input_paths=secret_paths,
            id=resource_id or request.id or None,
            external=True,
        )
        self._record(read)
        return resource_pb2.ReadResourceResponse(
            urn=urn, properties=encode_struct(read.outputs, secret_paths)
        )

    def Invoke(self, request: resource_pb2.ResourceInvokeRequest) -> Any:
        args, _ = decode_struct(request.args)
        with self._lock:
            self._invokes.append((request.tok, copy.deepcopy(args)))
        if request.tok == "pulumi:pulumi:getResource":
            # Used by the SDK to rehydrate a resource reference (`opts.urn`).
            with self._lock:
                found = self._by_urn.get(str(args.get("urn")))
            if found is None:
                raise KeyError(f"unknown resource {args.get('urn')}")
            result: Mapping[str, Any] = {"urn": found.urn, "id": found.id or "", "state": found.outputs}
            failures: list[tuple[str, str]] | None = None
        else:
            answer = self.mocks.call(
                MockCallArgs(token=request.tok, args=copy.deepcopy(args), provider=request.provider)
            )
            if isinstance(answer, dict):
                result, failures = answer, None
            else:
                result, failures = answer
        return resource_pb2.ResourceInvokeResponse(
            **{
                "return": encode_struct(result),
                "failures": [
                    provider_pb2.CheckFailure(property=prop, reason=reason) for prop, reason in failures or []
                ],
            }
        )

    def RegisterResourceOutputs(self, request: resource_pb2.RegisterResourceOutputsRequest) -> Any:
        outputs, _ = decode_struct(request.outputs)
        with self._lock:
            self._registered_outputs[request.urn] = outputs
        return empty_pb2.Empty()

    def program_run(self, logs: Sequence[tuple[str, str]] = ()) -> ProgramRun:
        """Freeze what was recorded into a `ProgramRun`."""
        with self._lock:
            registered = copy.deepcopy(self._registered_outputs)
            registrations = list(self._registrations)
            invokes = list(self._invokes)
        stack_outputs = registered.pop(self.stack_urn, {})
        resources = []
        for item in registrations:
            if item.type == STACK_TYPE:
                item = dataclasses.replace(item, outputs=copy.deepcopy(stack_outputs))
            elif not item.custom and item.urn in registered:
                # The engine stores a component's register_outputs payload as its outputs.
                item = dataclasses.replace(
                    item, outputs={**item.outputs, **copy.deepcopy(registered[item.urn])}
                )
            resources.append(item)
        return ProgramRun(
            resources=resources,
            stack_outputs=stack_outputs,
            component_outputs=registered,
            invokes=invokes,
            logs=list(logs),
        )


class _RecordingEngine:
    """The `pulumirpc.Engine` side the SDK calls: log messages, version checks."""

    _LEVELS: Final = {
        engine_pb2.DEBUG: logging.DEBUG,
        engine_pb2.INFO: logging.INFO,
        engine_pb2.WARNING: logging.WARNING,
        engine_pb2.ERROR: logging.ERROR,
    }

    def __init__(self) -> None:
        self.logs: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def Log(self, request: engine_pb2.LogRequest) -> empty_pb2.Empty:
        level = self._LEVELS.get(request.severity, logging.INFO)
        if level > logging.DEBUG:  # the SDK's own debug chatter is not worth keeping
            with self._lock:
                self.logs.append((logging.getLevelName(level).lower(), request.message))
        if _LOG.isEnabledFor(level):
            _LOG.log(level, "%s", request.message)
        return empty_pb2.Empty()

    def RequirePulumiVersion(self, request: engine_pb2.RequirePulumiVersionRequest) -> empty_pb2.Empty:
        return empty_pb2.Empty()  # there is no CLI whose version could be too old


# --------------------------------------------------------------------------------------------------
# Running a program


class _InlineExecutor(ThreadPoolExecutor):
    """Runs each submitted call at once, on the event-loop thread.

    The SDK sends every monitor RPC through `loop.run_in_executor(None, ...)`. With a thread pool
    the RPCs race, so registration order (e.g. a component's children vs. a resource waiting on the
    provider) varied between runs; inline calls make it a function of the program alone. It also
    leaves no worker threads or per-thread event loops behind ("Invalid file descriptor: -1").
    """

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # delivered to the awaiting coroutine, like a pool would
            future.set_exception(error)
        return future


@dataclass
class _RunState:
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None
    error: BaseException | None = None


_RUN_LOCK = threading.Lock()  # cwd, sys.modules and os.environ are process-wide
_CANCEL_GRACE_SECONDS: Final = 2.0
_DEFAULT_ATTR: Final = "_ContextProperty__default"


def run_program(
    program_dir: Path,
    *,
    stack: str,
    config: Mapping[str, str],
    secret_keys: Sequence[str] = (),
    project: str | None = None,
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    organization: str = "organization",
    timeout: float = 120.0,
) -> ProgramRun:
    """Run the Pulumi program in `program_dir` against a `RecordingMonitor` and return what it saw.

    `config` keys without a namespace get the project's (`name:` in Pulumi.yaml unless `project`
    is given); values are strings as in `PULUMI_CONFIG` (dicts/lists/bools/numbers are JSON-encoded
    like the CLI does). Exceptions raised by the program propagate unchanged; a run that takes longer
    than `timeout` seconds raises `TimeoutError`.
    """
    program_dir = Path(program_dir).resolve()
    if not (program_dir / "__main__.py").is_file():
        raise FileNotFoundError(f"{program_dir}: no __main__.py (run_program runs a program directory)")
    project_name = project or read_project_name(program_dir)
    full_config, full_secret_keys = _namespaced_config(config, secret_keys, project_name)
    with _RUN_LOCK, _program_environment(program_dir, full_config, full_secret_keys):
        return _execute(
            lambda: runpy.run_path(str(program_dir), run_name="__main__"),
            project=project_name,
            stack=stack,
            config=full_config,
            secret_keys=full_secret_keys,
            preview=preview,
            mocks=mocks,
            organization=organization,
            root_directory=program_dir,
            timeout=timeout,
        )


def run_function(
    body: Callable[[], Any],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
    preview: bool = False,
    mocks: pulumi.runtime.Mocks | None = None,
    organization: str = "organization",
    timeout: float = 60.0,
) -> ProgramRun:
    """Run `body` as if it were a program's `__main__` (inside a root Stack, under the recording
    monitor): for testing one component in isolation without a program directory."""
    full_config, full_secret_keys = _namespaced_config(config or {}, secret_keys, project)
    with _RUN_LOCK:
        return _execute(
            body,
            project=project,
            stack=stack,
            config=full_config,
            secret_keys=full_secret_keys,
            preview=preview,
            mocks=mocks,
            organization=organization,
            root_directory=Path.cwd(),
            timeout=timeout,
        )


def _namespaced_config(
    config: Mapping[str, Any], secret_keys: Sequence[str], project: str
) -> tuple[dict[str, str], list[str]]:
    """Config and secret keys as the language host gets them: `namespace:key`, values as strings."""
    config_strings = {_namespaced_key(key, project): _config_string(value) for key, value in config.items()}
    return config_strings, sorted({_namespaced_key(key, project) for key in secret_keys})


def _execute(
    body: Callable[[], Any],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: Sequence[str],
    preview: bool,
    mocks: pulumi.runtime.Mocks | None,
    organization: str,
    root_directory: Path,
    timeout: float,
) -> ProgramRun:
    monitor = RecordingMonitor(mocks if mocks is not None else Mocks(), project=project, stack=stack)
    engine = _RecordingEngine()

    def configure_and_run(state: _RunState) -> None:
        # Runs inside a copied context: everything below is ContextVar state of the SDK.
        pulumi_settings.ROOT.set(None)  # otherwise a leftover root Stack would parent everything
        set_all_config(dict(config), list(secret_keys))
        # Constructing Settings *is* the configuration: its attributes are ContextVar descriptors.
        pulumi_settings.Settings(
            project=project,
            stack=stack,
            monitor=monitor,
            engine=engine,
            dry_run=preview,
            organization=organization,
            root_directory=str(root_directory),
        )
        _run_on_fresh_loop(body, state)

    _run_in_thread(configure_and_run, timeout)
    return monitor.program_run(engine.logs)


def _run_on_fresh_loop(program: Callable[[], Any], state: _RunState) -> None:
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_InlineExecutor())
    asyncio.set_event_loop(loop)  # this thread only: it exists for this run
    state.loop = loop
    try:
        state.task = loop.create_task(run_in_stack(program))
        loop.run_until_complete(state.task)
    finally:
        try:
            _cancel_pending_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_pending_tasks(loop: asyncio.AbstractEventLoop) -> None:
    # Outputs of a failed program may never resolve; cancel them like asyncio.run() does.
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _run_in_thread(body: Callable[[_RunState], None], timeout: float) -> None:
    """Run `body` in a copy of the caller's context on a worker thread, bounded by `timeout`.

    A thread (not the caller's) so that a hang can be turned into TimeoutError, the caller may
    itself be inside an event loop, and the caller's thread-local event loop is never touched.
    """
    state = _RunState()
    context = contextvars.copy_context()
    saved_defaults = _context_property_defaults()

    def work() -> None:
        try:
            context.run(body, state)
        except BaseException as error:  # handed to the caller's thread
            state.error = error

    worker = threading.Thread(target=work, name="pulumi-offline-program", daemon=True)
    worker.start()
    try:
        worker.join(timeout)
        if worker.is_alive():
            _request_cancel(state)
            worker.join(_CANCEL_GRACE_SECONDS)
            still = " and its thread is still running (abandoned)" if worker.is_alive() else ""
            raise TimeoutError(f"the Pulumi program did not finish within {timeout:g}s{still}")
    finally:
        _restore_context_property_defaults(saved_defaults)
    if state.error is not None:
        raise state.error


def _request_cancel(state: _RunState) -> None:
    loop, task = state.loop, state.task
    if loop is None or task is None:
        return
    with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
        loop.call_soon_threadsafe(task.cancel)


def _context_property_defaults() -> dict[str, tuple[object, Any]]:
    """The fallback values of the SDK's `ContextProperty` descriptors.

    `ContextProperty.fset` overwrites its process-wide fallback whenever the current value is None,
    so configuring a run would leak its monitor/dry_run to every thread that has no value of its
    own. These are saved before and restored after each run.
    """
    saved: dict[str, tuple[object, Any]] = {}
    for klass in type(pulumi_settings.SETTINGS).__mro__:
        for attribute, descriptor in vars(klass).items():
            if hasattr(descriptor, _DEFAULT_ATTR):
                saved.setdefault(attribute, (descriptor, getattr(descriptor, _DEFAULT_ATTR)))
    return saved


def _restore_context_property_defaults(saved: Mapping[str, tuple[object, Any]]) -> None:
    for descriptor, default in saved.values():
        setattr(descriptor, _DEFAULT_ATTR, default)


def _is_config_variable(name: str) -> bool:
    # PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS and PULUMI_CONFIG_<KEY>; not the CLI's passphrase.
    return (name == "PULUMI_CONFIG" or name.startswith("PULUMI_CONFIG_")) and not name.startswith(
        "PULUMI_CONFIG_PASSPHRASE"
    )


@contextlib.contextmanager
def _program_environment(
    program_dir: Path, config: Mapping[str, str], secret_keys: Sequence[str]
) -> Iterator[None]:
    """What a fresh language-host process would give the program, undone afterwards: cwd = the
    project directory, `PULUMI_CONFIG*` = this run's config only, its own modules imported afresh."""
    previous_cwd = os.getcwd()
    previous_path = list(sys.path)
    shadowing = _pop_shadowing_modules(program_dir)
    modules_before = set(sys.modules)
    saved_env = {name: value for name, value in os.environ.items() if _is_config_variable(name)}
    for name in saved_env:
        del os.environ[name]
    # The language host passes the config in the environment too; get_config falls back to it.
    os.environ["PULUMI_CONFIG"] = json.dumps(dict(config))
    os.environ["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(secret_keys))
    os.chdir(program_dir)
    try:
        yield
    finally:
        os.chdir(previous_cwd)
        sys.path[:] = previous_path
        for name in [name for name in os.environ if _is_config_variable(name)]:
            del os.environ[name]
        os.environ.update(saved_env)
        _drop_program_modules(set(sys.modules) - modules_before, program_dir)
        sys.modules.update(shadowing)


def _drop_program_modules(names: Collection[str], program_dir: Path) -> None:
    for name in sorted(names, reverse=True):  # submodules before their packages
        module = sys.modules.get(name)
        if module is None or not _is_program_module(name, module, program_dir):
            continue
        del sys.modules[name]
        # A package that stays cached would still hand out the stale submodule as an attribute.
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        if parent is not None and getattr(parent, child, None) is module:
            delattr(parent, child)


def _program_top_level_names(program_dir: Path) -> set[str]:
    names = set()
    for entry in program_dir.iterdir():
        if entry.suffix == ".py" and entry.stem != "__main__" and entry.stem.isidentifier():
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and any(entry.glob("*.py")):
            names.add(entry.name)
    return names


def _pop_shadowing_modules(program_dir: Path) -> dict[str, types.ModuleType]:
    """Remove cached modules that share a top-level name with the program's own modules but come
    from elsewhere (say the caller's `components` package), so the program imports its own; they are
    put back after the run."""
    names = _program_top_level_names(program_dir)
    popped: dict[str, types.ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in names and not _is_program_module(name, module, program_dir):
            popped[name] = sys.modules.pop(name)
    return popped


def _is_program_module(name: str, module: types.ModuleType, program_dir: Path) -> bool:
    """Was `module` imported through the program directory's own sys.path entry?

    Being somewhere below the directory is not enough: a project's `venv/.../site-packages` is
    below it too, and dropping (then re-importing) pulumi_kubernetes breaks its one-time package
    registration ("Cannot re-register package kubernetes@...").
    """
    top = name.partition(".")[0]
    locations = (
        [module.__file__] if getattr(module, "__file__", None) else list(getattr(module, "__path__", []))
    )
    root = str(program_dir)
    for location in locations:
        if not isinstance(location, str):
            continue
        relative = os.path.relpath(os.path.realpath(location), root)
        if relative.split(os.sep, 1)[0] in (top, f"{top}.py"):
            return True
    return False


# --------------------------------------------------------------------------------------------------
# Project and stack files


def _find_project_file(program_dir: Path) -> Path:
    for candidate in ("Pulumi.yaml", "Pulumi.yml"):
        if (program_dir / candidate).is_file():
            return program_dir / candidate
    raise FileNotFoundError(f"{program_dir}: no Pulumi.yaml")


def _read_project(program_dir: Path) -> tuple[dict[str, Any], Path]:
    path = _find_project_file(Path(program_dir))
    document = _load_yaml_file(path)
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}: missing project `name`")
    return document, path


def read_project_name(program_dir: Path) -> str:
    """`name:` from the program's Pulumi.yaml."""
    document, _ = _read_project(program_dir)
    return str(document["name"])


def load_stack_config(program_dir: Path, stack: str) -> tuple[dict[str, str], list[str]]:
    """Read `Pulumi.<stack>.yaml` like the CLI builds `PULUMI_CONFIG`: (config, secret keys).

    Keys without a namespace get the project's; maps/lists become compact JSON (sorted keys, as Go's
    json.Marshal); scalars become strings (`true`/`false`, `2`, ...); `{secure: ...}` values become
    `SECRET_PLACEHOLDER` and their keys are listed as secret. Project-level `config:` values and
    defaults from Pulumi.yaml fill keys the stack file does not set. Values are not validated.
    """
    program_dir = Path(program_dir)
    project_doc, _ = _read_project(program_dir)
    project_name = str(project_doc["name"])
    stack_file = _stack_file(program_dir, project_doc, stack)
    document = _load_yaml_file(stack_file)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ValueError(f"{stack_file}: expected a mapping at the top level")
    section = document.get("config") or {}
    if not isinstance(section, dict):
        raise ValueError(f"{stack_file}: `config` must be a mapping")

    values: dict[str, str] = {}
    secret_keys: set[str] = set()
    for key, raw in section.items():
        full_key = _namespaced_key(str(key), project_name)
        values[full_key], is_secret = _config_value(raw)
        if is_secret:
            secret_keys.add(full_key)

    project_section = project_doc.get("config")
    if isinstance(project_section, dict):  # a string here is the legacy stack-config directory
        for key, declaration in project_section.items():
            full_key = _namespaced_key(str(key), project_name)
            if full_key in values:
                continue
            if isinstance(declaration, dict):
                if "value" in declaration:
                    raw = declaration["value"]
                elif "default" in declaration:
                    raw = declaration["default"]
                else:
                    continue
            else:  # short-hand: a bare value
                raw = declaration
            values[full_key], is_secret = _config_value(raw)
            if is_secret:
                secret_keys.add(full_key)
    return values, sorted(secret_keys)


def _stack_file(program_dir: Path, project_doc: Mapping[str, Any], stack: str) -> Path:
    directory = project_doc.get("stackConfigDir")
    if directory is None and isinstance(project_doc.get("config"), str):
        directory = project_doc["config"]
    base = program_dir / str(directory) if directory else program_dir
    candidates = [base / f"Pulumi.{stack}.yaml", base / f"Pulumi.{stack}.yml"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"stack config file not found: {candidates[0]}")


def _namespaced_key(key: str, project: str) -> str:
    parts = key.split(":")
    if len(parts) == 3 and parts[1] == "config":  # legacy `<ns>:config:<name>`
        return f"{parts[0]}:{parts[2]}"
    return key if ":" in key else f"{project}:{key}"


def _is_secure(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def _config_value(raw: object) -> tuple[str, bool]:
    """One stack-file value -> (the string the program sees, is it secret)."""
    if _is_secure(raw):
        return SECRET_PLACEHOLDER, True
    if isinstance(raw, (dict, list)):
        found_secret = False

        def hide_secrets(value: Any) -> Any:
            nonlocal found_secret
            if _is_secure(value):
                found_secret = True
                return SECRET_PLACEHOLDER
            if isinstance(value, dict):
                return {str(key): hide_secrets(item) for key, item in value.items()}
            if isinstance(value, list):
                return [hide_secrets(item) for item in value]
            return value

        return _go_json(hide_secrets(raw)), found_secret
    return _config_string(raw), False


def _config_string(value: object) -> str:
    """A config value as the string the CLI would put in PULUMI_CONFIG."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float, dict, list, tuple)):
        return _go_json(value)
    return str(value)


def _go_json(value: Any) -> str:
    """Go's json.Marshal of a decoded YAML value: compact, sorted keys, HTML-safe, Go number format."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escape in _GO_JSON_ESCAPES:
            text = text.replace(char, escape)
        return text
    if isinstance(value, dict):
        items = sorted((str(key), item) for key, item in value.items())
        return "{" + ",".join(f"{_go_json(key)}:{_go_json(item)}" for key, item in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_go_json(item) for item in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as a config value")


_GO_JSON_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _go_float(number: float) -> str:
    # encoding/json: shortest digits, plain notation for 1e-6 <= |x| < 1e21, else e-notation "1e-7".
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"config value {number!r} cannot be represented in JSON")
    magnitude = abs(number)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        if number.is_integer():
            return str(int(number))
        return format(Decimal(repr(number)), "f")
    return re.sub(r"e([-+])0(\d)$", r"e\1\2", repr(number))


def _load_yaml_file(path: Path) -> Any:
    text = path.read_text(encoding="utf-8-sig")  # the CLI strips a UTF-8 BOM too
    try:
        return load_cli_yaml(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: invalid YAML: {error}") from error
