"""Every Helm release of a program run, rendered by Helm itself into the objects its chart creates, each
validated against a schema that knows its kind.

A `kubernetes:helm.sh/v3:Release` is rendered as `pulumi up` would install it: Helm's Go SDK
(`helm_python`, no `helm` binary) loads the chart from `gpushare.offline.chart_sources` and renders it with the
release's recorded values, name and namespace as a first install (`.Release.IsInstall`), which also checks
the values against the chart's `values.schema.json` files. What no render can know: there is no cluster,
so `lookup` finds nothing and `.Capabilities` are Helm's defaults, as with `helm template`.

Each object comes back with where it came from (release, chart, template) and what checked it:
- built-in kinds: the stack's Kubernetes version schema, strict (`gpushare.offline.manifests`, as for gpushare's
  own objects);
- custom resources (the operator's ClusterPolicy, NFD's NodeFeatureRule, ...): the CRD shipped in the
  chart or its subcharts (`gpushare.offline.crd_schemas`);
- a kind neither knows is kept and reported as not validated, never called valid.
The chart's `crds/` are objects of the release too (Helm creates them on first install, unless the release
says `skipCrds`). Hooks are kept and marked: Helm runs them around install, upgrade or delete.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import yaml

from gpushare.errors import GpushareError
from gpushare.offline.chart_sources import ChartRequest, ChartSources, FoundChart
from gpushare.offline.crd_schemas import CRD_API_VERSION, CRD_KIND, CrdIndex
from gpushare.offline.manifests import (
    HelmRelease,
    SchemaViolation,
    extract_helm_releases,
    has_schema,
    manifest_file_name,
    to_plain,
    validate_manifest,
)
from gpushare.offline.recorded import RecordedResource

__all__ = [
    "CHART_RENDERED_MARK",
    "ChartObject",
    "ChartObjectSchemaError",
    "ChartRenderError",
    "RenderedRelease",
    "render_releases",
]

CHART_RENDERED_MARK: Final = "# chart-rendered:"
"""First line of every chart-rendered file, so scanners and reviewers can tell NVIDIA's objects from ours."""
HOOK_ANNOTATION: Final = "helm.sh/hook"
NOTES_FILE: Final = "NOTES.txt"
# libyaml's parser when PyYAML has it (same safe constructor): the operator's CRDs are ~300 kB of YAML,
# which the pure-Python parser takes seconds over.
_YAML_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Go's log prefix on what Helm writes to stderr (`2026/12/01 05:02:05 WARN ...`).
_GO_LOG_PREFIX: Final = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d ")
# Release inputs the offline render cannot honour; refused rather than ignored.
_UNSUPPORTED_INPUTS: Final = ("valueYamlFiles", "postrender")


class ChartRenderError(GpushareError):
    """Helm refused the release's values or a template failed, or a release asks for what render cannot do."""


class ChartObjectSchemaError(GpushareError):
    """Objects rendered from charts that fail the schema of their kind."""

    def __init__(self, violations: Sequence[SchemaViolation]) -> None:
        self.violations = tuple(violations)
        count = len(self.violations)
        super().__init__(
            "\n".join(
                [
                    f"{count} object{'' if count == 1 else 's'} rendered from Helm charts "
                    f"fail{'s' if count == 1 else ''} their schema (strict: unknown fields are errors):",
                    *(f"  {violation}" for violation in self.violations),
                ]
            )
        )


