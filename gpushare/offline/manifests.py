"""Kubernetes objects out of a recorded program run: extraction, YAML that `kubectl apply -f` takes,
and strict validation against the cluster version's OpenAPI schema.

Validation uses the schemas bundled with kubernetes-validate (`v<version>-local-strict`: every object
has `additionalProperties: false`, so a misspelt field is an error, not silently dropped by the API
server). Whole objects are checked as `kubernetes_validate.validate(..., strict=True)` checks them, with the
validators built once per kind instead of once per object. Server-side-apply
patches are partial objects by design, so they are validated against the *same* strict schema with
every `required` keyword removed: unknown fields and wrong types still fail, missing fields do not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]  # no stubs installed
import kubernetes_validate
import yaml
from kubernetes_validate import utils as kubernetes_validate_utils
from referencing import Registry, Resource

from gpushare import resource_types
from gpushare.errors import ConfigError, GpushareError
from gpushare.offline.recorded import RecordedResource, is_unknown

__all__ = [
    "HELM_RELEASE_TYPE",
    "HELM_VALUES_SUFFIX",
    "HelmRelease",
    "Manifest",
    "ManifestSchemaError",
    "SchemaViolation",
    "dump_yaml",
    "extract_helm_releases",
    "extract_manifests",
    "has_schema",
    "manifest_file_name",
    "schema_version",
    "schema_violation",
    "to_plain",
    "validate_manifest",
    "validate_manifests",
]

HELM_RELEASE_TYPE: Final = resource_types.HELM_RELEASE
HELM_VALUES_SUFFIX: Final = ".values.yaml"
PATCH_SUFFIX: Final = "Patch"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
# `kubernetes:<group>/<version>:<Kind>` groups that are not API objects but client-side machinery.
_NOT_OBJECT_GROUPS: Final = frozenset({"helm.sh", "yaml", "kustomize"})
_K8S_TYPE: Final = re.compile(r"^kubernetes:(?P<group>[^/:]+)/(?P<version>[^/:]+):(?P<kind>[A-Za-z0-9]+)$")
_UNSAFE_FILE_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]")


class ManifestSchemaError(GpushareError):
    """One or more manifests do not validate against the cluster's Kubernetes schema."""

    def __init__(self, violations: Sequence[SchemaViolation], kubernetes_version: str) -> None:
        self.violations = tuple(violations)
        self.kubernetes_version = kubernetes_version
        count = len(self.violations)
        lines = [
            f"{count} manifest{' fails' if count == 1 else 's fail'} the Kubernetes {kubernetes_version} "
            "schema (strict: unknown fields are errors):",
            *(f"  {violation}" for violation in self.violations),
        ]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class SchemaViolation:
    file: str
    path: str
    """Field path in the object: `spec.template.spec.containers[0]`, or `(top level)`."""
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.message}"


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object as `kubectl apply -f` takes it (`document`), with where it came from."""

    resource: RecordedResource
    document: dict[str, Any]
    is_patch: bool

    @property
    def kind(self) -> str:
        return str(self.document["kind"])

    @property
    def name(self) -> str:
        return str(self.document.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str | None:
        namespace = self.document.get("metadata", {}).get("namespace")
        return str(namespace) if namespace else None

    @property
    def file_name(self) -> str:
        # The type token's kind keeps patches apart from full objects: `daemonsetpatch_...`.
        token_kind = _K8S_TYPE.match(self.resource.type)
        kind = token_kind["kind"] if token_kind else self.kind
        return manifest_file_name(kind, self.namespace, self.name, ".yaml")

    def header(self) -> str:
        # The first line says how to apply the file by hand (`pulumi up` applies everything).
        if self.is_patch:
            annotations = self.document.get("metadata", {}).get("annotations", {})
            flags = " --force-conflicts" if annotations.get(PATCH_FORCE_ANNOTATION) == "true" else ""
            # By hand as by Pulumi: the same field manager, so a later hand-back drops what this set.
            manager = annotations.get("pulumi.com/patchFieldManager")
            flags += f" --field-manager={manager}" if manager else ""
            lines = [f"# server-side apply patch: kubectl apply --server-side{flags} -f {self.file_name}"]
        else:
            lines = [f"# apply: kubectl apply --server-side -f {self.file_name}"]
        lines.append(f"# {self.resource.type} {self.resource.name} ({self.resource.urn})")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class HelmRelease:
    resource: RecordedResource
    name: str
    namespace: str | None
    chart: str
    repository: str | None
    version: str | None
    values: dict[str, Any]

    @property
    def file_name(self) -> str:
        return manifest_file_name("HelmRelease", self.namespace, self.name, HELM_VALUES_SUFFIX)

    def header(self) -> str:
        command = ["helm upgrade --install", self.name, self.chart]
        if self.repository:
            command.append(f"--repo {self.repository}")
        if self.version:
            command.append(f"--version {self.version}")
        if self.namespace:
            command.append(f"--namespace {self.namespace}")
        if self.resource.inputs.get("createNamespace") is True:
            command.append("--create-namespace")
        command.append(f"-f {self.file_name}")
        return (
            f"# apply: {' '.join(command)} (chart values, not an object)\n"
            f"# Helm release {self.name} ({self.resource.type} {self.resource.name})\n"
            f"# chart: {self.chart}\n"
            f"# repository: {self.repository or '-'}\n"
            f"# version: {self.version or '-'}\n"
            f"# namespace: {self.namespace or '-'}\n"
        )


def manifest_file_name(kind: str, namespace: str | None, name: str, suffix: str = ".yaml") -> str:
    """`<kind>_<namespace>_<name>.yaml` (no namespace part for cluster-scoped objects), file-name safe."""
    parts = [kind.lower(), *([namespace] if namespace else []), name or "unnamed"]
    return "_".join(_UNSAFE_FILE_CHARS.sub("-", part) for part in parts) + suffix


# --------------------------------------------------------------------------------------------------
# Extraction


def to_plain(value: Any) -> Any:
    """Recorded values as plain JSON/YAML types (UNKNOWN -> "<unknown>", ResourceRef -> dict)."""
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, str):
        return str(value)  # drops str subclasses such as UNKNOWN, which SafeDumper refuses
    return value


def _without_internal_keys(value: Any) -> Any:
    # pulumi-kubernetes keeps bookkeeping under `__`-prefixed keys; they are not part of the object.
    if isinstance(value, dict):
        return {key: _without_internal_keys(item) for key, item in value.items() if not key.startswith("__")}
    if isinstance(value, list):
        return [_without_internal_keys(item) for item in value]
    return value


def api_version_of(resource_type: str) -> tuple[str, str, bool] | None:
    """(apiVersion, kind, is_patch) of a `kubernetes:<group>/<version>:<Kind>` object type, else None."""
    match = _K8S_TYPE.match(resource_type)
    if match is None or match["group"] in _NOT_OBJECT_GROUPS:
        return None
    group, version, kind = match["group"], match["version"], match["kind"]
    is_patch = kind.endswith(PATCH_SUFFIX)
    api_version = version if group == "core" else f"{group}/{version}"
    return api_version, kind.removesuffix(PATCH_SUFFIX) if is_patch else kind, is_patch


def extract_manifests(resources: Iterable[RecordedResource]) -> list[Manifest]:
    """Every Kubernetes object the program registers (not providers, Helm or reads), in registration
    order, with `apiVersion`, `kind`, `metadata` first."""
    manifests = []
    for resource in resources:
        identity = api_version_of(resource.type)
        if identity is None or not resource.custom or resource.external:
            continue
        api_version, kind, is_patch = identity
        body = _without_internal_keys(to_plain(resource.inputs))
        body.pop("apiVersion", None)
        body.pop("kind", None)
        metadata = body.pop("metadata", {})
        if not metadata.get("name") and not is_patch:
            # Auto-named: the echo mocks give it the name pulumi-kubernetes' Check() would (see Mocks).
            generated = resource.outputs.get("metadata", {}).get("name")
            if isinstance(generated, str) and not is_unknown(generated):
                metadata = {**metadata, "name": generated}
        document = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}
        manifests.append(Manifest(resource=resource, document=document, is_patch=is_patch))
    return manifests


def extract_helm_releases(resources: Iterable[RecordedResource]) -> list[HelmRelease]:
    releases = []
    for resource in resources:
        if resource.type != HELM_RELEASE_TYPE or resource.external:
            continue
        inputs = to_plain(resource.inputs)
        # Without `name` the provider generates one; the echo mocks' output name stands in for it.
        name = inputs.get("name") or to_plain(resource.outputs).get("name") or resource.name
        repository = (inputs.get("repositoryOpts") or {}).get("repo")
        releases.append(
            HelmRelease(
                resource=resource,
                name=str(name),
                namespace=inputs.get("namespace"),
                chart=str(inputs.get("chart", "")),
                repository=repository,
                version=inputs.get("version"),
                values=inputs.get("values") or {},
            )
        )
    return releases


# --------------------------------------------------------------------------------------------------
# YAML


class _ReviewDumper(yaml.SafeDumper):
    """Block scalars (`|`) for multi-line strings, so embedded configs read as files, not "\\n" soup."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML quietly falls back to a quoted scalar when a block one cannot hold the text exactly.
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_ReviewDumper.add_representer(str, _represent_str)


