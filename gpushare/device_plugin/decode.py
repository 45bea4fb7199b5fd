"""Decoding a config file into the model as the plugin does at start-up (`parse`): encoding/json into the v1
structs with the custom unmarshalers of replicas.go/resources.go (the value rules for resource names and
device references are `gpushare.device_plugin.values`'), warnings for what the plugin accepts but ignores,
then flag resolution and validation.

One concern, kept whole (~560 lines): the decoder mirrors the v1 structs' unmarshalers field by field, and
splitting it would separate each struct's decoding from the ones it nests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gpushare.device_plugin.flags import check_flags, check_plugin_version, resolve_flags
from gpushare.device_plugin.go_compat import (
    go_fold,
    go_format_float32_g,
    go_json_number,
    go_json_text,
    go_parse_int,
    go_parse_uint,
    join_path,
    json_type_error,
    load_go_yaml_document,
    parse_go_duration,
    to_json_values,
)
from gpushare.device_plugin.model import (
    ALLOCATION_POLICY_ERA,
    API_VERSION,
    INFINITE_DURATION_NS,
    MPS_ERA,
    SHARED_RESOURCE_SUFFIX,
    DevicePluginConfig,
    DevicePluginConfigError,
    Devices,
    Flags,
    GfdFlags,
    Imex,
    ParseResult,
    PluginFlags,
    ReplicatedResource,
    ReplicatedResources,
    ResourcePattern,
    Resources,
    Sharing,
    version_at_least,
)
from gpushare.device_plugin.values import is_device_reference, qualify_resource_name
from gpushare.yaml_bounds import (
    YamlTooDeepError,
)

# --------------------------------------------------------------------------------------------------------
# The decoder: encoding/json into the v1 structs, with the custom unmarshalers of replicas.go/resources.go
# --------------------------------------------------------------------------------------------------------

_FieldDecoder = Callable[[object, object, str], object]
"""(JSON value, current Go value, path) -> new Go value; decoding merges into the current value like
encoding/json does when a key appears twice."""


def _json_int(value: object, go_type: str, path: str, *, unsigned: bool = False) -> int:
    """A JSON number into a Go integer: the literal must parse (no fraction, no exponent, in range)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        literal = go_json_number(value)
        parsed = go_parse_uint(literal, 10) if unsigned else go_parse_int(literal, 10)
        if parsed is not None:
            return parsed
        raise DevicePluginConfigError(
            f"json: cannot unmarshal number {literal} into Go value of type {go_type}", path
        )
    raise json_type_error(value, go_type, path)


def _string_pointer(value: object, current: object, path: str) -> object:
    if value is None or isinstance(value, str):
        return value
    raise json_type_error(value, "string", path)


def _bool_pointer(value: object, current: object, path: str) -> object:
    if value is None or isinstance(value, bool):
        return value
    raise json_type_error(value, "bool", path)


def _bool_value(value: object, current: object, path: str) -> object:
    return current if value is None else _bool_pointer(value, current, path)


def _device_list_strategy(value: object, current: object, path: str) -> object:
    """deviceListStrategyFlag.UnmarshalJSON: one string or a list of strings (a null item becomes "")."""
    if value is None or isinstance(value, str):
        return None if value is None else (value,)
    if isinstance(value, list) and all(item is None or isinstance(item, str) for item in value):
        return tuple(item or "" for item in value)
    raise DevicePluginConfigError(f"invalid deviceListStrategy: {go_json_text(value)}", path)


def _int_list(value: object, current: object, path: str) -> object:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise json_type_error(value, "[]int", path)
    return tuple(
        0 if item is None else _json_int(item, "int", f"{path}[{i}]") for i, item in enumerate(value)
    )


def _resource_name(value: object, path: str) -> str:
    """ResourceName.UnmarshalJSON: a JSON string (null counts as "") run through NewResourceName."""
    if value is not None and not isinstance(value, str):
        raise json_type_error(value, "string", path)
    try:
        return qualify_resource_name(value or "")
    except DevicePluginConfigError as exc:
        raise DevicePluginConfigError(exc.reason, path) from exc


