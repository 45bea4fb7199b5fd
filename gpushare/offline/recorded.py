"""What a recorded run holds: `ProgramRun` and its `RecordedResource`s, the `UNKNOWN` value and `ResourceRef`
that decoded wire values contain, and engine-style URNs (`engine_urn`, `urn_qualified_type`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

STACK_TYPE: Final = "pulumi:pulumi:Stack"


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
    delete_before_replace: bool | None
    """The `delete_before_replace` option; None when the program left it unset, so that the provider's
    own answer (and then Pulumi's create-first default) decides."""
    additional_secret_outputs: list[str]
    secret_input_paths: list[str]
    """Property paths (engine syntax: `stringData.token`, `data["a.b"]`, `items[0]`) that were secret."""
    id: str | None = None
    external: bool = False
    """True for `Resource.get(...)` reads (ReadResource) rather than registrations."""
    replace_on_changes: list[str] = field(default_factory=list)
    """Property paths whose change makes the engine plan a replacement (`replace_on_changes`)."""
    version: str = ""
    """The provider package's version the resource asks for (the typed SDK classes send their own); "" if
    none. The engine uses it to pick or install the provider plugin."""
    plugin_download_url: str = ""
    """Where the engine may download that provider plugin from (`pluginDownloadURL`); "" if not given."""
    aliases: list[dict[str, Any]] = field(default_factory=list)
    """Former identities the engine matches against the state: `{"spec": {"type": ...}}` (alias specs) or
    `{"urn": ...}`, as the request carries them."""
    retain_on_delete: bool = False
    """The `retain_on_delete` option: deleting the resource in Pulumi leaves the object as it is (never set
    on a read: ReadResource carries no such option)."""


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
