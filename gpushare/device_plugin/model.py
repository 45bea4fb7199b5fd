"""The device-plugin config model: the typed `api/config/v1` structs, the plugin versions modelled and the
releases whose additions the rules switch on, the constants the plugin hard-codes, the error the plugin's
refusal maps to, and what a config advertises (`advertised_resources`).

Nothing here parses or renders; `decode` builds these models from a file, `rendering` writes them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gpushare.errors import GpushareError

PLUGIN_VERSIONS = ("0.14.5", "0.17.1", "0.20.0")
API_VERSION = "v1"

MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_ID_STRATEGIES = ("uuid", "index")
DEVICE_DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")
RESOURCE_NAME_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME_LENGTH = 63
SHARED_RESOURCE_SUFFIX = ".shared"
SHARED_PRODUCT_LABEL_SUFFIX = "-SHARED"
# The v0.17.1 chart renders `MPS_ROOT={{ .Values.mps.root }}` into every device-plugin pod; this is the default.
CHART_MPS_ROOT = "/run/nvidia/mps"

SHARED_DEVICES_ALLOCATION_POLICIES = ("distributed", "packed")
# Durations (`flags.gfd.sleepInterval`) may say `infinite` from 0.20.0 on; the plugin stores math.MaxInt64.
INFINITE_DURATION_NS = 2**63 - 1

# The releases whose additions the rules (decode, flags) switch on: 0.17.1 stands for everything the 0.15 restructuring
# brought (MPS, IMEX, device discovery); 0.20.0 adds the allocation policy, GDRCopy, an honoured
# `failRequestsGreaterThanOne: false` for MPS and `infinite` durations.
MPS_ERA = "0.17.1"
ALLOCATION_POLICY_ERA = "0.20.0"


def _version_key(plugin_version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in plugin_version.split("."))


def version_at_least(plugin_version: str, release: str) -> bool:
    """Whether plugin `plugin_version` (e.g. "0.17.1") has what `release` introduced."""
    return _version_key(plugin_version) >= _version_key(release)


def device_list_strategies(plugin_version: str) -> tuple[str, ...]:
    base = ("envvar", "volume-mounts", "cdi-annotations")
    return (*base, "cdi-cri") if version_at_least(plugin_version, MPS_ERA) else base


class DevicePluginConfigError(GpushareError):
    """The plugin would refuse to start with this config. `reason` is the upstream message (plus a hint
    where one helps); `path` is the field, e.g. `sharing.timeSlicing.resources[0].replicas`."""

    def __init__(self, reason: str, path: str | None = None, *, source: str | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(reason, source=source, key=path)


# --------------------------------------------------------------------------------------------------------
# The typed model. Fields mirror `api/config/v1`; `None` means "not set in the file", which matters because
# unset flags take the CLI/env default while set ones (even to "") are kept. Build instances with `parse` or
# the builders below: constructing a model by hand skips the upstream rules (use `validate_config`).
# --------------------------------------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


class PluginFlags(_Frozen):
    pass_device_specs: bool | None = None
    device_list_strategy: tuple[str, ...] | None = None
    device_id_strategy: str | None = None
    cdi_annotation_prefix: str | None = None
    nvidia_ctk_path: str | None = None
    container_driver_root: str | None = None
    shared_devices_allocation_policy: str | None = None


class GfdFlags(_Frozen):
    oneshot: bool | None = None
    no_timestamp: bool | None = None
    sleep_interval_ns: int | None = None
    output_file: str | None = None
    machine_type_file: str | None = None


class Flags(_Frozen):
    mig_strategy: str | None = None
    fail_on_init_error: bool | None = None
    mps_root: str | None = None
    nvidia_driver_root: str | None = None
    nvidia_dev_root: str | None = None
    gdrcopy_enabled: bool | None = None
    gds_enabled: bool | None = None
    mofed_enabled: bool | None = None
    use_node_feature_api: bool | None = None
    device_discovery_strategy: str | None = None
    plugin: PluginFlags | None = None
    gfd: GfdFlags | None = None


class ResourcePattern(_Frozen):
    """An entry of `resources.gpus` / `resources.mig` (parsed, then dropped at run time by the plugin)."""

    pattern: str
    name: str


class Resources(_Frozen):
    gpus: tuple[ResourcePattern, ...] = ()
    mig: tuple[ResourcePattern, ...] = ()


Devices = str | int | tuple[str, ...]
"""`"all"`, a count > 0, or device references (GPU index, `gpu:mig` index, GPU/MIG UUID) as strings."""


class ReplicatedResource(_Frozen):
    name: str
    """Fully qualified, as the plugin stores it (`gpu` in the file becomes `nvidia.com/gpu`)."""
    replicas: int
    devices: Devices = "all"
    rename: str | None = None
    """As written in the file (fully qualified); the plugin ignores it unless it equals `<name>.shared`."""


class ReplicatedResources(_Frozen):
    """`sharing.timeSlicing` or (0.17.1 and later) `sharing.mps`."""

    rename_by_default: bool = False
    fail_requests_greater_than_one: bool | None = False
    """0.14.5/0.17.1 read an absent key as false. From 0.20.0 the field is a pointer: None means unset, which
    time-slicing treats as false and MPS turns into true (0.17.1 forces true for MPS whatever the file says)."""
    resources: tuple[ReplicatedResource, ...]


class Sharing(_Frozen):
    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None


class Imex(_Frozen):
    channel_ids: tuple[int, ...] = ()
    required: bool = False


class DevicePluginConfig(_Frozen):
    version: Literal["v1"] = "v1"
    flags: Flags = Flags()
    resources: Resources = Resources()
    sharing: Sharing = Sharing()
    imex: Imex = Imex()


@dataclass(frozen=True)
class ParseResult:
    config: DevicePluginConfig
    warnings: list[str]
    plugin_version: str
    effective_flags: EffectiveFlags


class FlagOverride(_Frozen):
    """A flag the file sets that a CLI argument or environment variable replaces."""

    name: str
    file_value: object
    effective_value: object

    @property
    def changes_value(self) -> bool:
        return self.file_value != self.effective_value


class EffectiveFlags(_Frozen):
    """The flags the plugin runs with after merging defaults, the file and overrides (CLI > env > file).
    Flags a version does not have are `None` (the 0.17.1 ones for 0.14.5, the 0.20.0 ones before 0.20.0)."""

    mig_strategy: str
    fail_on_init_error: bool
    nvidia_driver_root: str
    gds_enabled: bool
    mofed_enabled: bool
    pass_device_specs: bool
    device_list_strategy: tuple[str, ...]
    device_id_strategy: str
    cdi_annotation_prefix: str
    nvidia_ctk_path: str
    container_driver_root: str
    mps_root: str | None = None
    nvidia_dev_root: str | None = None
    device_discovery_strategy: str | None = None
    gdrcopy_enabled: bool | None = None
    shared_devices_allocation_policy: str | None = None
    overridden: tuple[FlagOverride, ...] = ()


class AdvertisedResource(_Frozen):
    """A resource the plugin advertises with `replicas` slots per physical device."""

    name: str
    replicas: int
    product_label_suffix: str
    """`-SHARED` when GFD appends it to `<source_name>.product` (shared and not renamed), else empty."""
    source_name: str
    sharing_strategy: Literal["time-slicing", "mps"]


def advertised_resources(config: DevicePluginConfig) -> list[AdvertisedResource]:
    """The shared resources the plugin advertises, in file order, one per name.

    Per-resource `rename` and `devices` are ignored at run time, so the name is `<name>.shared` when
    `renameByDefault` is true, else the name itself, and then GFD suffixes the product label with `-SHARED`.
    MPS (0.17.1) takes precedence over time-slicing. Duplicated names count once with the larger replica
    count. A name the node does not have (e.g. `nvidia.com/mig-*` without MIG mixed) is skipped at run time."""
    if config.sharing.mps is not None:
        strategy: Literal["time-slicing", "mps"] = "mps"
        replicated = config.sharing.mps
    elif config.sharing.time_slicing is not None:
        strategy, replicated = "time-slicing", config.sharing.time_slicing
    else:
        return []
    replicas_by_name: dict[str, int] = {}
    for resource in replicated.resources:
        replicas_by_name[resource.name] = max(resource.replicas, replicas_by_name.get(resource.name, 0))
    return [
        AdvertisedResource(
            name=name + SHARED_RESOURCE_SUFFIX if replicated.rename_by_default else name,
            replicas=replicas,
            product_label_suffix="" if replicated.rename_by_default else SHARED_PRODUCT_LABEL_SUFFIX,
            source_name=name,
            sharing_strategy=strategy,
        )
        for name, replicas in replicas_by_name.items()
    ]
