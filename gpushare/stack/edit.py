"""Write new measurements into `Pulumi.<stack>.yaml` in place: `measuredMiB`, `measuredAt`, `source`.

A round-trip edit with `ruamel.yaml` keeps comments, key order and each value's quoting. The edited
text is validated by the stack loader every command uses (from a copy in a temporary directory) before
the file is replaced atomically, so a value the loader would refuse is never written, and a failure
leaves the file as it was. Files whose layout `ruamel.yaml` would change are not edited at all.
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

from gpushare.errors import ConfigError, GpushareError
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import PROJECT, StackConfig

# Indentation layouts tried in turn (mapping, sequence, offset): the first that reproduces the file
# unchanged is used for the edit.
_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 6, 4), (4, 4, 0))


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
    for pool in pools:
        name = pool.get("name") if isinstance(pool, dict) else None
        if not isinstance(name, str) or name not in updates:
            continue
        missing.discard(name)
        new = updates[name]
        target = _target(pool, source)
        _set(target, "measuredMiB", new.measured_mib, None)
        _set(target, "measuredAt", _like(target.get("measuredAt"), new.measured_at), "measuredMiB")
        _set(target, "source", _like(target.get("source"), new.source), "measuredAt")
    if missing:
        raise GpushareError(f"no pool named {', '.join(sorted(missing))} in the file", source=source)
    return _dump(yaml, document)


def write_measurements(path: Path, stack: str, updates: Mapping[str, NewMeasurement]) -> StackConfig:
    """Edit `path` in place; the new stack as the loader reads it. Nothing is written on any error."""
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read: {err}", source=source) from None
    edited = edit_measurements(text, updates, source)
    with tempfile.TemporaryDirectory(prefix="gpushare-measure-") as scratch:
        copy = Path(scratch) / path.name
        copy.write_text(edited, encoding="utf-8")
        try:
            stack_config = load_stack_file(copy, stack)
        except ConfigError as err:
            raise GpushareError(
                f"not written: the stack loader would refuse the edited file: {err}"
            ) from None
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(edited)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return stack_config.model_copy(update={"source": source})
