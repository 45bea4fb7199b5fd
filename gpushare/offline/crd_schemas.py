"""Custom resources validated against the CustomResourceDefinitions that ship with them.

A chart's CRDs (`crds/` of the chart and its subcharts, and any rendered from templates) carry, per served
version, an `openAPIV3Schema`. A custom resource of that group, version and kind is checked against it
with `jsonschema` (OpenAPI 3.0 schemas are JSON Schema draft 4 plus Kubernetes extensions), made strict
the way the Kubernetes schemas of `gpushare.offline.manifests` are:

- an object schema that lists `properties` rejects other fields (`additionalProperties: false`), unless
  it says `x-kubernetes-preserve-unknown-fields: true`; the API server would prune such a field silently,
  so a misspelt key would vanish instead of failing (an embedded resource keeps apiVersion/kind/metadata);
- `nullable: true` admits null, as the API server does.
`metadata` stays as the CRD gives it (`type: object`): the API server checks it apart from the schema.
A null field the schema does not call `nullable` is dropped before validation, as the API server prunes
it (a chart template's `mig:` with nothing under it is no field, not an error).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]  # no stubs installed

from gpushare.offline.manifests import SchemaViolation, schema_violation

__all__ = ["CRD_API_VERSION", "CRD_KIND", "CrdIndex", "CrdVersion", "pruned_nulls", "strict_crd_schema"]

CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
CRD_KIND: Final = "CustomResourceDefinition"
_EMBEDDED_FIELDS: Final = ("apiVersion", "kind", "metadata")
_SUBSCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf")


@dataclass(frozen=True)
class CrdVersion:
    crd: str
    """The CRD's name, e.g. `clusterpolicies.nvidia.com`."""
    version: str
    served: bool
    schema_json: str
    """The version's openAPIV3Schema (as JSON, so the dataclass stays hashable and the validator cacheable)."""

    def describe(self) -> str:
        return f"CRD {self.crd} {self.version}"


def strict_crd_schema(schema: Any) -> Any:
    """The openAPIV3Schema made strict (see the module docstring); the input is left unchanged."""
    if isinstance(schema, list):
        return [strict_crd_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword == "properties" and isinstance(value, dict):
            strict[keyword] = {name: strict_crd_schema(sub) for name, sub in value.items()}
        elif keyword in ("items", "additionalProperties", "not") and isinstance(value, dict):
            strict[keyword] = strict_crd_schema(value)
        elif keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
            strict[keyword] = [strict_crd_schema(sub) for sub in value]
        else:  # enum, default, example and the x-kubernetes-* markers are data, not schema
            strict[keyword] = value
    if strict.get("nullable") is True and isinstance(strict.get("type"), str):
        strict["type"] = [strict["type"], "null"]
    if (
        isinstance(strict.get("properties"), dict)
        and "additionalProperties" not in strict
        and strict.get("x-kubernetes-preserve-unknown-fields") is not True
    ):
        if strict.get("x-kubernetes-embedded-resource") is True:
            embedded: dict[str, Any] = {
                name: {} for name in _EMBEDDED_FIELDS if name not in strict["properties"]
            }
            strict["properties"] = {**strict["properties"], **embedded}
        strict["additionalProperties"] = False
    return strict


def pruned_nulls(value: Any, schema: Any) -> Any:
    """`value` without the null object fields that `schema` does not mark `nullable: true` (a copy)."""
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        others = schema.get("additionalProperties")
        kept = {}
        for key, item in value.items():
            sub = properties.get(key, others if isinstance(others, dict) else {})
            if item is None and not (isinstance(sub, dict) and sub.get("nullable") is True):
                continue
            kept[key] = pruned_nulls(item, sub)
        return kept
    if isinstance(value, list):
        return [pruned_nulls(item, schema.get("items")) for item in value]
    return value


@functools.cache
def _schema(version: CrdVersion) -> Any:
    return json.loads(version.schema_json)


@functools.cache
def _validator(version: CrdVersion) -> Any:
    return jsonschema.Draft4Validator(strict_crd_schema(_schema(version)))


class CrdIndex:
    """The CRDs at hand, by the (apiVersion, kind) of the resources they define."""

    def __init__(self, crds: Iterable[Mapping[str, Any]]) -> None:
        self._versions: dict[tuple[str, str], CrdVersion] = {}
        self._served: dict[str, list[str]] = {}
        """kind -> its served apiVersions."""
        for crd in crds:
            if crd.get("apiVersion") != CRD_API_VERSION or crd.get("kind") != CRD_KIND:
                continue
            spec = crd.get("spec") or {}
            group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
            name = str((crd.get("metadata") or {}).get("name", f"{group}/{kind}"))
            for entry in spec.get("versions") or []:
                schema = (entry.get("schema") or {}).get("openAPIV3Schema")
                version = CrdVersion(
                    crd=name,
                    version=str(entry.get("name")),
                    served=bool(entry.get("served")),
                    schema_json=json.dumps(schema if isinstance(schema, dict) else {}, sort_keys=True),
                )
                self._versions[(f"{group}/{version.version}", str(kind))] = version
                if version.served:
                    self._served.setdefault(str(kind), []).append(f"{group}/{version.version}")

    def defines(self, document: Mapping[str, Any]) -> bool:
        """A CRD at hand defines this object's kind (in any version)."""
        kind = str(document.get("kind"))
        group = str(document.get("apiVersion", "")).rpartition("/")[0]
        return any(k == kind and a.rpartition("/")[0] == group for a, k in self._versions)

    def schema_for(self, document: Mapping[str, Any]) -> CrdVersion | None:
        return self._versions.get((str(document.get("apiVersion")), str(document.get("kind"))))

    def validate(self, document: Mapping[str, Any], *, file: str) -> SchemaViolation | None:
        """Check a custom resource whose kind `defines` answers for; None when it is valid."""
        version = self.schema_for(document)
        kind = str(document.get("kind"))
        if version is None or not version.served:
            served = ", ".join(self._served.get(kind, [])) or "none"
            return SchemaViolation(
                file=file,
                path="apiVersion",
                message=f"{document.get('apiVersion')} {kind} is not served by its CRD (served: {served})",
            )
        pruned = pruned_nulls(dict(document), _schema(version))
        error = jsonschema.exceptions.best_match(_validator(version).iter_errors(pruned))
        if error is None:
            return None
        violation = schema_violation(file, error)
        return SchemaViolation(violation.file, violation.path, f"{violation.message} ({version.describe()})")
