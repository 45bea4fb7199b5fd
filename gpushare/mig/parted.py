"""Read, check and write NVIDIA mig-parted config files (what the GPU Operator's MIG manager applies).

Parsing follows mig-parted's `api/spec/v1/spec.go` and go-nvlib's profile grammar as summarised in
shared/reference/nvidia-device-plugin-and-mig.md section D, so that "valid" here means mig-parted would
load the file. Like mig-parted, parsing does NOT check that the instances fit a GPU; `check_fits` does
that for one GPU model, using `gpushare.mig.geometry`.

mig-parted reads YAML through sigs.k8s.io/yaml (YAML -> JSON -> Go structs). Where that conversion makes
odd input acceptable (`mig-enabled: null` is false, a count written `2.0` is 2) we accept it too;
the point is parity with what the MIG manager will do, not extra strictness.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from gpushare.catalog import GpuModel
from gpushare.errors import GpushareError
from gpushare.mig.geometry import MigLayoutError, fit_layout
from gpushare.yaml_bounds import AliasRecordingComposer, YamlBoundError, load_first_document

VERSION: Literal["v1"] = "v1"
_TOP_LEVEL_FIELDS = ("version", "mig-configs")
_ENTRY_FIELDS = ("device-filter", "devices", "mig-enabled", "mig-devices")
_REQUIRED_ENTRY_FIELDS = ("devices", "mig-enabled")
_GO_INT_MAX = 2**63 - 1  # mig-parted decodes counts and device indexes into Go `int` (64-bit)
_DIGITS = re.compile(r"[0-9]+")  # Go strconv.Atoi: ASCII digits only (no `_`, no Unicode digits)


class MigPartedConfigError(GpushareError):
    """A mig-parted config that mig-parted would reject, or that does not fit the GPU it is checked for.

    `key` is the field path, e.g. `mig-configs.all-1g.12gb[0].mig-devices`."""


class MigConfigEntry(BaseModel):
    """One item of a named config: which GPUs it applies to and their MIG layout."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    device_filter: str | tuple[str, ...] | None = None
    devices: Literal["all"] | tuple[int, ...] = "all"
    mig_enabled: bool
    # None: the key is absent (only allowed with mig-enabled false). {}: MIG on, no instances.
    mig_devices: dict[str, int] | None = None


class MigPartedConfig(BaseModel):
    """A whole mig-parted file: named configs (the value of the `nvidia.com/mig.config` node label)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    version: Literal["v1"] = VERSION
    mig_configs: dict[str, tuple[MigConfigEntry, ...]] = Field(default_factory=dict)


@dataclass(frozen=True)
class MigProfileName:
    """A profile name in go-nvlib's grammar `[<c>c.]<g>g.<gb>gb[+attr[,attr...]|-attr[,attr...]]`."""

    compute: int  # `<c>c.`; equals `gpu_slices` when the prefix is absent
    gpu_slices: int
    memory_gb: int
    attributes: tuple[str, ...] = ()
    negative_attributes: tuple[str, ...] = ()

    @property
    def is_gpu_instance(self) -> bool:
        """True when the name denotes a whole GPU instance (one compute instance using all of it)."""
        return self.compute == self.gpu_slices

    def canonical(self) -> str:
        """The name as `nvidia-smi`/the catalog spell it (go-nvlib matches attributes as a set)."""
        name = f"{self.gpu_slices}g.{self.memory_gb}gb"
        if not self.is_gpu_instance:
            name = f"{self.compute}c.{name}"
        if self.attributes:
            name += "+" + ",".join(sorted(self.attributes))
        if self.negative_attributes:
            name += "-" + ",".join(sorted(self.negative_attributes))
        return name


def parse_profile_name(name: str) -> MigProfileName:
    """Parse like go-nvlib `parseMigProfile`; raises ValueError with the reason."""
    if name == "":
        raise ValueError("profile is the empty string")
    plus = name.split("+", 1)
    minus = name.split("-", 1)
    if len(plus) == 2 and len(minus) == 2:
        raise ValueError("contains both '+' and '-' attributes")
    parts = plus if len(plus) == 2 else minus
    attribute_text = parts[1] if len(parts) == 2 else None
    fields = parts[0].split(".", 2)
    if len(fields) == 3:
        compute = _profile_field(fields[0], "c")
        gpu_slices = _profile_field(fields[1], "g")
        memory_gb = _profile_field(fields[2], "gb")
    elif len(fields) == 2:
        gpu_slices = _profile_field(fields[0], "g")
        compute = gpu_slices
        memory_gb = _profile_field(fields[1], "gb")
    else:
        raise ValueError("expected '<g>g.<gb>gb' or '<c>c.<g>g.<gb>gb'")
    if attribute_text is None:
        return MigProfileName(compute, gpu_slices, memory_gb)
    attributes = _profile_attributes(attribute_text)
    if len(minus) == 2:
        return MigProfileName(compute, gpu_slices, memory_gb, negative_attributes=attributes)
    return MigProfileName(compute, gpu_slices, memory_gb, attributes=attributes)


