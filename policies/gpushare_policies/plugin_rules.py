"""Device-plugin workloads against the configs they read: validity, paths, keys, checksums, overrides.

A DaemonSet (or a DaemonSetPatch on TKE's) reads the key its `--config-file` (or `CONFIG_FILE`) names
under a ConfigMap volume mount; the chart reads `config.map` (or the ConfigMap `config.name`) through its
config-manager, which picks the key named by the node label `nvidia.com/device-plugin.config`.
Rules that need both sides are stack policies: a resource policy sees one resource only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Final

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpushare import device_plugin, kube_names, plugin_pod
from gpushare.device_plugin import DevicePluginConfigError, FlagOverride
from gpushare.errors import GpushareError
from gpushare.plan import FALLBACK_KEY
from gpushare.plugin_configs import config_checksum
from gpushare_policies.config_files import ConfigSource, read_plugin_config
from gpushare_policies.props import UNKNOWN, items, resource_of, text
from gpushare_policies.reporting import report_once
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.workloads import DaemonSetPlugin, HelmPlugin, Workload, daemon_set_plugin, helm_plugin

_EXACT_VERSION: Final = re.compile(r"v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?")  # ASCII: semver


def _reader_overrides(daemon_set: DaemonSetPlugin) -> dict[str, object] | str:
    try:
        return daemon_set.flag_overrides()
    except GpushareError as err:
        return err.message


# --------------------------------------------------------------------------------------------------------
# device-plugin-config-valid


def _refusal(
    source: ConfigSource,
    key: str,
    version: str,
    overrides: dict[str, object],
    *,
    reader: str | None,
) -> str | None:
    try:
        device_plugin.parse(
            source.data[key],
            version,
            overrides=overrides,
        )
    except DevicePluginConfigError as err:
        read_by = f" as read by {reader}" if reader else ""
        return f"{source.where(key)}: device plugin {version} refuses it{read_by}: {err}"
    except GpushareError as err:  # overrides the plugin would not accept either
        return f"{source.where(key)}: cannot be read by {reader or 'the plugin'}: {err}"
    return None


def _check_configs_valid(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    report = report_once(report_violation)
    validated: set[tuple[str, str]] = set()  # (source URN, key) read by a known reader
    versions_of: dict[str, set[str]] = defaultdict(set)  # source URN -> plugin versions that mount it
    for daemon_set in view.daemon_sets:
        overrides = _reader_overrides(daemon_set)
        if isinstance(overrides, str):
            report(
                f"{daemon_set.label}: device plugin {daemon_set.plugin_version} refuses its command line: "
                f"{overrides}",
                daemon_set.urn,
            )
            continue
        reference = daemon_set.config_reference()
        source = view.referenced_config(reference)
        if reference is None or source is None:
            continue
        versions_of[source.resource.urn].add(daemon_set.plugin_version)
        if reference.key in source.data:
            validated.add((source.resource.urn, reference.key))
            report(
                _refusal(
                    source,
                    reference.key,
                    daemon_set.plugin_version,
                    overrides,
                    reader=daemon_set.label,
                ),
                source.resource.urn,
            )
    for plugin in view.helm_plugins:
        source = view.helm_config(plugin)
        if source is None:
            continue
        for key in source.data:  # the chart treats every key as a config file
            validated.add((source.resource.urn, key))
            report(
                _refusal(source, key, plugin.plugin_version, plugin.overrides(), reader=plugin.label),
                source.resource.urn,
            )
    for source in view.config_sources:
        versions = versions_of.get(source.resource.urn) or {source.plugin_version}
        for key in source.plugin_configs():
            if (source.resource.urn, key) in validated:
                continue
            for version in sorted(versions):
                report(
                    _refusal(source, key, version, dict(source.overrides), reader=None),
                    source.resource.urn,
                )


# --------------------------------------------------------------------------------------------------------
# config-file-not-directory


def _check_config_file(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    daemon_set = daemon_set_plugin(resource_of(args))
    if daemon_set is None:
        return
    mount = daemon_set.directory_mount()
    if mount is None:
        return
    report_violation(
        f"{daemon_set.label}: the plugin's config file {daemon_set.config_file} is a directory (volume "
        f"{mount.volume} is mounted at {mount.path}); plugin {daemon_set.plugin_version} exits with 'read "
        f"{daemon_set.config_file}: is a directory'. Point --config-file at one key's file: "
        f"{mount.path.rstrip('/')}/<key>.",
        None,
    )


# --------------------------------------------------------------------------------------------------------
# config-key-exists


def _missing(source: ConfigSource, key: str) -> bool:
    return source.keys_known and key not in source.data


def _known_keys(source: ConfigSource) -> str:
    return ", ".join(sorted(source.data)) or "none"


def _check_config_keys(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    for daemon_set in view.daemon_sets:
        reference = daemon_set.config_reference()
        source = view.referenced_config(reference)
        if reference is not None and source is not None and _missing(source, reference.key):
            report_violation(
                f"{daemon_set.label}: --config-file {daemon_set.config_file} reads key {reference.key!r} of "
                f"ConfigMap {source.namespace}/{source.name}, which has no such key (keys: "
                f"{_known_keys(source)}); "
                "the file is missing and the plugin cannot start.",
                daemon_set.urn,
            )
    for plugin in view.helm_plugins:
        source = view.helm_config(plugin)
        if plugin.enabled and source is not None:
            problem = _default_key_problem(plugin, source)
            if problem:
                report_violation(problem, plugin.urn)
    for pool in view.node_pools:
        selected = (pool.labels or {}).get(kube_names.LABEL_PLUGIN_CONFIG)
        if not selected:
            continue
        sources = _sources_serving(view, pool_workloads=view.workloads_on(pool))
        if not sources:
            # No plugin modelled on the pool: the key must at least exist in some device-plugin config.
            candidates = [s for s in view.config_sources if s.plugin_configs() or s.kind == "Helm release"]
            if candidates and all(_missing(s, selected) for s in candidates):
                known = "; ".join(f"{s.describe()}: {_known_keys(s)}" for s in candidates)
                report_violation(
                    f"node pool {pool.name}: label {kube_names.LABEL_PLUGIN_CONFIG}={selected} names a key "
                    f"no device-plugin config has ({known}).",
                    pool.resource.urn,
                )
            continue
        for workload, source in sources:
            if _missing(source, selected):
                report_violation(
                    f"node pool {pool.name}: label {kube_names.LABEL_PLUGIN_CONFIG}={selected} selects a key "
                    f"that {workload.label} does not have in {source.describe()} "
                    f"(keys: {_known_keys(source)}); the plugin's config-manager fails with 'specified "
                    f"config {selected} does not exist'.",
                    pool.resource.urn,
                )


def _default_key_problem(plugin: HelmPlugin, source: ConfigSource) -> str | None:
    """The config-manager's choice for a node without the label: `config.default` (must be a key), else the
    first of `config.fallbackStrategies` that resolves (`named`: key `default`; `single`: the only key;
    `empty`: no config)."""
    default = plugin.config_default
    if default:
        if _missing(source, default):
            return (
                f"{plugin.label}: config.default {default!r} is not a key of {source.describe()} (keys: "
                f"{_known_keys(source)}); on every node without a {kube_names.LABEL_PLUGIN_CONFIG} label the "
                "config-manager fails."
            )
        return None
    raw = plugin.config_value("fallbackStrategies")
    strategies = [s for s in items(raw) if isinstance(s, str)] if raw is not None else ["named", "single"]
    resolvable = {"named": "default" in source.data, "single": len(source.data) == 1, "empty": True}
    if not source.keys_known or any(resolvable.get(s, False) for s in strategies):
        return None
    return (
        f"{plugin.label}: no config.default and no fallback strategy ({', '.join(strategies) or 'none'}) "
        f"resolves among keys {_known_keys(source)} of {source.describe()}; the chart refuses to render "
        "('A default config must be provided ...'). Set config.default to a key (gpushare uses "
        f"{FALLBACK_KEY!r})."
    )


def _sources_serving(view: StackView, pool_workloads: list[Workload]) -> list[tuple[Workload, ConfigSource]]:
    return [
        (workload, source) for workload in pool_workloads if (source := view.config_of(workload)) is not None
    ]


# --------------------------------------------------------------------------------------------------------
# plugin-restarts-on-config-change


def _check_restarts(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    annotation = kube_names.ANNOTATION_CONFIG_SHA256
    for daemon_set in view.daemon_sets:
        reference = daemon_set.config_reference()
        source = view.referenced_config(reference)
        if reference is None or source is None or reference.key not in source.data:
            continue
        annotations = daemon_set.pod_annotations
        if annotations is None or annotations.get(annotation) is UNKNOWN:
            continue
        expected = config_checksum(source.data[reference.key])
        actual = text(annotations.get(annotation))
        where = source.where(reference.key)
        if actual is None:
            report_violation(
                f"{daemon_set.label} reads {where} but its pod template has no {annotation} annotation: the "
                "plugin reads its file only at start, so a changed key never reaches the running pods. "
                f"Annotate the pod template with {annotation}: {expected}.",
                daemon_set.urn,
            )
        elif actual != expected:
            report_violation(
                f"{daemon_set.label}: pod annotation {annotation} is {actual}, but {where} hashes to "
                f"{expected}: a stale checksum does not roll the pods when the key changes.",
                daemon_set.urn,
            )


# --------------------------------------------------------------------------------------------------------
# helm-chart-pinned


def _check_chart_pinned(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    plugin = helm_plugin(resource_of(args))
    if plugin is None:
        return
    version = plugin.chart_version
    if version is None or not _EXACT_VERSION.fullmatch(version):
        report_violation(
            f"{plugin.label}: `version` is {version or 'unset'}, not an exact chart version "
            f"(e.g. {'v26.7.0' if plugin.is_operator else '0.17.1'}); "
            "an unpinned chart changes the plugin, its config "
            "rules and its defaults (node affinity since 0.15) "
            "underneath the stack.",
            None,
        )


# --------------------------------------------------------------------------------------------------------
# plugin-image-pinned


def _check_image_pinned(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    resource = resource_of(args)
    # A DaemonSet, or the device-plugin chart's release, whose values name the image its DaemonSet runs
    # (the engine hands the pack the Release alone, never the DaemonSet the chart makes of it).
    plugin = daemon_set_plugin(resource) or helm_plugin(resource)
    # A patch that sets no image keeps TKE's; an unknown image (preview) cannot be judged.
    if plugin is None or not plugin.image:
        return
    if plugin_pod.image_digest(plugin.image) is None:
        report_violation(
            f"{plugin.label}: image {plugin.image} is named by tag only; a tag can be moved to "
            "other bytes underneath the stack. Pin it: devicePlugin.image: <repo>:<tag>@sha256:<digest> "
            "(the digest a node runs: `kubectl get pods -n <ns> -o jsonpath='{..imageID}'`).",
            None,
        )


# --------------------------------------------------------------------------------------------------------
# cli-flag-overrides-config


def _cli_argument(daemon_set: DaemonSetPlugin, flag: str) -> str | None:
    """The argument that sets config-file flag `flag` (`--mig-strategy=single` for migStrategy)."""
    for arg in daemon_set.argv or ():
        name = arg.lstrip("-").partition("=")[0]
        if name.replace("-", "").lower() == flag.lower():
            return arg
    return None


def _changed_flags(content: str, overrides: Mapping[str, object], plugin_version: str) -> list[FlagOverride]:
    """The file's flags that `overrides` set to another value; none when the plugin refuses the file or the
    overrides (device-plugin-config-valid reports that)."""
    flags = read_plugin_config(content, plugin_version).effective_flags(overrides, plugin_version)
    return [override for override in flags.overridden if override.changes_value] if flags else []


def _check_overrides(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    for daemon_set in view.daemon_sets:
        overrides = _reader_overrides(daemon_set)
        reference = daemon_set.config_reference()
        source = view.referenced_config(reference)
        if (
            isinstance(overrides, str)
            or reference is None
            or source is None
            or reference.key not in source.data
        ):
            continue
        for override in _changed_flags(source.data[reference.key], overrides, daemon_set.plugin_version):
            argument = _cli_argument(daemon_set, override.name)
            origin = f"argument {argument}" if argument else "an environment variable"
            report_violation(
                f"{daemon_set.label}: {origin} sets {override.name}={override.effective_value!r}, overriding "
                f"{override.name}: {override.file_value!r} in {source.where(reference.key)} (command line > "
                "env > file), so the file silently does not "
                "decide. Drop the override or make the file say it.",
                daemon_set.urn,
            )
    for plugin in view.helm_plugins:
        source = view.helm_config(plugin)
        if source is None:
            continue
        for key, content in sorted(source.data.items()):
            for override in _changed_flags(content, plugin.overrides(), plugin.plugin_version):
                value_name = "compatWithCPUManager" if override.name == "passDeviceSpecs" else override.name
                report_violation(
                    f"{plugin.label}: values.{value_name} is rendered as an env var on every node and "
                    f"sets {override.name}={override.effective_value!r}, overriding {override.name}: "
                    f"{override.file_value!r} in {source.where(key)}. Leave the top-level value unset.",
                    plugin.urn,
                )


DEVICE_PLUGIN_CONFIG_VALID: Final = StackValidationPolicy(
    name="device-plugin-config-valid",
    description="Every device-plugin config passes the plugin's own validation for the version deployed "
    "(DaemonSet image tag, Helm chart version; 0.14.5 when unknown), with its command-line overrides.",
    validate=_check_configs_valid,
    remediation_steps="Fix the config the message names until `gpushare validate device-plugin-config FILE "
    "--plugin-version <version>` accepts it, for the plugin version the DaemonSet image or chart "
    "deploys.",
)
CONFIG_FILE_NOT_DIRECTORY: Final = ResourceValidationPolicy(
    name="config-file-not-directory",
    description="A device plugin's --config-file / CONFIG_FILE names a file, not its ConfigMap mount "
    "directory.",
    validate=_check_config_file,
    remediation_steps="Point --config-file / CONFIG_FILE at the key's file inside the mount (e.g. /config/<key>), not at "
    "the mount directory.",
)
CONFIG_KEY_EXISTS: Final = StackValidationPolicy(
    name="config-key-exists",
    description="The config key a plugin's --config-file, a node pool's nvidia.com/device-plugin.config "
    "label or the chart's config.default selects exists in the config.",
    validate=_check_config_keys,
    remediation_steps="Add the missing key to the device-plugin ConfigMap, or change the --config-file path, the "
    "nvidia.com/device-plugin.config node label or the chart's config.default to a key the config has.",
)
PLUGIN_RESTARTS_ON_CONFIG_CHANGE: Final = StackValidationPolicy(
    name="plugin-restarts-on-config-change",
    description="A plugin DaemonSet that reads a ConfigMap key carries gpushare.io/config-sha256 = sha256 of "
    "that key on its pod template, so a config change rolls its pods.",
    validate=_check_restarts,
    remediation_steps="Put the gpushare.io/config-sha256 annotation (sha256 of the ConfigMap key the plugin reads) on the "
    "DaemonSet's pod template, so a changed config rolls the plugin pods.",
)
HELM_CHART_PINNED: Final = ResourceValidationPolicy(
    name="helm-chart-pinned",
    description="The device-plugin (or GPU Operator) Helm release pins an exact chart version.",
    validate=_check_chart_pinned,
    remediation_steps="Set the Helm release's chart version to an exact version (e.g. 0.17.1), not a range or nothing.",
)
PLUGIN_IMAGE_PINNED: Final = ResourceValidationPolicy(
    name="plugin-image-pinned",
    description="A device-plugin DaemonSet's image, and the one the device-plugin chart's values give its "
    "DaemonSet, is pinned by digest (repo:tag@sha256:...), not by tag alone.",
    validate=_check_image_pinned,
    enforcement_level=EnforcementLevel.ADVISORY,
)
CLI_FLAG_OVERRIDES_CONFIG: Final = StackValidationPolicy(
    name="cli-flag-overrides-config",
    description="Command-line flags, env vars or chart top-level values should not override the config "
    "file's flags with a different value.",
    validate=_check_overrides,
    enforcement_level=EnforcementLevel.ADVISORY,
)

PLUGIN_POLICIES: Final = (
    DEVICE_PLUGIN_CONFIG_VALID,
    CONFIG_FILE_NOT_DIRECTORY,
    CONFIG_KEY_EXISTS,
    PLUGIN_RESTARTS_ON_CONFIG_CHANGE,
    HELM_CHART_PINNED,
    PLUGIN_IMAGE_PINNED,
    CLI_FLAG_OVERRIDES_CONFIG,
)
