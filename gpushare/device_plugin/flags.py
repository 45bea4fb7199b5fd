"""The plugin's command-line flags and their resolution: the flag table per version (config-file key, CLI
names, env names, default), the CLI/env overrides a container's `args` and `env` set (`flag_overrides`),
the merge CLI > env > file > default (`effective_flags`), and `validateFlags`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from gpushare.device_plugin.model import (
    ALLOCATION_POLICY_ERA,
    CHART_MPS_ROOT,
    DEVICE_DISCOVERY_STRATEGIES,
    DEVICE_ID_STRATEGIES,
    MIG_STRATEGIES,
    MPS_ERA,
    PLUGIN_VERSIONS,
    SHARED_DEVICES_ALLOCATION_POLICIES,
    DevicePluginConfig,
    DevicePluginConfigError,
    EffectiveFlags,
    FlagOverride,
    PluginFlags,
    device_list_strategies,
    version_at_least,
)
from gpushare.errors import GpushareError

# --------------------------------------------------------------------------------------------------------
# Flags: defaults, CLI/env overrides, and validateFlags
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FlagSpec:
    name: str
    """Config-file key (under `flags`, or `flags.plugin` when `in_plugin`)."""
    attribute: str
    """Attribute on Flags/PluginFlags and EffectiveFlags."""
    kind: Literal["string", "bool", "string_list"]
    default: object
    cli_names: tuple[str, ...]
    env_names: tuple[str, ...]
    in_plugin: bool = False
    newer_only: bool = False


def _flag_specs(plugin_version: str) -> tuple[_FlagSpec, ...]:
    """The plugin's CLI flags that map onto the config file (cmd/nvidia-device-plugin/main.go per tag)."""
    newer = version_at_least(plugin_version, MPS_ERA)
    specs = [
        _FlagSpec("migStrategy", "mig_strategy", "string", "none", ("mig-strategy",), ("MIG_STRATEGY",)),
        _FlagSpec(
            "failOnInitError",
            "fail_on_init_error",
            "bool",
            True,
            ("fail-on-init-error",),
            ("FAIL_ON_INIT_ERROR",),
        ),
        _FlagSpec(
            "nvidiaDriverRoot",
            "nvidia_driver_root",
            "string",
            "/",
            ("driver-root", "nvidia-driver-root") if newer else ("nvidia-driver-root",),
            ("NVIDIA_DRIVER_ROOT",),
        ),
        _FlagSpec("gdsEnabled", "gds_enabled", "bool", False, ("gds-enabled",), ("GDS_ENABLED",)),
        _FlagSpec("mofedEnabled", "mofed_enabled", "bool", False, ("mofed-enabled",), ("MOFED_ENABLED",)),
        _FlagSpec(
            "passDeviceSpecs",
            "pass_device_specs",
            "bool",
            False,
            ("pass-device-specs",),
            ("PASS_DEVICE_SPECS",),
            in_plugin=True,
        ),
        _FlagSpec(
            "deviceListStrategy",
            "device_list_strategy",
            "string_list",
            ("envvar",),
            ("device-list-strategy",),
            ("DEVICE_LIST_STRATEGY",),
            in_plugin=True,
        ),
        _FlagSpec(
            "deviceIDStrategy",
            "device_id_strategy",
            "string",
            "uuid",
            ("device-id-strategy",),
            ("DEVICE_ID_STRATEGY",),
            in_plugin=True,
        ),
        _FlagSpec(
            "cdiAnnotationPrefix",
            "cdi_annotation_prefix",
            "string",
            "cdi.k8s.io/",
            ("cdi-annotation-prefix",),
            ("CDI_ANNOTATION_PREFIX",),
            in_plugin=True,
        ),
        _FlagSpec(
            "nvidiaCTKPath",
            "nvidia_ctk_path",
            "string",
            "/usr/bin/nvidia-ctk",
            ("nvidia-cdi-hook-path", "nvidia-ctk-path") if newer else ("nvidia-ctk-path",),
            ("NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH") if newer else ("NVIDIA_CTK_PATH",),
            in_plugin=True,
        ),
        _FlagSpec(
            "containerDriverRoot",
            "container_driver_root",
            "string",
            "/driver-root",
            ("driver-root-ctr-path", "container-driver-root") if newer else ("container-driver-root",),
            ("DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT") if newer else ("CONTAINER_DRIVER_ROOT",),
            in_plugin=True,
        ),
    ]
    if newer:
        specs += [
            _FlagSpec("mpsRoot", "mps_root", "string", "", ("mps-root",), ("MPS_ROOT",), newer_only=True),
            # No CLI default: NewConfig falls back to the driver root when this ends up empty.
            _FlagSpec(
                "nvidiaDevRoot",
                "nvidia_dev_root",
                "string",
                "",
                ("dev-root", "nvidia-dev-root"),
                ("NVIDIA_DEV_ROOT",),
                newer_only=True,
            ),
            _FlagSpec(
                "deviceDiscoveryStrategy",
                "device_discovery_strategy",
                "string",
                "auto",
                ("device-discovery-strategy",),
                ("DEVICE_DISCOVERY_STRATEGY",),
                newer_only=True,
            ),
        ]
    if version_at_least(plugin_version, ALLOCATION_POLICY_ERA):
        specs += [
            _FlagSpec(
                "gdrcopyEnabled",
                "gdrcopy_enabled",
                "bool",
                False,
                ("gdrcopy-enabled",),
                ("GDRCOPY_ENABLED",),
                newer_only=True,
            ),
            _FlagSpec(
                "sharedDevicesAllocationPolicy",
                "shared_devices_allocation_policy",
                "string",
                "distributed",
                ("shared-devices-allocation-policy",),
                ("SHARED_DEVICES_ALLOCATION_POLICY",),
                in_plugin=True,
                newer_only=True,
            ),
        ]
    return tuple(specs)


