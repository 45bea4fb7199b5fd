"""The NVIDIA k8s-device-plugin config file (API `v1`), accepted and rejected exactly as the plugin does.

The plugin (tags v0.14.5, v0.17.1 and v0.20.0) reads its `--config-file` with `sigs.k8s.io/yaml.Unmarshal`: go-yaml v2
turns the YAML into generic values, those are re-encoded as JSON, and `encoding/json` decodes that JSON into
the `api/config/v1` structs, some of which have hand-written `UnmarshalJSON` methods. The flags are then
merged with the command line and environment (CLI > env > file) and checked by `validateFlags`.
Reference: shared/reference/nvidia-device-plugin-and-mig.md, section A; the rules below were also checked
against the upstream Go code of each tag, built and run on a corpus of inputs (tests/fixtures/device_plugin).

This package reproduces that pipeline instead of describing the schema declaratively, because the
accept/reject behaviour lives in the pipeline's quirks:
- scalars resolve by go-yaml v2 rules (YAML 1.1 `y`/`n`/`on`/`off` are booleans, `1e3` is a float,
  `0:1` is a string), not PyYAML's; `go_compat._GoYamlLoader` swaps the resolver;
- a YAML float with an integral value is re-encoded as a JSON integer, so `replicas: 2.0` is accepted as 2
  while `2.5` and `"4"` are type errors (Go's `encoding/json` never converts strings to numbers);
- keys of plain structs match case-insensitively (`timeslicing:` works) but the keys read by the custom
  unmarshalers (a sharing section, its resources, `resources.gpus` entries) are case-sensitive;
- when several spellings of one key are present, `encoding/json` sees them in sorted order and the last wins;
- `version` is the one string field that go-yaml numbers and booleans are coerced into (`version: 1` is
  rejected as `unknown version: 1`, not as a type error); inside `flags` an upstream quirk (the embedded
  struct) disables that coercion, so `migStrategy: 1` is a type error.

What the plugin accepts but ignores at run time is reported as warnings, never as errors.

Known limits of the emulation: YAML merge keys (`<<`) follow PyYAML (explicit keys win) whereas go-yaml v2
lets a later merge override earlier keys; exotic YAML syntax accepted by only one of the two parsers; the
check (from v0.17.1) that CDI strategies need NVML (it depends on the node) is not applied.

Modules, each importing only those above it:
- `model`: the typed structs, versions, constants, `DevicePluginConfigError`, `advertised_resources`;
- `go_compat`: go-yaml v2 / encoding/json / strconv / time rules, independent of the config schema;
- `flags`: the flag table, CLI/env overrides and their merge with the file, `validateFlags`;
- `values`: the value rules for resource names and device references;
- `decode`: `parse` (file -> model, then flags);
- `rendering`: `render` (model -> file), `validate_config` and the builders the program uses.
The `validate` command's file handling lives in `gpushare.cli.validate`. This package re-exports the public
names of those modules so callers can write `from gpushare import device_plugin`.
"""

from gpushare.device_plugin.decode import parse
from gpushare.device_plugin.flags import effective_flags, flag_overrides
from gpushare.device_plugin.go_compat import format_go_duration, parse_go_duration
from gpushare.device_plugin.model import (
    API_VERSION,
    CHART_MPS_ROOT,
    DEVICE_DISCOVERY_STRATEGIES,
    DEVICE_ID_STRATEGIES,
    INFINITE_DURATION_NS,
    MAX_RESOURCE_NAME_LENGTH,
    MIG_STRATEGIES,
    PLUGIN_VERSIONS,
    RESOURCE_NAME_PREFIX,
    SHARED_DEVICES_ALLOCATION_POLICIES,
    SHARED_PRODUCT_LABEL_SUFFIX,
    SHARED_RESOURCE_SUFFIX,
    AdvertisedResource,
    DevicePluginConfig,
    DevicePluginConfigError,
    Devices,
    EffectiveFlags,
    FlagOverride,
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
    advertised_resources,
    version_at_least,
)
from gpushare.device_plugin.rendering import (
    exclusive_config,
    mps_config,
    render,
    time_slicing_config,
    validate_config,
)
from gpushare.device_plugin.values import is_device_reference, qualify_resource_name

__all__ = [
    "API_VERSION",
    "CHART_MPS_ROOT",
    "DEVICE_DISCOVERY_STRATEGIES",
    "DEVICE_ID_STRATEGIES",
    "INFINITE_DURATION_NS",
    "MAX_RESOURCE_NAME_LENGTH",
    "MIG_STRATEGIES",
    "PLUGIN_VERSIONS",
    "RESOURCE_NAME_PREFIX",
    "SHARED_DEVICES_ALLOCATION_POLICIES",
    "SHARED_PRODUCT_LABEL_SUFFIX",
    "SHARED_RESOURCE_SUFFIX",
    "AdvertisedResource",
    "DevicePluginConfig",
    "DevicePluginConfigError",
    "Devices",
    "EffectiveFlags",
    "FlagOverride",
    "Flags",
    "GfdFlags",
    "Imex",
    "ParseResult",
    "PluginFlags",
    "ReplicatedResource",
    "ReplicatedResources",
    "ResourcePattern",
    "Resources",
    "Sharing",
    "advertised_resources",
    "effective_flags",
    "exclusive_config",
    "flag_overrides",
    "format_go_duration",
    "is_device_reference",
    "mps_config",
    "parse",
    "parse_go_duration",
    "qualify_resource_name",
    "render",
    "time_slicing_config",
    "validate_config",
    "version_at_least",
]
