"""Rendering the model back to a config file the plugin reads as written (`render`), checking a model by
rendering and re-parsing it (`validate_config`), and the builders the program uses (`time_slicing_config`,
`exclusive_config`), validated against every modelled plugin version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from gpushare.device_plugin.decode import parse
from gpushare.device_plugin.go_compat import STR_TAG, format_go_duration, go_yaml_resolve_plain
from gpushare.device_plugin.model import (
    MPS_ERA,
    PLUGIN_VERSIONS,
    DevicePluginConfig,
    Flags,
    ParseResult,
    ReplicatedResource,
    ReplicatedResources,
    Sharing,
    version_at_least,
)


def validate_config(
    config: DevicePluginConfig,
    plugin_version: str = "0.14.5",
    *,
    overrides: Mapping[str, object] | None = None,
    chart_supplies_mps_root: bool = False,
) -> ParseResult:
    """Check a model (e.g. one built by hand) by rendering it and parsing it back."""
    return parse(
        render(config), plugin_version, overrides=overrides, chart_supplies_mps_root=chart_supplies_mps_root
    )


class _GoSafeDumper(yaml.SafeDumper):
    """Quotes every string that go-yaml v2 *or* PyYAML would read as something else (`y`, `1e3`, `on`)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            go_tag = go_yaml_resolve_plain(value)[0]
            if go_tag != STR_TAG:
                return go_tag
        return super().resolve(kind, value, implicit)


def _render_replicated(replicated: ReplicatedResources) -> dict[str, object]:
    resources = []
    for resource in replicated.resources:
        entry: dict[str, object] = {"name": resource.name, "replicas": resource.replicas}
        if resource.devices != "all":
            entry["devices"] = (
                list(resource.devices) if isinstance(resource.devices, tuple) else resource.devices
            )
        if resource.rename is not None:
            entry["rename"] = resource.rename
        resources.append(entry)
    return _set_fields(
        [
            ("renameByDefault", replicated.rename_by_default),
            ("failRequestsGreaterThanOne", replicated.fail_requests_greater_than_one),
            ("resources", resources),
        ]
    )


def _set_fields(pairs: Iterable[tuple[str, object]]) -> dict[str, object]:
    return {key: value for key, value in pairs if value is not None}


