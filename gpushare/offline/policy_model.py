"""What goes into and comes out of a policy-pack run, independent of how it is run: the resources as the
engine shows them to a pack (`AnalyzedResource`, `ProviderInfo`), the pack's answers (`Diagnostic`,
`NotApplicable`, `Remediation`, `PolicyInfo`, `PackReport`), a reconciled config entry, the driver's errors,
and the root stack's URN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

ENFORCEMENT_LEVELS: Final = ("advisory", "mandatory", "remediate", "disabled")
SDK_PACK_VERSION: Final = "0.0.1"  # what the Python SDK always reports; PulumiPolicy.yaml wins


# --------------------------------------------------------------------------------------------------
# Errors


class PolicyDriverError(Exception):
    """Base class for everything the policy driver raises about a pack or its configuration."""


class PolicyPackStartError(PolicyDriverError):
    """The pack could not be started, or exited or misbehaved before it printed its port."""

    def __init__(self, message: str, *, stderr: str = "") -> None:
        self.message = message
        self.stderr = stderr
        super().__init__(_with_stderr(message, stderr))


class PolicyConfigError(PolicyDriverError):
    """The policy config is malformed or does not validate against a policy's config schema.

    Raised before any resource is analyzed, as the CLI aborts with "validating policy config".
    """

    def __init__(self, message: str, *, errors: Sequence[str] = ()) -> None:
        self.message = message
        self.errors = list(errors)
        super().__init__(message)


class UnreadablePolicyConfigError(PolicyConfigError):
    """The policy config file cannot be read at all (missing, a FIFO, too big, not text): its content was
    never judged, so the CLI exits 2 as for every unreadable input."""


class PolicyPackRpcError(PolicyDriverError):
    """An Analyzer RPC failed (for example a policy raised): the engine would fail the preview."""

    def __init__(self, rpc: str, code: str, details: str, *, stderr: str = "") -> None:
        self.rpc = rpc
        self.code = code
        self.details = details
        self.stderr = stderr
        super().__init__(_with_stderr(f"policy pack RPC {rpc} failed ({code}): {details}", stderr))


def _with_stderr(message: str, stderr: str) -> str:
    text = stderr.strip()
    return f"{message}\n--- policy pack stderr ---\n{text}" if text else message


# --------------------------------------------------------------------------------------------------
# What goes in and what comes out


@dataclass(frozen=True)
class ProviderInfo:
    """The provider resource of an analyzed resource (`AnalyzerProviderResource`)."""

    type: str
    urn: str
    name: str
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalyzedResource:
    """One resource as the engine sends it. Property names are the engine's camelCase names.

    `properties` are the inputs (what `Analyze` sees); `outputs`, when given, are what
    `AnalyzeStack` sees, as the engine sends outputs there. Use `UNKNOWN` and `secret()` for
    computed and secret values.
    """

    type: str
    name: str
    urn: str
    properties: Mapping[str, Any]
    parent: str | None = None
    protect: bool = False
    dependencies: Sequence[str] = ()
    provider: ProviderInfo | None = None
    outputs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One policy violation, attributed to a URN the way the engine attributes it."""

    policy_name: str
    policy_pack_name: str
    description: str
    message: str
    enforcement_level: str  # "advisory" | "mandatory" | "remediate" | "disabled"
    urn: str
    severity: str  # "" (unspecified) | "low" | "medium" | "high" | "critical"
    policy_pack_version: str = ""

    @property
    def resource_type(self) -> str:
        return _split_urn(self.urn)[0]

    @property
    def resource_name(self) -> str:
        return _split_urn(self.urn)[1]


@dataclass(frozen=True)
class NotApplicable:
    """A policy that declared itself not applicable to a resource (or to the stack)."""

    policy_name: str
    reason: str
    urn: str


@dataclass(frozen=True)
class Remediation:
    """A remediation that rewrote a resource's inputs before `Analyze` saw them."""

    policy_name: str
    policy_pack_name: str
    description: str
    urn: str
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class PolicyInfo:
    """A policy of the pack. `enforcement_level` is the effective level after the policy config."""

    name: str
    description: str
    enforcement_level: str
    config_schema: dict[str, Any] | None  # {"properties": {...}, "required": [...]} or None
    policy_type: str = ""  # "resource" | "stack" | ""
    severity: str = ""
    display_name: str = ""


@dataclass(frozen=True)
class PackReport:
    """Everything one run of a pack produced."""

    pack_name: str
    policies: list[PolicyInfo]
    diagnostics: list[Diagnostic]
    not_applicable: list[NotApplicable]
    stderr: str
    pack_version: str = SDK_PACK_VERSION
    pack_path: str = ""
    remediations: list[Remediation] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)  # engine Log calls and stdout after the port line

    @property
    def mandatory(self) -> list[Diagnostic]:
        """The diagnostics that make `pulumi preview` fail."""
        return [d for d in self.diagnostics if d.enforcement_level == "mandatory"]

    @property
    def advisory(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.enforcement_level == "advisory"]


@dataclass(frozen=True)
class PolicyConfigEntry:
    """One reconciled entry of the `Configure` request (`plugin.AnalyzerPolicyConfig`)."""

    enforcement_level: str  # "" when nothing set one; the CLI's Configure rejects that
    properties: Mapping[str, Any] | None = None


def root_stack_urn(stack: str, project: str) -> str:
    """The URN of the root `pulumi:pulumi:Stack` resource (`resource.DefaultRootStackURN`)."""
    return f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"


def _split_urn(urn: str) -> tuple[str, str]:
    """(type, name) of a URN `urn:pulumi:stack::project::parent$type::name`, or ("", "")."""
    parts = urn.split("::")
    if not urn.startswith("urn:pulumi:") or len(parts) < 4:
        return "", ""
    return parts[2].split("$")[-1], "::".join(parts[3:])