def _profile_field(text: str, unit: str) -> int:
    if text.strip() != text:
        raise ValueError(f"leading or trailing spaces in '<n>{unit}'")
    if not text.endswith(unit):
        raise ValueError(f"missing '{unit}' in '<n>{unit}' (lowercase, no spaces)")
    number = text.removesuffix(unit)
    if not _DIGITS.fullmatch(number) or int(number) > _GO_INT_MAX:
        raise ValueError(f"malformed number in '<n>{unit}'")
    return int(number)


def _profile_attributes(text: str) -> tuple[str, ...]:
    attributes = text.split(",")
    seen: set[str] = set()
    for attribute in attributes:
        if attribute in seen:
            raise ValueError(f"attribute {attribute!r} repeated")
        if attribute == "":
            raise ValueError("empty attribute")
        if attribute[0] in "0123456789":
            raise ValueError(f"attribute {attribute!r} begins with a digit")
        if attribute.startswith(".") or attribute.endswith("."):
            raise ValueError(f"attribute {attribute!r} begins or ends with a dot")
        if not re.fullmatch(r"[A-Za-z0-9.]+", attribute):
            raise ValueError(f"attribute {attribute!r} has characters other than letters, digits and dots")
        seen.add(attribute)
    return tuple(attributes)


# --- parsing --------------------------------------------------------------------------------------------


class _BoundedLoader(AliasRecordingComposer, yaml.SafeLoader):
    """PyYAML, refusing what go-yaml refuses for aliasing (gpushare.yaml_bounds)."""


def parse(text: str) -> MigPartedConfig:
    """Parse and validate a mig-parted config file's text (its first YAML document, as sigs.k8s.io/yaml
    reads it); raises `MigPartedConfigError`, or `YamlTooDeepError` (no verdict) for nesting deeper than
    this checker follows. An empty file parses to no configs, as upstream: see `gpushare.cli.validate.run_mig_validate_cli`."""
    try:
        document = load_first_document(_BoundedLoader, text)
    except yaml.YAMLError as exc:
        raise MigPartedConfigError(f"not valid YAML: {_yaml_problem(exc)}") from None
    except YamlBoundError as exc:
        raise MigPartedConfigError(f"not valid YAML: {exc.reason}") from None
    if document is None:  # mig-parted accepts an empty file (no configs)
        return MigPartedConfig()
    if not isinstance(document, dict):
        raise MigPartedConfigError(
            f"expected a mapping with 'version' and 'mig-configs', got {_kind(document)}"
        )
    fields = _string_keys(document, "")
    if "version" not in fields:
        raise MigPartedConfigError("missing 'version' field (want version: v1)")
    version = fields["version"]
    if version != VERSION:
        raise MigPartedConfigError(f"unknown version {version!r} (want {VERSION})", key="version")
    for name in fields:
        if name not in _TOP_LEVEL_FIELDS:
            raise MigPartedConfigError(
                f"unexpected field (allowed: {', '.join(_TOP_LEVEL_FIELDS)})", key=name
            )
    if "mig-configs" not in fields:  # `version: v1` alone parses upstream (spec_test "Only version field")
        return MigPartedConfig()
    return MigPartedConfig(mig_configs=_parse_configs(fields["mig-configs"]))


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: `line L, column C: problem` (the CLI prints one line per file)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        context = f"{exc.context}, " if exc.context else ""
        return f"line {mark.line + 1}, column {mark.column + 1}: {context}{exc.problem}"
    return " ".join(str(exc).split())


def _parse_configs(value: object) -> dict[str, tuple[MigConfigEntry, ...]]:
    path = "mig-configs"
    if value is not None and not isinstance(value, dict):
        raise MigPartedConfigError(
            f"expected a mapping of config names to entry lists, got {_kind(value)}", key=path
        )
    if not value:
        raise MigPartedConfigError("at least one named config is required", key=path)
    configs: dict[str, tuple[MigConfigEntry, ...]] = {}
    for name, entries in _string_keys(value, path).items():
        config_path = f"{path}.{name}"
        if entries is not None and not isinstance(entries, list):
            raise MigPartedConfigError(f"expected a list of entries, got {_kind(entries)}", key=config_path)
        if not entries:
            raise MigPartedConfigError(f"at least one entry in '{name}' is required", key=config_path)
        configs[name] = tuple(
            _parse_entry(entry, f"{config_path}[{index}]") for index, entry in enumerate(entries)
        )
    return configs