def _raw_map(value: object, path: str) -> dict[str, object]:
    """What a custom unmarshaler gets from `json.Unmarshal(b, &map[string]json.RawMessage{})`: null is an
    empty map, anything but an object is a type error. Keys are looked up case-sensitively from here on."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise json_type_error(value, "map[string]json.RawMessage", path)
    return value


def _missing_key_hint(raw: Mapping[str, object], key: str) -> str:
    near = [k for k in raw if go_fold(k) == go_fold(key)]
    return f" (found {near[0]!r}: keys here are case-sensitive)" if near else ""


@dataclass
class _Decoder:
    plugin_version: str
    warnings: list[str] = field(default_factory=list)

    def has(self, release: str) -> bool:
        return version_at_least(self.plugin_version, release)

    def later_keys(self, keys_by_release: Mapping[str, Iterable[str]]) -> dict[str, str]:
        """{key: the release that introduced it} for the keys this version does not know yet."""
        return {
            key: release for release, keys in keys_by_release.items() if not self.has(release) for key in keys
        }

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}" if path else message)

    # plain structs -------------------------------------------------------------------------------------

    def plain_struct(
        self,
        value: object,
        fields: Mapping[str, _FieldDecoder],
        state: dict[str, object],
        path: str,
        go_type: str,
        later: Mapping[str, str] | None = None,
    ) -> dict[str, object]:
        """encoding/json into a struct: keys in sorted order (json.Marshal sorted them), exact match first,
        else case-insensitive; the last key matching a field wins; unknown keys are ignored (`later` names
        the keys a later plugin release knows, for a more helpful warning)."""
        if value is None:
            return state
        if not isinstance(value, dict):
            raise json_type_error(value, go_type, path or None)
        later = later or {}
        matched: dict[str, list[str]] = {}
        for key in sorted(value):
            child_path = join_path(path, key)
            name = key if key in fields else next((f for f in fields if go_fold(f) == go_fold(key)), None)
            if name is None:
                later_name = next((f for f in later if go_fold(f) == go_fold(key)), None)
                if later_name is not None:
                    self.warn(
                        child_path,
                        f"'{later_name}' needs plugin {later[later_name]} or later; "
                        f"{self.plugin_version} ignores it",
                    )
                else:
                    self.warn(child_path, "unknown key, ignored by the plugin")
                continue
            if name != key:
                self.warn(child_path, f"matched '{name}' case-insensitively; write '{name}'")
            matched.setdefault(name, []).append(key)
            state[name] = fields[name](value[key], state.get(name), child_path)
        for name, keys in matched.items():
            if len(keys) > 1:
                self.warn(
                    join_path(path, name),
                    f"set by {len(keys)} keys ({', '.join(keys)}); the plugin keeps the last in sorted order, "
                    f"'{keys[-1]}'",
                )
        return state

    def struct_pointer(
        self, fields: Mapping[str, _FieldDecoder], go_type: str, later: Mapping[str, str] | None = None
    ) -> _FieldDecoder:
        def decode(value: object, current: object, path: str) -> object:
            if value is None:
                return None
            state = dict(current) if isinstance(current, dict) else dict.fromkeys(fields)
            return self.plain_struct(value, fields, state, path, go_type, later)

        return decode

    def struct_value(
        self, fields: Mapping[str, _FieldDecoder], go_type: str, later: Mapping[str, str] | None = None
    ) -> _FieldDecoder:
        def decode(value: object, current: object, path: str) -> object:
            state = dict(current) if isinstance(current, dict) else {}
            return self.plain_struct(value, fields, state, path, go_type, later)

        return decode

    # the document --------------------------------------------------------------------------------------

    def config(self, document: object) -> DevicePluginConfig:
        plugin_fields: dict[str, _FieldDecoder] = {
            "passDeviceSpecs": _bool_pointer,
            "deviceListStrategy": _device_list_strategy,
            "deviceIDStrategy": _string_pointer,
            "cdiAnnotationPrefix": _string_pointer,
            "nvidiaCTKPath": _string_pointer,
            "containerDriverRoot": _string_pointer,
        }
        gfd_fields: dict[str, _FieldDecoder] = {
            "oneshot": _bool_pointer,
            "noTimestamp": _bool_pointer,
            "sleepInterval": self.duration,
            "outputFile": _string_pointer,
            "machineTypeFile": _string_pointer,
        }
        flag_fields: dict[str, _FieldDecoder] = {
            "migStrategy": _string_pointer,
            "failOnInitError": _bool_pointer,
            "nvidiaDriverRoot": _string_pointer,
            "gdsEnabled": _bool_pointer,
            "mofedEnabled": _bool_pointer,
        }
        sharing_fields: dict[str, _FieldDecoder] = {"timeSlicing": self.time_slicing}
        config_fields: dict[str, _FieldDecoder] = {"version": self.version}
        if self.has(MPS_ERA):
            flag_fields.update(
                mpsRoot=_string_pointer,
                nvidiaDevRoot=_string_pointer,
                useNodeFeatureAPI=_bool_pointer,
                deviceDiscoveryStrategy=_string_pointer,
            )
            sharing_fields["mps"] = self.mps
            config_fields["imex"] = self.struct_value(
                {"channelIDs": _int_list, "required": _bool_value}, "v1.Imex"
            )
        if self.has(ALLOCATION_POLICY_ERA):
            flag_fields["gdrcopyEnabled"] = _bool_pointer
            plugin_fields["sharedDevicesAllocationPolicy"] = _string_pointer
        # Keys of later releases are unknown (ignored) to earlier ones, but get a warning of their own.
        mps_era_flags = ("mpsRoot", "nvidiaDevRoot", "useNodeFeatureAPI", "deviceDiscoveryStrategy")
        flag_fields["plugin"] = self.struct_pointer(
            plugin_fields,
            "v1.PluginCommandLineFlags",
            self.later_keys({ALLOCATION_POLICY_ERA: ["sharedDevicesAllocationPolicy"]}),
        )
        flag_fields["gfd"] = self.struct_pointer(gfd_fields, "v1.GFDCommandLineFlags")
        config_fields["flags"] = self.struct_value(
            flag_fields,
            "v1.Flags",
            self.later_keys({MPS_ERA: mps_era_flags, ALLOCATION_POLICY_ERA: ["gdrcopyEnabled"]}),
        )
        config_fields["resources"] = self.struct_value(
            {"gpus": self.resource_patterns, "mig": self.resource_patterns}, "v1.Resources"
        )
        config_fields["sharing"] = self.struct_value(
            sharing_fields, "v1.Sharing", self.later_keys({MPS_ERA: ["mps"]})
        )
        top_level_later = self.later_keys({MPS_ERA: ["imex"]})

        if document is None:  # an empty file: JSON null leaves the zero Config
            document = {}
        if not isinstance(document, dict):
            raise json_type_error(document, "v1.Config", None)
        state = self.plain_struct(document, config_fields, {}, "", "v1.Config", top_level_later)

        version = state.get("version") or API_VERSION
        if version != API_VERSION:
            raise DevicePluginConfigError(f"unknown version: {version}", "version")
        return self.build_model(state)

    def duration(self, value: object, current: object, path: str) -> object:
        """Duration.UnmarshalJSON: a number of nanoseconds or a Go duration string (`infinite` from 0.20.0)."""
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, str):
            if value == "infinite" and self.has(ALLOCATION_POLICY_ERA):
                return INFINITE_DURATION_NS
            try:
                return parse_go_duration(value)
            except ValueError as exc:
                raise DevicePluginConfigError(str(exc), path) from exc
        raise DevicePluginConfigError("invalid duration", path)

    def version(self, value: object, current: object, path: str) -> object:
        """Config.Version is the one string field sigs.k8s.io/yaml coerces YAML numbers and booleans into."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return go_format_float32_g(value)
        if value is None:
            return current
        return _string_pointer(value, current, path)

    def resource_patterns(self, value: object, current: object, path: str) -> object:
        """[]Resource, each through Resource.UnmarshalJSON (pattern and name required)."""
        if value is None:
            return ()
        if not isinstance(value, list):
            raise json_type_error(value, "[]v1.Resource", path)
        entries = []
        for index, item in enumerate(value):
            item_path = f"{path}[{index}]"
            raw = _raw_map(item, item_path)
            for key in ("pattern", "name"):
                if key not in raw:
                    raise DevicePluginConfigError(
                        f"resources must have a '{key}' field set{_missing_key_hint(raw, key)}", item_path
                    )
            self.warn_unknown_keys(raw, ("pattern", "name"), item_path)
            pattern = raw["pattern"]
            if pattern is not None and not isinstance(pattern, str):
                raise json_type_error(pattern, "v1.ResourcePattern", f"{item_path}.pattern")
            name = _resource_name(raw["name"], f"{item_path}.name")
            entries.append(ResourcePattern(pattern=pattern or "", name=name))
        return tuple(entries)

    def time_slicing(self, value: object, current: object, path: str) -> object:
        # A non-pointer struct with UnmarshalJSON: even `timeSlicing: null` reaches the method.
        return self.replicated_resources(value, path)

    def mps(self, value: object, current: object, path: str) -> object:
        # A pointer: null leaves it nil, so MPS stays off.
        if value is None:
            return None
        section = self.replicated_resources(value, path)
        if section["failRequestsGreaterThanOne"] is None:
            section["failRequestsGreaterThanOne"] = True  # NewConfig's default for MPS (0.20.0)
        return section

    def replicated_resources(self, value: object, path: str) -> dict[str, object]:
        """ReplicatedResources.UnmarshalJSON (replicas.go)."""
        raw = _raw_map(value, path)
        known = ("renameByDefault", "failRequestsGreaterThanOne", "resources")
        flags: dict[str, bool | None] = {}
        for key in known[:2]:
            flag = raw.get(key, False)
            if flag is not None and not isinstance(flag, bool):
                raise json_type_error(flag, "bool", join_path(path, key))
            flags[key] = bool(flag)
        if self.has(ALLOCATION_POLICY_ERA):
            # A *bool from 0.20.0: absent and null both leave it unset.
            flag = raw.get("failRequestsGreaterThanOne")
            flags["failRequestsGreaterThanOne"] = flag if isinstance(flag, bool) else None
        if "resources" not in raw:
            raise DevicePluginConfigError(
                f"no resources specified{_missing_key_hint(raw, 'resources')}", path
            )
        self.warn_unknown_keys(raw, known, path)
        resources_path = join_path(path, "resources")
        items = raw["resources"]
        if items is not None and not isinstance(items, list):
            raise json_type_error(items, "[]v1.ReplicatedResource", resources_path)
        resources = [
            self.replicated_resource(item, f"{resources_path}[{i}]") for i, item in enumerate(items or [])
        ]
        if not resources:
            raise DevicePluginConfigError("no resources specified", resources_path)
        return {**flags, "resources": resources}

    def replicated_resource(self, value: object, path: str) -> dict[str, object]:
        """ReplicatedResource.UnmarshalJSON: name, devices, replicas, rename, in that order."""
        raw = _raw_map(value, path)
        if "name" not in raw:
            raise DevicePluginConfigError(f"no resource name specified{_missing_key_hint(raw, 'name')}", path)
        name = _resource_name(raw["name"], join_path(path, "name"))
        devices = self.devices(raw["devices"], join_path(path, "devices")) if "devices" in raw else "all"
        if "replicas" not in raw:
            raise DevicePluginConfigError(f"no replicas specified{_missing_key_hint(raw, 'replicas')}", path)
        replicas_path = join_path(path, "replicas")
        replicas = 0 if raw["replicas"] is None else _json_int(raw["replicas"], "int", replicas_path)
        if replicas < 2:
            raise DevicePluginConfigError("number of replicas must be >= 2", replicas_path)
        rename = _resource_name(raw["rename"], join_path(path, "rename")) if "rename" in raw else None
        self.warn_unknown_keys(raw, ("name", "devices", "replicas", "rename"), path)
        return {"name": name, "replicas": replicas, "devices": devices, "rename": rename}

    def devices(self, value: object, path: str) -> Devices:
        """ReplicatedDevices.UnmarshalJSON: tries a string, then an int, then a list."""
        if value is None or isinstance(value, str):
            text = value or ""
            if text != "all":
                raise DevicePluginConfigError(
                    f"devices set as '{text}' but the only valid string input is 'all'", path
                )
            return "all"
        if isinstance(value, int | float) and not isinstance(value, bool):
            count = go_parse_int(go_json_number(value), 10)
            if count is not None:
                if count <= 0:
                    raise DevicePluginConfigError(
                        f"devices set as '{count}' but a count of devices must be > 0", path
                    )
                return count
        if not isinstance(value, list):
            raise DevicePluginConfigError(f"unrecognized type for devices spec: {go_json_text(value)}", path)
        references = []
        for index, item in enumerate(value):
            if item is None:  # json null into a uint leaves it 0
                references.append("0")
                continue
            if isinstance(item, int | float) and not isinstance(item, bool):
                gpu_index = go_parse_uint(go_json_number(item), 10)
                if gpu_index is not None:
                    references.append(str(gpu_index))
                    continue
            if isinstance(item, str) and is_device_reference(item):
                references.append(item)
                continue
            shown = item if isinstance(item, str) else ""
            raise DevicePluginConfigError(
                f"unsupported type for device in devices list: {shown}, string", f"{path}[{index}]"
            )
        return tuple(references)

    def warn_unknown_keys(self, raw: Mapping[str, object], known: Sequence[str], path: str) -> None:
        for key in sorted(raw):
            if key not in known:
                hint = next(
                    (
                        f"; did you mean '{k}'? keys here are case-sensitive"
                        for k in known
                        if go_fold(k) == go_fold(key)
                    ),
                    "",
                )
                self.warn(join_path(path, key), f"unknown key, ignored by the plugin{hint}")

    # the model -----------------------------------------------------------------------------------------

    def build_model(self, state: Mapping[str, Any]) -> DevicePluginConfig:
        flags = state.get("flags") or {}
        plugin, gfd = flags.get("plugin"), flags.get("gfd")
        sharing = state.get("sharing") or {}
        resources = state.get("resources") or {}
        imex = state.get("imex") or {}
        config = DevicePluginConfig(
            flags=Flags(
                mig_strategy=flags.get("migStrategy"),
                fail_on_init_error=flags.get("failOnInitError"),
                mps_root=flags.get("mpsRoot"),
                nvidia_driver_root=flags.get("nvidiaDriverRoot"),
                nvidia_dev_root=flags.get("nvidiaDevRoot"),
                gdrcopy_enabled=flags.get("gdrcopyEnabled"),
                gds_enabled=flags.get("gdsEnabled"),
                mofed_enabled=flags.get("mofedEnabled"),
                use_node_feature_api=flags.get("useNodeFeatureAPI"),
                device_discovery_strategy=flags.get("deviceDiscoveryStrategy"),
                plugin=_none_if_empty(
                    PluginFlags(
                        pass_device_specs=plugin.get("passDeviceSpecs"),
                        device_list_strategy=plugin.get("deviceListStrategy"),
                        device_id_strategy=plugin.get("deviceIDStrategy"),
                        cdi_annotation_prefix=plugin.get("cdiAnnotationPrefix"),
                        nvidia_ctk_path=plugin.get("nvidiaCTKPath"),
                        container_driver_root=plugin.get("containerDriverRoot"),
                        shared_devices_allocation_policy=plugin.get("sharedDevicesAllocationPolicy"),
                    )
                )
                if plugin
                else None,
                gfd=_none_if_empty(
                    GfdFlags(
                        oneshot=gfd.get("oneshot"),
                        no_timestamp=gfd.get("noTimestamp"),
                        sleep_interval_ns=gfd.get("sleepInterval"),
                        output_file=gfd.get("outputFile"),
                        machine_type_file=gfd.get("machineTypeFile"),
                    )
                )
                if gfd
                else None,
            ),
            resources=Resources(gpus=resources.get("gpus") or (), mig=resources.get("mig") or ()),
            sharing=Sharing(
                time_slicing=_replicated_model(sharing.get("timeSlicing")),
                mps=_replicated_model(sharing.get("mps")),
            ),
            imex=Imex(channel_ids=imex.get("channelIDs") or (), required=bool(imex.get("required"))),
        )
        self.warn_runtime_ignored(config)
        return config

    def warn_runtime_ignored(self, config: DevicePluginConfig) -> None:
        """What the plugin parses but drops at start-up (DisableResourceNamingInConfig) or never uses."""
        if config.resources.gpus or config.resources.mig:
            self.warn("resources", "customizing 'resources' is not supported by the plugin; ignored")
        sections = (("timeSlicing", config.sharing.time_slicing), ("mps", config.sharing.mps))
        for section, replicated in sections:
            if replicated is None:
                continue
            path = f"sharing.{section}.resources"
            seen: dict[str, int] = {}
            for index, resource in enumerate(replicated.resources):
                default_rename = resource.name + SHARED_RESOURCE_SUFFIX
                if resource.rename is not None and not (
                    replicated.rename_by_default and resource.rename == default_rename
                ):
                    effective = default_rename if replicated.rename_by_default else resource.name
                    self.warn(
                        f"{path}[{index}].rename",
                        f"'rename' is not supported by the plugin; ignored (advertised as '{effective}')",
                    )
                if resource.devices != "all":
                    self.warn(
                        f"{path}[{index}].devices",
                        "'devices' is not supported by the plugin; ignored (all devices are shared)",
                    )
                if resource.name in seen:
                    self.warn(
                        f"{path}[{index}].name",
                        f"duplicate of {path}[{seen[resource.name]}] ('{resource.name}'); the plugin processes "
                        "both, the larger replica count takes effect and GFD labels show the first",
                    )
                seen.setdefault(resource.name, index)
        if config.sharing.mps is not None:
            if config.sharing.time_slicing is not None:
                self.warn("sharing.timeSlicing", "ignored: 'mps' takes precedence over 'timeSlicing'")
            if not config.sharing.mps.fail_requests_greater_than_one and not self.has(ALLOCATION_POLICY_ERA):
                self.warn(
                    "sharing.mps.failRequestsGreaterThanOne",
                    f"plugin {self.plugin_version} forces this to true for MPS (0.20.0 honours false)",
                )


