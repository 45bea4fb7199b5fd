"""Device-plugin config files, wherever they are: found by content, read the way the plugin reads them.

- `ConfigSource`: the config files one resource holds: any ConfigMap whose data values are plugin configs
  (a YAML mapping with `sharing` or `flags`), or the `values.config.map` of NVIDIA's Helm chart; with the
  `gpushare.io/tuning-<key>` provenance annotations that travel with them.
- `PluginConfigView`: one file as the plugin reads it (`gpushare.device_plugin`), plus a lenient
  reading of its time-slicing entries, so that the rules can still name the entries of a refused file.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import yaml

from gpushare import device_plugin, kube_names
from gpushare.device_plugin import DevicePluginConfig, DevicePluginConfigError, EffectiveFlags
from gpushare.errors import GpushareError
from gpushare.resource_types import CONFIG_MAP, is_chart_rendered
from gpushare.yaml_bounds import YamlBoundError, YamlTooDeepError, safe_load_bounded
from gpushare_policies.props import UNKNOWN, Resource, dig, integer, mapping, string_map, text

DEFAULT_PLUGIN_VERSION: Final = "0.14.5"
NEWEST_PLUGIN_VERSION: Final = device_plugin.PLUGIN_VERSIONS[-1]
# 0.15.0 restructured the plugin (GFD and MPS moved in, the chart got its default node affinity): versions
# other than the two modelled are checked with the rules of the one on their side of it.
RESTRUCTURED_IN: Final = (0, 15, 0)
# What PyYAML raises on text that is not YAML: besides YAMLError, constructor errors such as
# `date: 2025-13-45` (ValueError); and what go-yaml would refuse (aliasing) or is too deep to follow.
# Such text is simply not a config file.
YAML_FAILURES: Final = (
    yaml.YAMLError,
    ValueError,
    TypeError,
    OverflowError,
    YamlBoundError,
    YamlTooDeepError,
)
_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)")  # ASCII digits, as Helm and Go parse versions


# --------------------------------------------------------------------------------------------------------
# Versions


def parse_version(value: str | None) -> tuple[int, int, int] | None:
    match = _VERSION.match(value or "")
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def modelled_plugin_version(version: tuple[int, int, int] | None, default: str) -> str:
    """The plugin version whose rules `device_plugin` applies: the exact tag when it is modelled, else
    the newest modelled one before it on the same side of 0.15 (the config API changed shape there), else the
    oldest modelled one after 0.15."""
    if version is None:
        return default
    if version < RESTRUCTURED_IN:
        return DEFAULT_PLUGIN_VERSION
    restructured = [
        v for v in device_plugin.PLUGIN_VERSIONS if (parse_version(v) or (0, 0, 0)) >= RESTRUCTURED_IN
    ]
    earlier = [v for v in restructured if (parse_version(v) or (0, 0, 0)) <= version]
    return earlier[-1] if earlier else restructured[0]


def image_version(image: str | None) -> tuple[int, int, int] | None:
    if not image:
        return None
    tag = image.split("@", 1)[0].rpartition("/")[2].partition(":")[2]
    return parse_version(tag)


# --------------------------------------------------------------------------------------------------------
# Config files


@functools.lru_cache(maxsize=1024)
def looks_like_plugin_config(content: str) -> bool:
    """A YAML mapping with `sharing` or `flags` (matched case-insensitively, as the plugin does)."""
    try:
        document = safe_load_bounded(content)
    except YAML_FAILURES:
        return False
    return isinstance(document, dict) and any(str(key).lower() in ("sharing", "flags") for key in document)


@dataclass(frozen=True)
class SharedEntry:
    """One `sharing.timeSlicing.resources` item."""

    resource_name: str
    replicas: int | None
    """None when the file's value is not an integer (the validator reports it)."""


@dataclass(frozen=True)
class PluginConfigView:
    text: str
    config: DevicePluginConfig | None
    error: DevicePluginConfigError | None
    time_slicing: bool
    shared: tuple[SharedEntry, ...]
    fail_requests_greater_than_one: bool
    file_mig_strategy: str | None

    def effective_flags(self, overrides: Mapping[str, object], plugin_version: str) -> EffectiveFlags | None:
        """The flags the plugin runs with; None when it refuses the file or the overrides."""
        if self.config is None:
            return None
        try:
            return device_plugin.effective_flags(self.config, overrides, plugin_version=plugin_version)
        except GpushareError:
            return None

    def effective_mig_strategy(self, overrides: Mapping[str, object], plugin_version: str) -> str | None:
        flags = self.effective_flags(overrides, plugin_version)
        return flags.mig_strategy if flags is not None else None