# CLI flags of the plugin that do not map onto the config file; known so that they are not "undefined".
_OTHER_CLI_FLAGS: dict[str, dict[str, str]] = {
    "0.14.5": {"config-file": "string", "help": "bool", "h": "bool", "version": "bool", "v": "bool"},
    "0.17.1": {
        "config-file": "string",
        "kubelet-socket": "string",
        "imex-channel-ids": "string",
        "imex-required": "bool",
        "help": "bool",
        "h": "bool",
        "version": "bool",
        "v": "bool",
    },
    "0.20.0": {
        "config-file": "string",
        "kubelet-socket": "string",
        "imex-channel-ids": "string",
        "imex-required": "bool",
        "cdi-feature-flags": "string",
        "cdi-disable-hooks": "string",
        "help": "bool",
        "h": "bool",
        "version": "bool",
        "v": "bool",
    },
}


def check_plugin_version(plugin_version: str) -> None:
    if plugin_version not in PLUGIN_VERSIONS:
        raise GpushareError(
            f"unsupported device-plugin version {plugin_version!r}; known: {', '.join(PLUGIN_VERSIONS)}"
        )


def _flag_path(spec: _FlagSpec) -> str:
    return f"flags.plugin.{spec.name}" if spec.in_plugin else f"flags.{spec.name}"


def _normalise_overrides(overrides: Mapping[str, object], plugin_version: str) -> dict[str, object]:
    """Accepts config-file flag names (`migStrategy`, `deviceListStrategy` or `plugin.deviceListStrategy`)."""
    specs = {spec.name: spec for spec in _flag_specs(plugin_version)}
    normalised: dict[str, object] = {}
    for key, value in overrides.items():
        name = key.removeprefix("plugin.")
        spec = specs.get(name)
        if spec is None or (key.startswith("plugin.") and not spec.in_plugin):
            raise GpushareError(
                f"unknown device-plugin {plugin_version} flag override {key!r}; known: {', '.join(specs)}"
            )
        if spec.kind == "bool" and not isinstance(value, bool):
            raise GpushareError(f"flag override {key!r} must be a bool, got {value!r}")
        if spec.kind == "string" and not isinstance(value, str):
            raise GpushareError(f"flag override {key!r} must be a string, got {value!r}")
        if spec.kind == "string_list":
            if isinstance(value, str):
                value = (value,)
            elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
                value = tuple(value)
            else:
                raise GpushareError(
                    f"flag override {key!r} must be a string or a list of strings, got {value!r}"
                )
        normalised[name] = value
    return normalised