_FlagGroup = TypeVar("_FlagGroup", PluginFlags, GfdFlags)


def _none_if_empty(model: _FlagGroup) -> _FlagGroup | None:
    """`plugin: {}` and no `plugin` mean the same to the plugin; keep one form so render round-trips."""
    return None if all(v is None for v in model.model_dump().values()) else model


def _replicated_model(state: Mapping[str, Any] | None) -> ReplicatedResources | None:
    if state is None:
        return None
    return ReplicatedResources(
        rename_by_default=state["renameByDefault"],
        fail_requests_greater_than_one=state["failRequestsGreaterThanOne"],
        resources=tuple(ReplicatedResource(**r) for r in state["resources"]),
    )


# --------------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------------


def parse(
    text: str,
    plugin_version: str = "0.14.5",
    *,
    overrides: Mapping[str, object] | None = None,
    chart_supplies_mps_root: bool = False,
) -> ParseResult:
    """Parse and validate a config file as plugin `plugin_version` does at start-up, with no CLI flags or
    env vars unless `overrides` says otherwise (they can make a file valid: MIG_STRATEGY=single rescues
    `migStrategy: bogus`). Raises DevicePluginConfigError exactly when the plugin would refuse to start,
    and YamlTooDeepError (no verdict) for nesting deeper than this checker follows."""
    check_plugin_version(plugin_version)
    try:
        document = load_go_yaml_document(text)
        decoder = _Decoder(plugin_version)
        config = decoder.config(to_json_values(document, ""))
    except RecursionError:  # JSON input, or our own walks, deeper than Python follows
        raise YamlTooDeepError() from None
    flags, overridden = resolve_flags(config, overrides, plugin_version, chart_supplies_mps_root)
    check_flags(config, flags, plugin_version, overridden)
    return ParseResult(
        config=config, warnings=decoder.warnings, plugin_version=plugin_version, effective_flags=flags
    )
