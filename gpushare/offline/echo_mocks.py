"""The generic mocks a recorded run answers with (`Mocks`): resources echo their inputs, Kubernetes objects
get deterministic auto-names, invokes go to handlers. gpushare's own choice of mocks is in
`gpushare.offline.program_mocks`.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Final

import pulumi
from pulumi.runtime.mocks import MockCallArgs, MockResourceArgs

from gpushare.resource_types import HELM_RELEASE

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