def _go_parse_bool(text: str) -> bool | None:
    """strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def flag_overrides(
    args: Sequence[str] = (), env: Mapping[str, str] | None = None, plugin_version: str = "0.14.5"
) -> dict[str, object]:
    """The config-file flags that a device-plugin container's `args` and `env` set, CLI winning over env
    (urfave/cli v2 semantics: a set env var counts even when empty; a string-slice flag splits on commas;
    flag parsing stops at the first non-flag argument). The result feeds `overrides=` of `parse` and
    `effective_flags`. Raises GpushareError where the plugin itself would refuse its command line."""
    check_plugin_version(plugin_version)
    specs = _flag_specs(plugin_version)
    by_cli_name = {name: spec for spec in specs for name in spec.cli_names}
    other_flags = _OTHER_CLI_FLAGS[plugin_version]
    overrides: dict[str, object] = {}

    for spec in specs:
        env_name = next((n for n in spec.env_names if env is not None and n in env), None)
        if env_name is None or env is None:
            continue
        raw = env[env_name]
        if spec.kind == "bool":
            parsed = _go_parse_bool(raw) if raw else False
            if parsed is None:
                raise GpushareError(
                    f"could not parse {raw!r} as bool value from environment variable {env_name!r}"
                )
            overrides[spec.name] = parsed
        elif spec.kind == "string_list":
            overrides[spec.name] = tuple(part.strip() for part in raw.split(","))
        else:
            overrides[spec.name] = raw

    from_cli: dict[str, object] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            break  # Go's flag package stops at the first positional argument
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if not name or name[0] in "-=":
            raise GpushareError(f"bad flag syntax: {arg}")
        name, has_value, value = name.partition("=")
        cli_spec = by_cli_name.get(name)
        kind = cli_spec.kind if cli_spec is not None else other_flags.get(name)
        if kind is None:
            raise GpushareError(f"flag provided but not defined: -{name}")
        if kind == "bool":
            parsed_bool = _go_parse_bool(value) if has_value else True
            if parsed_bool is None:
                raise GpushareError(f"invalid boolean value {value!r} for -{name}")
            if cli_spec is not None:
                from_cli[cli_spec.name] = parsed_bool
            continue
        if not has_value:
            if index >= len(args):
                raise GpushareError(f"flag needs an argument: -{name}")
            value, index = args[index], index + 1
        if cli_spec is None:
            continue
        if cli_spec.kind == "string_list":
            # Repeated list flags accumulate; the first CLI value discards the env value.
            previous = from_cli.get(cli_spec.name, ())
            assert isinstance(previous, tuple)
            from_cli[cli_spec.name] = (*previous, *value.split(","))
        else:
            from_cli[cli_spec.name] = value
    overrides.update(from_cli)
    return overrides


def effective_flags(
    config: DevicePluginConfig,
    overrides: Mapping[str, object] | None = None,
    *,
    plugin_version: str = "0.14.5",
    chart_supplies_mps_root: bool = False,
) -> EffectiveFlags:
    """The flags the plugin runs with: an override (CLI > env, see `flag_overrides`) beats the file, which
    beats the CLI default (`updateFromCLIFlag`: the default applies only where the file left a flag unset).

    `chart_supplies_mps_root` models the v0.17.1 chart, which always sets MPS_ROOT (an env var, so it beats
    the file); by default nothing supplies it and the file's `flags.mpsRoot` must."""
    return resolve_flags(config, overrides, plugin_version, chart_supplies_mps_root)[0]