@functools.lru_cache(maxsize=256)
def read_plugin_config(content: str, plugin_version: str = DEFAULT_PLUGIN_VERSION) -> PluginConfigView:
    try:
        parsed = device_plugin.parse(content, plugin_version)
    except DevicePluginConfigError as err:
        return _raw_view(content, err)
    except GpushareError as err:
        return _raw_view(content, DevicePluginConfigError(err.message))
    time_slicing = parsed.config.sharing.time_slicing
    return PluginConfigView(
        text=content,
        config=parsed.config,
        error=None,
        time_slicing=time_slicing is not None,
        shared=tuple(SharedEntry(r.name, r.replicas) for r in time_slicing.resources) if time_slicing else (),
        fail_requests_greater_than_one=bool(time_slicing and time_slicing.fail_requests_greater_than_one),
        file_mig_strategy=parsed.config.flags.mig_strategy,
    )


def _key(document: object, name: str) -> Any:
    """A plain-struct key as the plugin matches it: exact, else case-insensitive."""
    if not isinstance(document, dict):
        return None
    if name in document:
        return document[name]
    return next((v for k, v in document.items() if str(k).lower() == name.lower()), None)


def _raw_view(content: str, error: DevicePluginConfigError) -> PluginConfigView:
    """What a refused file says, read leniently, so `replicas: 1` is still named as such."""
    try:
        document = safe_load_bounded(content)
    except YAML_FAILURES:
        document = None
    time_slicing = _key(_key(document, "sharing"), "timeSlicing")
    resources = time_slicing.get("resources") if isinstance(time_slicing, dict) else None
    entries = []
    for item in resources if isinstance(resources, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        try:
            name = device_plugin.qualify_resource_name(item["name"])
        except DevicePluginConfigError:
            name = item["name"]
        entries.append(SharedEntry(name, integer(item.get("replicas"))))
    strategy = _key(_key(document, "flags"), "migStrategy")
    return PluginConfigView(
        text=content,
        config=None,
        error=error,
        time_slicing=isinstance(time_slicing, dict),
        shared=tuple(entries),
        fail_requests_greater_than_one=isinstance(time_slicing, dict)
        and time_slicing.get("failRequestsGreaterThanOne") is True,
        file_mig_strategy=strategy if isinstance(strategy, str) else None,
    )


def asks_for_mps(content: str) -> bool:
    """The file holds `sharing.mps` (whatever the plugin reading it makes of it: 0.14.5 ignores it)."""
    try:
        document = safe_load_bounded(content)
    except YAML_FAILURES:
        return False
    return isinstance(_key(_key(document, "sharing"), "mps"), dict)


def provenance_of(annotations: Mapping[str, str], key: str) -> dict[str, Any] | None:
    """The `gpushare.io/tuning-<key>` JSON (gpushare/plugin_configs.py writes it), if readable."""
    raw = annotations.get(kube_names.tuning_annotation(key))
    if raw is None:
        return None
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


@dataclass(frozen=True)
class ConfigSource:
    """Device-plugin config files held by one resource: a ConfigMap, or a Helm release's `config.map`."""

    resource: Resource
    kind: Literal["ConfigMap", "Helm release"]
    namespace: str
    name: str
    data: Mapping[str, str]
    """Every known string entry (ConfigMap `data`, chart `config.map`)."""
    keys_known: bool
    """False when the data, or one of its entries, is unknown (preview)."""
    annotations: Mapping[str, str]
    """Where provenance lives: ConfigMap annotations, or the chart's `podAnnotations`."""
    plugin_version: str = DEFAULT_PLUGIN_VERSION
    overrides: Mapping[str, object] = field(default_factory=dict)
    """Flags that beat every file of this source (the chart's top-level values, rendered as env vars)."""

    def describe(self) -> str:
        if self.kind == "ConfigMap":
            return f"ConfigMap {self.namespace}/{self.name}"
        return f"Helm release {self.namespace}/{self.name} config.map"

    def where(self, key: str) -> str:
        return f'{self.describe()} key "{key}"'

    def plugin_configs(self) -> dict[str, str]:
        """The entries that are device-plugin config files: by content in a ConfigMap, all of a chart map."""
        if self.kind == "Helm release":
            return dict(self.data)
        return {key: value for key, value in self.data.items() if looks_like_plugin_config(value)}

    def provenance(self, key: str) -> dict[str, Any] | None:
        return provenance_of(self.annotations, key)


def config_map_source(res: Resource) -> ConfigSource | None:
    # A chart's ConfigMaps (passed by the offline check) hold what the Release's values say, and the rules
    # read those from the Release: one finding, on what the stack controls, with or without them.
    if res.type != CONFIG_MAP or is_chart_rendered(res.urn):
        return None
    data = res.props.get("data")
    entries = mapping(data)
    return ConfigSource(
        resource=res,
        kind="ConfigMap",
        namespace=text(dig(res.props, "metadata", "namespace")) or "default",
        name=text(dig(res.props, "metadata", "name")) or res.name,
        data={k: v for k, v in entries.items() if isinstance(v, str)},
        keys_known=data is not UNKNOWN and UNKNOWN not in entries.values(),
        annotations=string_map(dig(res.props, "metadata", "annotations")),
    )
