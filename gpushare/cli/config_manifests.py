"""The files `validate` reads, whatever holds the config: a plain config file, a Kubernetes manifest of
ConfigMaps (each `data` value a config file, as `render` writes them and a cluster mounts them), or a
`kubectl get -o yaml` List of them; one verdict line per file or data key, for either kind of config.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import yaml

from gpushare.device_plugin.go_compat import yaml_problem
from gpushare.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, GpushareError
from gpushare.input_files import read_bytes
from gpushare.yaml_bounds import AliasRecordingComposer, YamlBoundError, YamlTooDeepError, iter_documents

# Judges one config text: writes `WHERE: valid` / `WHERE: invalid: ...` (and warnings) and returns the
# exit status for it. `decode` turns a file's bytes into text as the config's own reader would.
Judge = Callable[[str, str, TextIO, TextIO], int]
Decode = Callable[[bytes, str], str]


class _ManifestLoader(AliasRecordingComposer, yaml.SafeLoader):
    """Kubernetes manifests: plain YAML, bounded like config files."""


@dataclass(frozen=True)
class ConfigMapFile:
    """The ConfigMaps of a manifest file (`name` is `namespace/name` when the namespace is set), and the
    other objects it holds (`apps/v1 Deployment ns/name`)."""

    config_maps: list[tuple[str, Mapping[str, object]]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def manifest_config_maps(text: str) -> ConfigMapFile | None:
    """The ConfigMaps of `text` when it is a Kubernetes manifest (its first document has `apiVersion` and
    `kind`); None when it is not one (then it is a config file). Raises GpushareError for a manifest that
    cannot be read past its first document."""
    try:
        documents = iter_documents(_ManifestLoader, text)
        first = next(documents, None)
    except (yaml.YAMLError, YamlBoundError, YamlTooDeepError, ValueError):
        return None  # not a manifest; the config-file parser gives the verdict
    if not (isinstance(first, dict) and isinstance(first.get("apiVersion"), str) and "kind" in first):
        return None
    found = ConfigMapFile()
    index = 0
    try:
        for index, document in enumerate(itertools.chain([first], documents)):  # noqa: B007
            fields: dict[Any, Any] = document if isinstance(document, dict) else {}
            items = fields.get("items")  # `kubectl get ... -o yaml` of several objects: a List
            for item in items if fields.get("kind") == "List" and isinstance(items, list) else [document]:
                if item is not None:
                    _collect_config_map(item, found)
    except (yaml.YAMLError, YamlBoundError, ValueError) as exc:
        problem = yaml_problem(exc) if isinstance(exc, yaml.YAMLError) else str(exc)
        raise GpushareError(f"manifest document {index + 2}: not readable YAML: {problem}") from None
    return found


def _collect_config_map(document: object, found: ConfigMapFile) -> None:
    fields: dict[Any, Any] = document if isinstance(document, dict) else {}
    metadata = fields.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = "/".join(str(metadata[k]) for k in ("namespace", "name") if metadata.get(k)) or "(unnamed)"
    kind = fields.get("kind")
    if kind != "ConfigMap":
        api_version = fields.get("apiVersion")
        found.skipped.append(" ".join(str(p) for p in (api_version, kind or "a non-object", name) if p))
        return
    data = fields.get("data")
    found.config_maps.append((name, data if isinstance(data, dict) else {}))


def validate_file(path: str, kind: str, decode: Decode, judge: Judge, out: TextIO, err: TextIO) -> int:
    """One file: a plain config judged whole, or each data value of each ConfigMap in a manifest. `kind`
    names the config (`device-plugin config`) in the verdict on a manifest that holds none."""
    try:
        text = decode(read_bytes(path), path)
    except GpushareError as exc:
        if exc.exit_code == EXIT_USAGE:  # missing, a directory, too big, binary
            err.write(f"{exc}\n" if exc.source else f"{path}: error: {exc}\n")
            return EXIT_USAGE
        out.write(f"{path}: invalid: {exc}\n")  # an encoding the config's reader refuses
        return EXIT_FINDINGS
    try:
        manifest = manifest_config_maps(text)
    except GpushareError as exc:
        err.write(f"{path}: error: {exc}\n")
        return EXIT_USAGE
    if manifest is None:
        return judge(text, path, out, err)
    if not manifest.config_maps:
        objects = "; ".join(manifest.skipped) or "no object"
        out.write(f"{path}: invalid: a Kubernetes manifest ({objects}) with no ConfigMap: not a {kind}\n")
        return EXIT_FINDINGS
    for skipped in manifest.skipped:
        err.write(f"{path}: warning: {skipped} is not a ConfigMap; not checked\n")
    status = EXIT_OK
    for name, entries in manifest.config_maps:
        # One ConfigMap in the file: `FILE: data.<key>`; several: `FILE: ConfigMap <name> data.<key>`.
        where_map = f"{path}: " if len(manifest.config_maps) == 1 else f"{path}: ConfigMap {name} "
        if not entries:
            out.write(f"{path}: invalid: ConfigMap {name} has no data keys: not a {kind}\n")
            status = max(status, EXIT_FINDINGS)
            continue
        for key, value in entries.items():
            where = f"{where_map}data.{key}"
            if not isinstance(value, str):
                out.write(f"{where}: invalid: not a string (ConfigMap data values are strings)\n")
                status = max(status, EXIT_FINDINGS)
                continue
            status = max(status, judge(value, where, out, err))
    return status


def validate_files(
    paths: Sequence[str], kind: str, decode: Decode, judge: Judge, out: TextIO, err: TextIO
) -> int:
    """Every file: the worst status (0 all valid, 1 any invalid, 2 any unreadable or without a verdict)."""
    return max((validate_file(path, kind, decode, judge, out, err) for path in paths), default=EXIT_OK)