@dataclass(frozen=True)
class ChartObject:
    """One object a release's chart creates, as Helm rendered it."""

    release: HelmRelease
    chart: str
    chart_version: str
    source: str
    """The template (`gpu-operator/templates/clusterpolicy.yaml`) or CRD file (`gpu-operator/crds/...`)."""
    document: dict[str, Any]
    hook: str | None = None
    """The `helm.sh/hook` annotation (`pre-upgrade`, `post-delete`, ...) of a hook."""
    checked_against: str | None = None
    """What validated it (`the Kubernetes 1.30 schema`, `CRD clusterpolicies.nvidia.com v1`); None: nothing knows its kind."""

    @property
    def api_version(self) -> str:
        return str(self.document["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.document["kind"])

    @property
    def name(self) -> str:
        return str(self.document["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.document["metadata"].get("namespace")
        return str(namespace) if namespace else None

    @property
    def file_name(self) -> str:
        return manifest_file_name(self.kind, self.namespace, self.name)

    @property
    def type_token(self) -> str:
        """The Pulumi type pulumi-kubernetes gives this object: `kubernetes:apps/v1:DaemonSet`,
        `kubernetes:core/v1:ConfigMap`, `kubernetes:nvidia.com/v1:ClusterPolicy`."""
        group, _, version = self.api_version.rpartition("/")
        return f"kubernetes:{group or 'core'}/{version}:{self.kind}"

    def header(self) -> str:
        release = self.release
        lines = [
            f"{CHART_RENDERED_MARK} {self.chart} {self.chart_version}, {self.source} (for review: applied by "
            f"its Helm release, {release.file_name}, not by hand)",
            f"# Helm release {release.namespace or 'default'}/{release.name} "
            f"({release.resource.type} {release.resource.name}); not an object gpushare itself creates",
        ]
        if self.hook:
            lines.append(f"# Helm hook ({self.hook}): Helm runs it around install/upgrade/delete")
        if self.source.split("/")[-2:-1] == ["crds"]:
            lines.append("# from the chart's crds/: Helm creates it on first install and never upgrades it")
        lines.append(
            f"# validated against {self.checked_against}"
            if self.checked_against
            else f"# NOT validated: neither the Kubernetes schema nor a CRD at hand knows {self.api_version} {self.kind}"
        )
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RenderedRelease:
    release: HelmRelease
    chart: FoundChart
    objects: tuple[ChartObject, ...]
    warnings: tuple[str, ...] = ()
    """What Helm warned about while rendering (e.g. a value of the wrong type for a template's test)."""

    def warning_lines(self) -> list[str]:
        return [f"warning: {_request(self.release).describe()}: {warning}" for warning in self.warnings]

    @property
    def unvalidated(self) -> tuple[ChartObject, ...]:
        return tuple(o for o in self.objects if o.checked_against is None)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _request(release: HelmRelease) -> ChartRequest:
    return ChartRequest(
        release=f"{release.namespace or 'default'}/{release.name}",
        chart=release.chart,
        version=release.version,
        repository=release.repository,
    )


def _documents(text: str, where: str) -> Iterable[dict[str, Any]]:
    try:
        for document in yaml.load_all(text, Loader=_YAML_LOADER):
            if document is None:
                continue
            if not (
                isinstance(document, dict)
                and document.get("apiVersion")
                and document.get("kind")
                and isinstance(document.get("metadata"), dict)
                and document["metadata"].get("name")
            ):
                raise ChartRenderError(f"{where}: renders a document that is not a Kubernetes object")
            yield document
    except yaml.YAMLError as err:
        raise ChartRenderError(f"{where}: renders YAML that does not parse: {_one_line(str(err))}") from None


@contextlib.contextmanager
def _helm_log(lines: list[str]) -> Iterator[None]:
    """Helm's Go code logs its warnings straight to file descriptor 2, past Python: collected into
    `lines` for the duration (timestamps dropped), so they can be reported with the release they concern."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", errors="replace")
            lines.extend(_GO_LOG_PREFIX.sub("", line) for line in text.splitlines() if line.strip())


def _render_one(release: HelmRelease, found: FoundChart, helm: Any) -> RenderedRelease:
    request = _request(release)
    where = f"{request.describe()}"
    inputs = release.resource.inputs
    for key in _UNSUPPORTED_INPUTS:
        if inputs.get(key):
            raise ChartRenderError(
                f"{where}: `{key}` cannot be rendered offline; give the values in `values`"
            )
    warnings: list[str] = []
    try:
        with helm.Chart.load(found.path) as chart, _helm_log(warnings):
            files = chart.render(
                to_plain(release.values),
                name=release.name,
                namespace=release.namespace or "default",
                is_install=True,
            )
            crd_files = [] if inputs.get("skipCrds") is True else chart.crds
    except helm.HelmError as err:
        raise ChartRenderError(f"{where}: Helm refuses it: {_one_line(str(err))}") from None
    chart_name, version = request.chart_name, str(request.version)
    objects = [
        ChartObject(release, chart_name, version, crd["filename"], document)
        for crd in sorted(crd_files, key=lambda c: c["filename"])
        for document in _documents(crd["data"], f"{where}: {crd['filename']}")
    ]
    for template in sorted(files):
        if Path(template).name == NOTES_FILE:
            continue
        for document in _documents(files[template], f"{where}: {template}"):
            hook = (document["metadata"].get("annotations") or {}).get(HOOK_ANNOTATION)
            objects.append(ChartObject(release, chart_name, version, template, document, hook=hook))
    return RenderedRelease(release, found, tuple(objects), tuple(warnings))


def _checked(
    obj: ChartObject, crds: CrdIndex, kubernetes_schema: str, directory: str
) -> ChartObject | SchemaViolation:
    """The object with what validated it, or its violation. (A null field is no field to the API server:
    the Kubernetes schemas admit null, `CrdIndex.validate` prunes it.)"""
    file = f"{directory}/{obj.file_name}"
    if has_schema(obj.document, kubernetes_schema):
        violation = validate_manifest(obj.document, kubernetes_schema, file=file)
        against = f"the Kubernetes {kubernetes_schema.rpartition('.')[0]} schema (strict)"
    elif crds.defines(obj.document):
        violation = crds.validate(obj.document, file=file)
        version = crds.schema_for(obj.document)
        against = f"{version.describe()} (strict)" if version else ""
    else:
        return obj
    return violation or replace(obj, checked_against=against)


def render_releases(
    resources: Sequence[RecordedResource],
    sources: ChartSources,
    kubernetes_schema: str,
    *,
    directory: str = "manifests",
) -> list[RenderedRelease]:
    """Render every Helm release in `resources` (already redacted: values at secret paths read `<secret>`)
    and validate what it creates. Raises `ChartSourceError` (no chart), `ChartRenderError` (Helm refused)
    or `ChartObjectSchemaError` listing every object that fails its schema; nothing is written here."""
    releases = extract_helm_releases(resources)
    if not releases:
        return []
    import helm_python  # a large Go library: loaded only for stacks that have a Helm release

    located = [(release, sources.locate(_request(release))) for release in releases]
    rendered = [_render_one(release, found, helm_python) for release, found in located]
    crds = CrdIndex(
        o.document
        for r in rendered
        for o in r.objects
        if (o.api_version, o.kind) == (CRD_API_VERSION, CRD_KIND)
    )
    violations: list[SchemaViolation] = []
    checked_releases = []
    for release in rendered:
        checked = []
        for obj in release.objects:
            result = _checked(obj, crds, kubernetes_schema, directory)
            if isinstance(result, SchemaViolation):
                violations.append(result)
            else:
                checked.append(result)
        checked_releases.append(replace(release, objects=tuple(checked)))
    if violations:
        raise ChartObjectSchemaError(violations)
    return checked_releases
