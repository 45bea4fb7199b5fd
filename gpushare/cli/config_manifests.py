"""The files `validate` reads, whatever holds the config: a plain config file, a Kubernetes manifest of
ConfigMaps (each `data` value a config file, as `render` writes them and a cluster mounts them), or a
`kubectl get -o yaml` List of them; one verdict line per file or data key, for either kind of config.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

import yaml

from gpushare.device_plugin.go_compat import yaml_problem
from gpushare.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, GpushareError
from gpushare.input_files import InputFileError, read_bytes
from gpushare.yaml_bounds import AliasRecordingComposer, YamlBoundError, YamlTooDeepError, iter_documents

# Judges one config text: writes `WHERE: valid` / `WHERE: invalid: ...` (and warnings) and returns the
# exit status for it. `decode` turns a file's bytes into text as the config's own reader would.
Judge = Callable[[str, str, TextIO, TextIO], int]
Decode = Callable[[bytes, str], str]


# A name printed as it is: what Kubernetes allows in ConfigMap keys and object names. Anything else (a
# colon, a space, a line break, a terminal escape) is printed as a JSON string, so that no name from the
# file can forge a verdict line or reach the terminal raw.
NUL, NUL_BYTE = "\x00", b"\x00"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._/-]{1,253}")


def shown(name: object) -> str:
    """`name` as the verdict lines print it: plain when Kubernetes would allow it, else JSON-quoted."""
    text = str(name)
    return text if _PLAIN_NAME.fullmatch(text) else json.dumps(text, ensure_ascii=True)


class _ManifestLoader(AliasRecordingComposer, yaml.SafeLoader):
    """Kubernetes manifests: plain YAML, bounded like config files."""


@dataclass(frozen=True)
class ConfigMapFile:
    """The ConfigMaps of a manifest file (`name` is `namespace/name` when the namespace is set), and the
    other objects it holds (`apps/v1 Deployment ns/name`)."""

    config_maps: list[tuple[str, Mapping[str, object]]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Per ConfigMap (by position in config_maps): its binaryData, base64 values the kubelet mounts as files.
    binary: list[Mapping[str, object]] = field(default_factory=list)


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
        raise BrokenManifest(f"manifest document {index + 2}: not readable YAML: {problem}") from None
    except YamlTooDeepError as exc:
        raise GpushareError(f"manifest document {index + 2}: {exc}") from None
    return found


class BrokenManifest(GpushareError):
    """A later document of a manifest that is not YAML: bad content, as a broken plain file is (exit 1)."""


def _collect_config_map(document: object, found: ConfigMapFile) -> None:
    fields: dict[Any, Any] = document if isinstance(document, dict) else {}
    metadata = fields.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = shown("/".join(str(metadata[k]) for k in ("namespace", "name") if metadata.get(k))) or "(unnamed)"
    if name == '""':
        name = "(unnamed)"
    kind = fields.get("kind")
    if kind != "ConfigMap":
        api_version = fields.get("apiVersion")
        parts = (shown(api_version) if api_version else None, shown(kind) if kind else "a non-object", name)
        found.skipped.append(" ".join(p for p in parts if p))
        return
    data = fields.get("data")
    binary = fields.get("binaryData")
    found.config_maps.append((name, data if isinstance(data, dict) else {}))
    found.binary.append(binary if isinstance(binary, dict) else {})


def validate_file(path: str, kind: str, decode: Decode, judge: Judge, out: TextIO, err: TextIO) -> int:
    """One file: a plain config judged whole, or each data value of each ConfigMap in a manifest. `kind`
    names the config (`device-plugin config`) in the verdict on a manifest that holds none."""
    try:
        data = read_bytes(path)
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        if NUL_BYTE in data and not utf16:
            # Not text, whichever validator reads it: the same class, the same exit.
            raise InputFileError(
                f"a binary file (NUL byte at offset {data.index(NUL_BYTE)}), not text", source=path
            )
        text = decode(data, path)
        if NUL in text:
            raise InputFileError(
                f"a binary file (NUL character at offset {text.index(NUL)}), not text", source=path
            )
    except GpushareError as exc:
        if exc.exit_code == EXIT_USAGE:  # missing, a directory, too big, binary
            err.write(f"{exc}\n" if exc.source else f"{path}: error: {exc}\n")
            return EXIT_USAGE
        out.write(f"{path}: invalid: {exc}\n")  # an encoding the config's reader refuses
        return EXIT_FINDINGS
    try:
        manifest = manifest_config_maps(text)
    except BrokenManifest as exc:
        out.write(f"{path}: invalid: {exc}\n")
        return EXIT_FINDINGS
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
    for (name, entries), binary in zip(manifest.config_maps, manifest.binary, strict=True):
        # One ConfigMap in the file: `FILE: data.<key>`; several: `FILE: ConfigMap <name> data.<key>`.
        where_map = f"{path}: " if len(manifest.config_maps) == 1 else f"{path}: ConfigMap {name} "
        if not entries and not binary:
            out.write(f"{path}: invalid: ConfigMap {name} has no data keys: not a {kind}\n")
            status = max(status, EXIT_FINDINGS)
            continue
        for key, value in entries.items():
            where = f"{where_map}data.{shown(key)}"
            if not isinstance(value, str):
                out.write(f"{where}: invalid: not a string (ConfigMap data values are strings)\n")
                status = max(status, EXIT_FINDINGS)
                continue
            status = max(status, judge(value, where, out, err))
        # binaryData keys are mounted as files too: judged as files, once base64-decoded.
        for key, value in binary.items():
            where = f"{where_map}binaryData.{shown(key)}"
            try:
                raw = base64.b64decode(str(value), validate=True) if isinstance(value, str) else None
            except (binascii.Error, ValueError):
                raw = None
            if raw is None:
                out.write(f"{where}: invalid: not base64 (binaryData values are base64 strings)\n")
                status = max(status, EXIT_FINDINGS)
                continue
            try:
                decoded = decode(raw, where)
            except GpushareError as exc:
                out.write(f"{where}: invalid: {exc.message}\n")
                status = max(status, EXIT_FINDINGS)
                continue
            status = max(status, judge(decoded, where, out, err))
    return status


class _Escaping:
    """A stream whose every write is one line at most: a character that is not printable (a line break
    inside a message, a terminal escape, a bidirectional control) is written as its escape, so no text from
    a file can start a line of its own or reach the terminal raw. A write's final line break is kept."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in body)
        return self.stream.write(escaped + end)

    def flush(self) -> None:
        self.stream.flush()


def validate_files(
    paths: Sequence[str], kind: str, decode: Decode, judge: Judge, out: TextIO, err: TextIO
) -> int:
    """Every file: the worst status (0 all valid, 1 any invalid, 2 any unreadable or without a verdict).
    Whatever the verdicts quote from the files reaches `out` and `err` escaped, one line per verdict."""
    safe_out, safe_err = cast(TextIO, _Escaping(out)), cast(TextIO, _Escaping(err))
    return max(
        (validate_file(path, kind, decode, judge, safe_out, safe_err) for path in paths), default=EXIT_OK
    )