def dump_yaml(document: Any) -> str:
    return yaml.dump(
        to_plain(document),
        Dumper=_ReviewDumper,
        sort_keys=False,  # callers order keys (apiVersion, kind, metadata first); the rest is sorted
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,  # never fold long values (annotations holding JSON) across lines
    )


# --------------------------------------------------------------------------------------------------
# Schema validation


def schema_version(kubernetes_version: str, *, source: str | None = None) -> str:
    """`1.30` -> `1.30.0`, the bundled schema set to validate against; a `ConfigError` naming the stack
    key if kubernetes-validate has none for that minor version (it would silently pick an older one)."""
    wanted = f"{kubernetes_version}.0" if kubernetes_version.count(".") == 1 else kubernetes_version
    available = kubernetes_validate_utils.all_versions()
    if wanted not in available:
        raise ConfigError(
            f"kubernetes-validate {kubernetes_validate.__version__} has no schema for Kubernetes "
            f"{kubernetes_version} (it has {_minor(available[0])} to {_minor(available[-1])}), "
            "so the manifests cannot be checked",
            source=source,
            key="gpushare:cluster.kubernetesVersion",
        )
    return wanted


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _field_path(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def schema_violation(file: str, error: jsonschema.ValidationError) -> SchemaViolation:
    return SchemaViolation(file=file, path=_field_path(error.absolute_path), message=error.message)


def validate_manifest(
    document: Mapping[str, Any], version: str, *, patch: bool = False, file: str = "<manifest>"
) -> SchemaViolation | None:
    """Check one object against the strict schema of `version` (e.g. "1.30.0"); None when it is valid.

    `patch=True` validates a server-side-apply patch: the same schema without `required`.
    """
    data = to_plain(document)
    try:
        _validate(data, version, partial=patch)
    except jsonschema.ValidationError as error:
        return schema_violation(file, error)
    except kubernetes_validate.SchemaNotFoundError as error:
        return SchemaViolation(
            file=file,
            path="kind",
            message=f"{error.message} (kubernetes-validate knows built-in kinds only)",
        )
    return None


def has_schema(document: Mapping[str, Any], version: str) -> bool:
    """The Kubernetes `version` schema set (e.g. "1.30.0") knows this object's apiVersion and kind."""
    return _validator(version, _schema_file_name(document), False) is not None


def validate_manifests(manifests: Iterable[Manifest], version: str, *, directory: str = "manifests") -> None:
    """Validate every manifest; raise one `ManifestSchemaError` listing every failing file."""
    violations = [
        violation
        for manifest in manifests
        if (
            violation := validate_manifest(
                manifest.document, version, patch=manifest.is_patch, file=f"{directory}/{manifest.file_name}"
            )
        )
    ]
    if violations:
        raise ManifestSchemaError(violations, _minor(version))


def _validate(data: dict[str, Any], version: str, *, partial: bool) -> None:
    validator = _validator(version, _schema_file_name(data), partial)
    if validator is None:
        raise kubernetes_validate.SchemaNotFoundError(
            kind=str(data.get("kind")),
            version=_minor(version),
            api_version=str(data.get("apiVersion")),
        )
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise error


def _schema_file_name(data: Mapping[str, Any]) -> str:
    # kubernetes-validate's naming: `rbac.authorization.k8s.io/v1` -> `rbac-v1`, `v1` stays `v1`.
    api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", str(data.get("apiVersion", "")))
    return f"{str(data.get('kind', '')).lower()}-{api_version}.json"


# Keywords whose value maps names to subschemas: a property *named* "required" must survive.
_SUBSCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose value is data, not schema.
_DATA_KEYWORDS: Final = frozenset({"enum", "const", "default", "examples"})


def without_required(schema: Any) -> Any:
    """The schema with every `required` keyword removed (recursively), all else untouched."""
    if isinstance(schema, list):
        return [without_required(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    stripped: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword == "required":
            continue
        if keyword in _DATA_KEYWORDS:
            stripped[keyword] = value
        elif keyword in _SUBSCHEMA_MAPS and isinstance(value, dict):
            stripped[keyword] = {name: without_required(sub) for name, sub in value.items()}
        else:
            stripped[keyword] = without_required(value)
    return stripped


@functools.cache
def _definitions(version: str, partial: bool) -> Resource[Any]:
    definitions = kubernetes_validate_utils.schema_contents(
        f"kubernetes-json-schema/v{version}-local-strict/_definitions.json", version
    )
    return Resource.from_contents(without_required(definitions) if partial else definitions)


@functools.cache
def _validator(version: str, schema_file: str, partial: bool) -> Any:
    """The strict schema's validator, built once per kind: `kubernetes_validate.validate` builds the same
    (schema file + `_definitions.json`, Draft 2020-12) but re-reads and re-parses both for every object,
    which dominated the render of large stacks."""
    try:
        schema = kubernetes_validate_utils.schema_contents(
            f"kubernetes-json-schema/v{version}-local-strict/{schema_file}", version
        )
    except FileNotFoundError:
        return None
    if partial:
        schema = without_required(schema)
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = _definitions(version, partial) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)
