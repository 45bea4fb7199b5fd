"""Write new measurements into `Pulumi.<stack>.yaml` in place: `measuredMiB`, `measuredAt`, `source`.

A round-trip edit with `ruamel.yaml` keeps comments, key order and each value's quoting. The edited
text is validated by the stack loader every command uses (from a copy in a temporary directory) before
the file is replaced atomically, so a value the loader would refuse is never written, and a failure
leaves the file as it was. Files whose layout `ruamel.yaml` would change are not edited at all.

What the replacement keeps: the line endings (a CRLF file stays CRLF; mixed endings are refused), the
file's permission bits, and a symlink (the edit is written through it, to the file it points at, which is
replaced in its own directory; the link itself stays). What it refuses, one line, nothing written: a file
that changed since it was read (someone else's edit would be lost), a read-only file or directory, and a
pool whose `sharing` block is a YAML alias of another's (the anchor would carry the measurement to every
pool that names it). The owner and group of a file replaced by another user are not kept.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from gpushare.errors import ConfigError, GpushareError, UnreadableInputError
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import PROJECT, StackConfig

# Indentation layouts tried in turn (mapping, sequence, offset): the first that reproduces the file
# unchanged is used for the edit.
_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 6, 4), (4, 4, 0))


class NotWritable(UnreadableInputError):
    """The stack file cannot be replaced: read-only, gone, or changed since it was read (exit 2)."""


@dataclass(frozen=True)
class NewMeasurement:
    measured_mib: int
    measured_at: str
    source: str


def _yaml(layout: tuple[int, int, int]) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never re-wrap a long line
    mapping, sequence, offset = layout
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml: YAML, document: Any) -> str:
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def _like(old: Any, new: str) -> Any:
    """`new` written as `old` was: quoted the same, an unquoted date unquoted; plain for a new key
    (ruamel.yaml quotes it where a plain scalar would read as something else)."""
    if isinstance(old, SingleQuotedScalarString):
        return SingleQuotedScalarString(new)
    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(new)
    if isinstance(old, date):
        # The CLI (YAML 1.2) reads an unquoted date as a string, as the stack loader does.
        return date.fromisoformat(new)
    return new


def _target(pool: Mapping[str, Any], source: str) -> Any:
    sharing = pool.get("sharing")
    if not isinstance(sharing, dict):
        raise GpushareError(f"pool {pool.get('name')}: no sharing mapping to write into", source=source)
    if sharing.get("mode") == "mig":
        target = sharing.get("timeSlicing")
        if not isinstance(target, dict):
            raise GpushareError(
                f"pool {pool.get('name')}: MIG without timeSlicing has no measurement", source=source
            )
        return target
    if sharing.get("mode") != "time-slicing":
        raise GpushareError(
            f"pool {pool.get('name')}: sharing.mode is {sharing.get('mode')!r}; set it to time-slicing with the "
            "measurement to share its GPUs",
            source=source,
        )
    return sharing


def _set(target: Any, key: str, value: Any, after: str | None) -> None:
    if key in target or after is None or after not in target:
        target[key] = value
        return
    target.insert(list(target).index(after) + 1, key, value)


def _aliased_nodes(document: Any) -> set[int]:
    """The ids of the mappings the document reaches more than once (an anchor and its aliases; the
    round-trip loader gives them one object)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [document]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        stack.extend(node.values() if isinstance(node, dict) else node)
    return shared