def render(config: DevicePluginConfig) -> str:
    """Deterministic YAML: version, flags (Go struct order, set fields only), resources, sharing, imex."""
    flags = config.flags
    plugin, gfd = flags.plugin, flags.gfd
    plugin_doc = (
        _set_fields(
            [
                ("passDeviceSpecs", plugin.pass_device_specs),
                (
                    "deviceListStrategy",
                    None
                    if plugin.device_list_strategy is None
                    else (
                        plugin.device_list_strategy[0]
                        if len(plugin.device_list_strategy) == 1
                        else list(plugin.device_list_strategy)
                    ),
                ),
                ("deviceIDStrategy", plugin.device_id_strategy),
                ("cdiAnnotationPrefix", plugin.cdi_annotation_prefix),
                ("nvidiaCTKPath", plugin.nvidia_ctk_path),
                ("containerDriverRoot", plugin.container_driver_root),
                ("sharedDevicesAllocationPolicy", plugin.shared_devices_allocation_policy),
            ]
        )
        if plugin
        else {}
    )
    gfd_doc = (
        _set_fields(
            [
                ("oneshot", gfd.oneshot),
                ("noTimestamp", gfd.no_timestamp),
                (
                    "sleepInterval",
                    None if gfd.sleep_interval_ns is None else format_go_duration(gfd.sleep_interval_ns),
                ),
                ("outputFile", gfd.output_file),
                ("machineTypeFile", gfd.machine_type_file),
            ]
        )
        if gfd
        else {}
    )
    flags_doc = _set_fields(
        [
            ("migStrategy", flags.mig_strategy),
            ("failOnInitError", flags.fail_on_init_error),
            ("mpsRoot", flags.mps_root),
            ("nvidiaDriverRoot", flags.nvidia_driver_root),
            ("nvidiaDevRoot", flags.nvidia_dev_root),
            ("gdrcopyEnabled", flags.gdrcopy_enabled),
            ("gdsEnabled", flags.gds_enabled),
            ("mofedEnabled", flags.mofed_enabled),
            ("useNodeFeatureAPI", flags.use_node_feature_api),
            ("deviceDiscoveryStrategy", flags.device_discovery_strategy),
            ("plugin", plugin_doc or None),
            ("gfd", gfd_doc or None),
        ]
    )
    document: dict[str, object] = {"version": config.version}
    if flags_doc:
        document["flags"] = flags_doc
    resources = _set_fields(
        [
            ("gpus", [r.model_dump() for r in config.resources.gpus] or None),
            ("mig", [r.model_dump() for r in config.resources.mig] or None),
        ]
    )
    if resources:
        document["resources"] = resources
    sharing = _set_fields(
        [
            ("timeSlicing", config.sharing.time_slicing and _render_replicated(config.sharing.time_slicing)),
            ("mps", config.sharing.mps and _render_replicated(config.sharing.mps)),
        ]
    )
    if sharing:
        document["sharing"] = sharing
    if config.imex.channel_ids or config.imex.required:
        document["imex"] = _set_fields(
            [
                ("channelIDs", list(config.imex.channel_ids) or None),
                ("required", config.imex.required or None),
            ]
        )
    return yaml.dump(
        document, Dumper=_GoSafeDumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def time_slicing_config(
    resources: Sequence[tuple[str, int]],
    mig_strategy: str,
    fail_requests_greater_than_one: bool = True,
    rename_by_default: bool = False,
) -> DevicePluginConfig:
    """A time-slicing config both plugin versions accept. Names are qualified like the plugin does
    (`gpu` -> `nvidia.com/gpu`). Raises DevicePluginConfigError for anything the plugin would refuse
    (replicas < 2, no resources, a bad name or MIG strategy)."""
    draft = DevicePluginConfig(
        flags=Flags(mig_strategy=mig_strategy),
        sharing=Sharing(
            time_slicing=ReplicatedResources(
                rename_by_default=rename_by_default,
                fail_requests_greater_than_one=fail_requests_greater_than_one,
                resources=tuple(
                    ReplicatedResource(name=name, replicas=replicas) for name, replicas in resources
                ),
            )
        ),
    )
    return _validated_for_all_versions(draft)


def mps_config(resources: Sequence[tuple[str, int]], mps_root: str) -> DevicePluginConfig:
    """An MPS config (`sharing.mps`) the plugin versions with MPS accept (0.17.1 and later; 0.14.5 ignores
    the key and would share nothing, so it is not among them). `flags.mpsRoot` is written into the file so
    the file alone passes the plugin's `--mps-root` check (the charts' MPS_ROOT env says the same);
    `failRequestsGreaterThanOne` is true, as 0.17.1 forces and 0.20.0 defaults."""
    draft = DevicePluginConfig(
        flags=Flags(mig_strategy="none", mps_root=mps_root),
        sharing=Sharing(
            mps=ReplicatedResources(
                fail_requests_greater_than_one=True,
                resources=tuple(
                    ReplicatedResource(name=name, replicas=replicas) for name, replicas in resources
                ),
            )
        ),
    )
    parsed = [
        validate_config(draft, version).config
        for version in PLUGIN_VERSIONS
        if version_at_least(version, MPS_ERA)
    ]
    return parsed[0]


def exclusive_config(mig_strategy: str) -> DevicePluginConfig:
    """No sharing: every device is advertised once."""
    return _validated_for_all_versions(DevicePluginConfig(flags=Flags(mig_strategy=mig_strategy)))


def _validated_for_all_versions(draft: DevicePluginConfig) -> DevicePluginConfig:
    parsed = [validate_config(draft, version).config for version in PLUGIN_VERSIONS]
    return parsed[0]