def _parse_entry(value: object, path: str) -> MigConfigEntry:
    if not isinstance(value, dict):
        raise MigPartedConfigError(f"expected a mapping, got {_kind(value)}", key=path)
    fields = _string_keys(value, path)
    for required in _REQUIRED_ENTRY_FIELDS:
        if required not in fields:
            raise MigPartedConfigError(f"missing required field '{required}'", key=path)
    for name in fields:
        if name not in _ENTRY_FIELDS:
            raise MigPartedConfigError(
                f"unexpected field (allowed: {', '.join(_ENTRY_FIELDS)})", key=f"{path}.{name}"
            )
    mig_enabled = _parse_mig_enabled(fields["mig-enabled"], f"{path}.mig-enabled")
    mig_devices = _parse_mig_devices(fields.get("mig-devices"), f"{path}.mig-devices")
    if mig_enabled and mig_devices is None:
        raise MigPartedConfigError(
            "missing required field 'mig-devices' when 'mig-enabled' is true (use mig-devices: {} for none)",
            key=path,
        )
    if not mig_enabled and mig_devices:
        raise MigPartedConfigError(
            "MIG devices included when 'mig-enabled' is false", key=f"{path}.mig-devices"
        )
    return MigConfigEntry(
        device_filter=_parse_device_filter(fields.get("device-filter"), f"{path}.device-filter"),
        devices=_parse_devices(fields["devices"], f"{path}.devices"),
        mig_enabled=mig_enabled,
        mig_devices=mig_devices,
    )


def _parse_mig_enabled(value: object, path: str) -> bool:
    if value is None:  # JSON null leaves Go's bool false
        return False
    if not isinstance(value, bool):
        raise MigPartedConfigError(f"must be true or false, got {value!r}", key=path)
    return value


def _parse_devices(value: object, path: str) -> Literal["all"] | tuple[int, ...]:
    if value == "all":
        return "all"
    if isinstance(value, list):
        indexes = [_as_go_int(item) for item in value]
        if all(index is not None for index in indexes):
            return tuple(index for index in indexes if index is not None)
    raise MigPartedConfigError(f'must be "all" or a list of GPU indexes, got {value!r}', key=path)


def _parse_device_filter(value: object, path: str) -> str | tuple[str, ...] | None:
    if value is None:  # null decodes to "", which mig-parted treats as "no filter"
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    hint = ""
    if isinstance(value, int) or (isinstance(value, list) and any(isinstance(item, int) for item in value)):
        # `0x232910DE` unquoted is a YAML integer, which mig-parted rejects too.
        hint = ' (quote PCI IDs: "0x232910DE")'
    raise MigPartedConfigError(f"must be a string or a list of strings, got {value!r}{hint}", key=path)


def _parse_mig_devices(value: object, path: str) -> dict[str, int] | None:
    if value is None:  # absent, or null: Go leaves the map nil
        return None
    if not isinstance(value, dict):
        raise MigPartedConfigError(
            f"expected a mapping of profile name to count, got {_kind(value)}", key=path
        )
    devices: dict[str, int] = {}
    for name, raw_count in _string_keys(value, path).items():
        try:
            parse_profile_name(name)
        except ValueError as exc:
            raise MigPartedConfigError(
                f"invalid profile name {name!r}: {exc} (format: [<c>c.]<g>g.<gb>gb[+attr], e.g. 1g.12gb)",
                key=path,
            ) from None
        count = _as_go_int(raw_count)
        if count is None or count < 0:
            raise MigPartedConfigError(
                f"count for {name!r} must be an integer >= 0, got {raw_count!r}", key=path
            )
        devices[name] = count
    if devices and not any(devices.values()):
        raise MigPartedConfigError(
            "all counts are 0 (use mig-devices: {} for MIG without instances)", key=path
        )
    return devices