def edit_measurements(text: str, updates: Mapping[str, NewMeasurement], source: str) -> str:
    """The stack file's text with the measurements of the pools in `updates` replaced."""
    for layout in _LAYOUTS:
        yaml = _yaml(layout)
        try:
            document = yaml.load(text)
        except YAMLError as err:
            raise ConfigError(f"not valid YAML: {' '.join(str(err).split())[:200]}", source=source) from None
        if _dump(yaml, document) == text:
            break
    else:
        raise GpushareError(
            "cannot edit this file in place without changing its layout (indentation or line breaks that "
            "ruamel.yaml does not reproduce); write the measurement by hand",
            source=source,
        )
    config = document.get("config") if isinstance(document, dict) else None
    pools = None
    if isinstance(config, dict):
        pools = config.get(f"{PROJECT}:pools", config.get("pools"))
    if not isinstance(pools, list):
        raise GpushareError(f"no {PROJECT}:pools list to write into", source=source)
    missing = set(updates)
    shared = _aliased_nodes(document)
    for pool in pools:
        name = pool.get("name") if isinstance(pool, dict) else None
        if not isinstance(name, str) or name not in updates:
            continue
        missing.discard(name)
        new = updates[name]
        target = _target(pool, source)
        if id(target) in shared or id(pool.get("sharing")) in shared:
            raise GpushareError(
                f"pool {name}: its sharing block is a YAML alias (an anchor other keys name too): a measurement "
                "written there would change them all; give the pool its own sharing block, or write by hand",
                source=source,
            )
        _set(target, "measuredMiB", new.measured_mib, None)
        _set(target, "measuredAt", _like(target.get("measuredAt"), new.measured_at), "measuredMiB")
        _set(target, "source", _like(target.get("source"), new.source), "measuredAt")
    if missing:
        raise GpushareError(f"no pool named {', '.join(sorted(missing))} in the file", source=source)
    return _dump(yaml, document)


@dataclass(frozen=True)
class PreparedEdit:
    """An edit validated and ready to replace `path` (the symlink's target, when the file is a link)."""

    path: Path
    original: bytes
    edited: bytes
    stack: StackConfig


def _line_ending(text: str, source: str) -> str:
    crlf = text.count("\r\n")
    if crlf and crlf != text.count("\n"):
        raise GpushareError(
            "mixed line endings (CRLF and LF): the edit would change some of them; write by hand",
            source=source,
        )
    if "\r" in text.replace("\r\n", ""):
        raise GpushareError("a bare carriage return in the file; write by hand", source=source)
    return "\r\n" if crlf else "\n"


def prepare_measurements(path: Path, stack: str, updates: Mapping[str, NewMeasurement]) -> PreparedEdit:
    """The edit of `path` with `updates`, validated by the stack loader; nothing is written."""
    source = path.name
    try:
        target = Path(os.path.realpath(path))
        original = target.read_bytes()
        text = original.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise NotWritable(f"cannot read: {getattr(err, 'strerror', None) or err}", source=source) from None
    ending = _line_ending(text, source)
    edited = edit_measurements(text.replace("\r\n", "\n"), updates, source).replace("\n", ending)
    with tempfile.TemporaryDirectory(prefix="gpushare-measure-") as scratch:
        copy = Path(scratch) / path.name
        copy.write_bytes(edited.encode("utf-8"))
        try:
            stack_config = load_stack_file(copy, stack)
        except ConfigError as err:
            raise GpushareError(
                f"not written: the stack loader would refuse the edited file: {err}"
            ) from None
    return PreparedEdit(
        target, original, edited.encode("utf-8"), stack_config.model_copy(update={"source": source})
    )


def commit(edit: PreparedEdit, source: str) -> None:
    """Replace the file with the edit, atomically, keeping its mode; `NotWritable` (nothing written) when
    it changed since it was read, or the file or its directory is read-only."""
    path = edit.path
    try:
        mode = path.stat().st_mode & 0o7777
        if path.read_bytes() != edit.original:
            raise NotWritable(
                "not written: the file changed since measure read it (someone else's edit would be lost); "
                "run measure again",
                source=source,
            )
    except OSError as err:
        raise NotWritable(
            f"not written: cannot read it again: {err.strerror or err}", source=source
        ) from None
    # The write bits say so even to root, whom os.access never refuses.
    if not mode & 0o222 or not os.access(path, os.W_OK):
        raise NotWritable("not written: the file is read-only", source=source)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise NotWritable(
            f"not written: cannot create a file in {path.parent}: {err.strerror or err}", source=source
        ) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(edit.edited)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as err:
        Path(temporary).unlink(missing_ok=True)
        raise NotWritable(f"not written: {err.strerror or err}", source=source) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_measurements(path: Path, stack: str, updates: Mapping[str, NewMeasurement]) -> StackConfig:
    """Edit `path` in place; the new stack as the loader reads it. Nothing is written on any error."""
    edit = prepare_measurements(path, stack, updates)
    commit(edit, path.name)
    return edit.stack