def resolve_flags(
    config: DevicePluginConfig,
    overrides: Mapping[str, object] | None,
    plugin_version: str,
    chart_supplies_mps_root: bool,
) -> tuple[EffectiveFlags, frozenset[str]]:
    """The effective flags and the names of the flags whose value came from an override."""
    check_plugin_version(plugin_version)
    normalised = _normalise_overrides(overrides or {}, plugin_version)
    if chart_supplies_mps_root and version_at_least(plugin_version, MPS_ERA):
        normalised.setdefault("mpsRoot", CHART_MPS_ROOT)
    plugin_flags = config.flags.plugin or PluginFlags()
    values: dict[str, object] = {}
    replaced: list[FlagOverride] = []
    for spec in _flag_specs(plugin_version):
        file_value = getattr(plugin_flags if spec.in_plugin else config.flags, spec.attribute)
        if spec.name in normalised:
            values[spec.attribute] = normalised[spec.name]
            if file_value is not None:
                replaced.append(
                    FlagOverride(name=spec.name, file_value=file_value, effective_value=normalised[spec.name])
                )
        else:
            values[spec.attribute] = spec.default if file_value is None else file_value
    if version_at_least(plugin_version, MPS_ERA) and not values["nvidia_dev_root"]:
        values["nvidia_dev_root"] = values["nvidia_driver_root"]
    values["overridden"] = tuple(replaced)
    return EffectiveFlags.model_validate(values), frozenset(normalised)


def check_flags(
    config: DevicePluginConfig, flags: EffectiveFlags, plugin_version: str, overridden: Iterable[str]
) -> None:
    """validateFlags (and, for 0.14.5, the MIG-strategy check of NewPluginManager), in upstream order."""
    from_override = set(overridden)
    specs = {spec.name: spec for spec in _flag_specs(plugin_version)}

    def fail(flag: str, reason: str) -> DevicePluginConfigError:
        suffix = " (value from a CLI/env override)" if flag in from_override else ""
        return DevicePluginConfigError(reason + suffix, _flag_path(specs[flag]))

    allowed_lists = device_list_strategies(plugin_version)
    for strategy in flags.device_list_strategy:
        if strategy not in allowed_lists:
            raise fail(
                "deviceListStrategy", f"invalid --device-list-strategy option: invalid strategy: {strategy}"
            )
    if flags.device_id_strategy not in DEVICE_ID_STRATEGIES:
        raise fail("deviceIDStrategy", f"invalid --device-id-strategy option: {flags.device_id_strategy}")
    policy = flags.shared_devices_allocation_policy
    if policy is not None and policy not in SHARED_DEVICES_ALLOCATION_POLICIES:
        raise fail(
            "sharedDevicesAllocationPolicy", f"invalid --shared-devices-allocation-policy option: {policy}"
        )
    if not version_at_least(plugin_version, MPS_ERA):
        if flags.mig_strategy not in MIG_STRATEGIES:
            raise fail("migStrategy", f"unknown strategy: {flags.mig_strategy}")
        return
    if config.sharing.mps is not None:
        if flags.mig_strategy == "mixed":
            raise DevicePluginConfigError(
                "using --mig-strategy=mixed is not supported with MPS", "sharing.mps"
            )
        if not flags.mps_root:
            raise fail("mpsRoot", "using MPS requires --mps-root to be specified")
    if flags.device_discovery_strategy not in DEVICE_DISCOVERY_STRATEGIES:
        raise fail(
            "deviceDiscoveryStrategy",
            f"invalid --device-discovery-strategy option {flags.device_discovery_strategy}",
        )
    if flags.mig_strategy not in MIG_STRATEGIES:
        raise fail("migStrategy", f"unknown MIG strategy: {flags.mig_strategy}")
    channel_ids = config.imex.channel_ids
    if channel_ids not in ((), (0,)):
        found = "[" + " ".join(str(i) for i in channel_ids) + "]"
        raise DevicePluginConfigError(
            f"invalid IMEX channel IDs: invalid IMEX config: channelIDs must be [] or [0]; found {found}",
            "imex.channelIDs",
        )
