"""`gpushare validate device-plugin-config FILE...`: reads each file (bytes as go-yaml decodes them, or a
Kubernetes manifest's ConfigMaps, each data value judged as a config file) and prints one verdict per file
or data key; the verdicts themselves come from `gpushare.device_plugin.decode.parse`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import yaml

from gpushare.device_plugin.decode import parse
from gpushare.device_plugin.go_compat import yaml_problem
from gpushare.device_plugin.model import MPS_ERA, PLUGIN_VERSIONS, DevicePluginConfigError, version_at_least
from gpushare.errors import GpushareError
from gpushare.input_files import read_bytes
from gpushare.yaml_bounds import (
    AliasRecordingComposer,
    YamlBoundError,
    YamlTooDeepError,
    iter_documents,
)


def _decode_file_bytes(data: bytes) -> str:
    """go-yaml accepts UTF-8 (optionally with a BOM) and UTF-16 with a BOM."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DevicePluginConfigError(
            "error converting YAML to JSON: yaml: invalid leading UTF-8 octet"
        ) from exc


class _ManifestLoader(AliasRecordingComposer, yaml.SafeLoader):
    """Kubernetes manifests: plain YAML, bounded like config files."""


@dataclass(frozen=True)
class _ConfigMapFile:
    """The ConfigMaps of a manifest file (`name` is `namespace/name` when the namespace is set)."""

    config_maps: list[tuple[str, Mapping[str, object]]]
    skipped: list[str]


def _manifest_of(text: str) -> _ConfigMapFile | None:
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
    found = _ConfigMapFile([], [])
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


def _collect_config_map(document: object, found: _ConfigMapFile) -> None:
    fields: dict[Any, Any] = document if isinstance(document, dict) else {}
    metadata = fields.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = "/".join(str(metadata[k]) for k in ("namespace", "name") if metadata.get(k)) or "(unnamed)"
    kind = fields.get("kind")
    if kind != "ConfigMap":
        found.skipped.append(f"{kind or 'a non-object'} {name}")
        return
    data = fields.get("data")
    found.config_maps.append((name, data if isinstance(data, dict) else {}))


def _validate_text(
    text: str, where: str, plugin_version: str, overrides: Mapping[str, object], out: TextIO, err: TextIO
) -> int:
    try:
        result = parse(text, plugin_version, overrides=overrides)
    except DevicePluginConfigError as exc:
        out.write(f"{where}: invalid: {exc}\n")
        return 1
    except GpushareError as exc:  # nesting beyond what is checked: no verdict
        err.write(f"{where}: error: {exc}\n")
        return 2
    warnings = list(result.warnings)
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        warnings.append("empty: the plugin starts with its defaults (no sharing)")
    for warning in warnings:
        err.write(f"{where}: warning: {warning}\n")
    out.write(f"{where}: valid\n")
    return 0


def _validate_file(
    path: str, plugin_version: str, overrides: Mapping[str, object], out: TextIO, err: TextIO
) -> int:
    try:
        text = _decode_file_bytes(read_bytes(path))
        manifest = _manifest_of(text)
    except DevicePluginConfigError as exc:  # not UTF-8: the plugin refuses such a file
        out.write(f"{path}: invalid: {exc}\n")
        return 1
    except GpushareError as exc:
        err.write(f"{exc}\n" if exc.source else f"{path}: error: {exc}\n")
        return 2
    if manifest is None:
        return _validate_text(text, path, plugin_version, overrides, out, err)
    for skipped in manifest.skipped:
        err.write(f"{path}: warning: {skipped} is not a ConfigMap; not checked\n")
    if not manifest.config_maps:
        err.write(f"{path}: error: a Kubernetes manifest without a ConfigMap; nothing to validate\n")
        return 2
    status = 0
    for name, entries in manifest.config_maps:
        # One ConfigMap in the file: `FILE: data.<key>`; several: `FILE: ConfigMap <name> data.<key>`.
        where_map = f"{path}: " if len(manifest.config_maps) == 1 else f"{path}: ConfigMap {name} "
        if not entries:
            err.write(f"{path}: error: ConfigMap {name} has no data keys; nothing to validate\n")
            status = 2
            continue
        for key, value in entries.items():
            where = f"{where_map}data.{key}"
            if not isinstance(value, str):
                out.write(f"{where}: invalid: not a string (ConfigMap data values are strings)\n")
                status = max(status, 1)
                continue
            status = max(status, _validate_text(value, where, plugin_version, overrides, out, err))
    return status


def run_validate_cli(
    paths: Sequence[str], plugin_version: str, out: TextIO, err: TextIO, *, mps_root: str | None = None
) -> int:
    """`gpushare validate device-plugin-config FILE...`: one line per file on `out` (`FILE: valid` or
    `FILE: invalid: <field>: <reason>`), warnings and errors on `err`. A Kubernetes manifest is read for its
    ConfigMaps, each `data` value judged as a config file (`FILE: data.<key>: valid`). `mps_root` judges
    files as NVIDIA's charts run them (they set MPS_ROOT). Exit 0 all valid, 1 any invalid, 2 any
    unreadable, too big or too deeply nested (or an unknown plugin version)."""
    if plugin_version not in PLUGIN_VERSIONS:
        err.write(
            f"error: unsupported device-plugin version {plugin_version!r}; known: {', '.join(PLUGIN_VERSIONS)}\n"
        )
        return 2
    overrides: dict[str, object] = {}
    if mps_root is not None:
        if not version_at_least(plugin_version, MPS_ERA):
            err.write(f"error: --mps-root: plugin {plugin_version} has no MPS (0.17.1 and later do)\n")
            return 2
        overrides["mpsRoot"] = mps_root
    status = 0
    for path in paths:
        status = max(status, _validate_file(path, plugin_version, overrides, out, err))
    return status