def _as_go_int(value: object) -> int | None:
    """The int Go's encoding/json would decode `value` to, or None if it would refuse."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)  # YAML 2.0 becomes JSON 2 on the way through sigs.k8s.io/yaml
    if isinstance(value, int) and -_GO_INT_MAX - 1 <= value <= _GO_INT_MAX:
        return value
    return None


def _string_keys(mapping: Mapping[Any, Any], path: str) -> dict[str, Any]:
    """Keys as JSON strings, the way sigs.k8s.io/yaml turns YAML keys into JSON object keys."""
    result: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(key, bool):
            text = "true" if key else "false"
        elif isinstance(key, str | int | float):
            text = str(key)
        else:
            raise MigPartedConfigError(f"keys must be strings, got {key!r}", key=path or None)
        result[text] = value
    return result


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


# --- checks against one GPU -----------------------------------------------------------------------------


def check_fits(config: MigPartedConfig, gpu: GpuModel) -> None:
    """Every MIG-enabled entry's instances must fit one `gpu`; raises `MigPartedConfigError` naming it.

    Device filters are not evaluated (the catalog has no PCI IDs): every entry is checked against `gpu`.
    """
    for config_name, entries in config.mig_configs.items():
        for index, entry in enumerate(entries):
            path = f"mig-configs.{config_name}[{index}]"
            if not entry.mig_enabled:
                continue
            if not gpu.mig_capable:
                raise MigPartedConfigError(f"{gpu.key} does not support MIG", key=f"{path}.mig-enabled")
            counts = _gpu_instance_counts(entry.mig_devices or {}, gpu, f"{path}.mig-devices")
            if not counts:  # MIG on, no instances: nothing to place
                continue
            try:
                fit_layout(gpu, counts)
            except MigLayoutError as exc:
                raise MigPartedConfigError(
                    f"does not fit {gpu.key}: {exc.message}", key=f"{path}.mig-devices"
                ) from None


def _gpu_instance_counts(mig_devices: Mapping[str, int], gpu: GpuModel, path: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, count in mig_devices.items():
        if count == 0:
            continue
        profile = parse_profile_name(name)  # already validated by parse()
        if not profile.is_gpu_instance:
            raise MigPartedConfigError(
                f"cannot check {name!r} for {gpu.key}: compute-instance profiles (<c>c.<g>g...) share a GPU "
                "instance and gpushare only models whole GPU instances (<g>g.<gb>gb)",
                key=path,
            )
        canonical = profile.canonical()  # `01g.12gb` and `1g.12gb` are the same profile to mig-parted
        counts[canonical] = counts.get(canonical, 0) + count
    return counts


# --- writing --------------------------------------------------------------------------------------------


class _BlockDumper(yaml.SafeDumper):
    """Indents list items under their key, as the GPU Operator's config does."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render(config: MigPartedConfig) -> str:
    """Deterministic YAML: configs and profiles in model order, entry keys in mig-parted's field order."""
    document: dict[str, Any] = {"version": config.version}
    if config.mig_configs:  # `omitempty` upstream; an empty `mig-configs` would not parse back
        document["mig-configs"] = {
            name: [_entry_document(entry) for entry in entries]
            for name, entries in config.mig_configs.items()
        }
    return yaml.dump(document, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False, width=1000)


def _entry_document(entry: MigConfigEntry) -> dict[str, Any]:
    document: dict[str, Any] = {}
    if entry.device_filter is not None:
        document["device-filter"] = (
            entry.device_filter if isinstance(entry.device_filter, str) else list(entry.device_filter)
        )
    document["devices"] = entry.devices if entry.devices == "all" else list(entry.devices)
    document["mig-enabled"] = entry.mig_enabled
    if entry.mig_devices is not None:
        document["mig-devices"] = dict(entry.mig_devices)
    return document


def single_layout_config(
    config_name: str, counts: Mapping[str, int], device_filter: str | None = None
) -> MigPartedConfig:
    """A config with one entry putting `counts` on every GPU (`devices: all`), optionally filtered.

    Profiles are ordered larger first. The format is validated as `parse` would; whether the layout
    fits a GPU is `check_fits`'s job (or `mig_geometry.fit_layout`'s before calling this).
    """
    if not config_name:
        raise MigPartedConfigError("config name must not be empty", key="mig-configs")
    path = f"mig-configs.{config_name}[0].mig-devices"
    if not counts:
        raise MigPartedConfigError("give at least one profile and its count", key=path)
    ordered = dict(sorted(counts.items(), key=lambda item: _profile_order(item[0])))
    mig_devices = _parse_mig_devices(ordered, path)
    return MigPartedConfig(
        mig_configs={
            config_name: (
                MigConfigEntry(
                    device_filter=device_filter, devices="all", mig_enabled=True, mig_devices=mig_devices
                ),
            )
        }
    )


def _profile_order(name: str) -> tuple[int, int, str]:
    try:
        profile = parse_profile_name(name)
    except ValueError:
        return (0, 0, name)  # reported by the format check that follows
    return (-profile.gpu_slices, -profile.memory_gb, name)
