"""policies/gpushare_policies/plugin_rules.py: cli-flag-overrides-config on a DaemonSet plugin whose file is
not there to be overridden, beside the override it does report.

The resources are prod's (the real program, tests/test_policies.py's helpers): DaemonSet
kube-system/nvidia-device-plugin-daemonset-l20 (plugin v0.14.5) runs
`--config-file=/etc/nvidia/time-slicing-config/l20`, key "l20" of ConfigMap
kube-system/time-slicing-config, whose file says `migStrategy: none`.
"""

from __future__ import annotations

import copy

from test_policies import Program, Res, _isolated_environment, prod, replicas_text, stack_messages, with_data

from gpushare import kube_names
from gpushare_policies import rules

__all__ = ["_isolated_environment", "prod"]  # fixtures used by name below

PLUGIN = "gpushare-plugins-l20"
PLUGIN_URN = f"urn:pulumi:prod::gpushare::kubernetes:apps/v1:DaemonSet::{PLUGIN}"
PLUGIN_LABEL = "DaemonSet kube-system/nvidia-device-plugin-daemonset-l20"
CONFIG_MAP = "gpushare-config-configmap"


def overrides_reported(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["cli-flag-overrides-config"], resources)  # type: ignore[arg-type]


def _with_mig_strategy_flag(prod: Program) -> Res:
    plugin = copy.deepcopy(prod.get(PLUGIN))
    plugin.props["spec"]["template"]["spec"]["containers"][0]["args"].append("--mig-strategy=single")
    return plugin


def test_an_argument_that_changes_the_files_flag_is_reported(prod: Program) -> None:
    """The near miss of the cases below: the key is there, so the override is found."""
    assert overrides_reported(prod.resources) == []  # the program's plugin sets no config-file flag
    assert overrides_reported(prod.but(_with_mig_strategy_flag(prod))) == [
        (
            f"{PLUGIN_LABEL}: argument --mig-strategy=single sets migStrategy='single', overriding "
            "migStrategy: 'none' in ConfigMap kube-system/time-slicing-config key \"l20\" (command line > env > "
            "file), so the file silently does not decide. Drop the override or make the file say it.",
            PLUGIN_URN,
        )
    ]


def test_an_override_of_a_key_the_config_map_lacks_is_left_to_config_key_exists(prod: Program) -> None:
    plugin = _with_mig_strategy_flag(prod)
    config_map = copy.deepcopy(prod.get(CONFIG_MAP))
    del config_map.props["data"]["l20"]
    resources = prod.but(plugin, config_map)
    assert overrides_reported(resources) == []  # no file, nothing it decides
    # The path that does flag it: the key --config-file reads is missing.
    missing = stack_messages(rules.POLICIES_BY_NAME["config-key-exists"], resources)  # type: ignore[arg-type]
    assert (
        f"{PLUGIN_LABEL}: --config-file {kube_names.CONFIG_MOUNT_DIR}/l20 reads key 'l20' of ConfigMap "
        "kube-system/time-slicing-config, which has no such key (keys: any, t4); the file is missing and the "
        "plugin cannot start.",
        PLUGIN_URN,
    ) in missing


def test_an_override_on_a_plugin_whose_config_map_is_not_in_the_stack_is_not_judged(prod: Program) -> None:
    assert overrides_reported([_with_mig_strategy_flag(prod)]) == []


def test_a_command_line_the_plugin_refuses_is_left_to_device_plugin_config_valid(prod: Program) -> None:
    plugin = _with_mig_strategy_flag(prod)
    plugin.props["spec"]["template"]["spec"]["containers"][0]["args"].append("--pass-device-specs=maybe")
    resources = prod.but(plugin)
    assert overrides_reported(resources) == []  # the plugin exits before it reads the file
    refused = stack_messages(rules.POLICIES_BY_NAME["device-plugin-config-valid"], resources)  # type: ignore[arg-type]
    assert refused == [
        (
            f"{PLUGIN_LABEL}: device plugin 0.14.5 refuses its command line: invalid boolean value 'maybe' "
            "for -pass-device-specs",
            PLUGIN_URN,
        ),
    ]


def test_a_plugin_after_one_with_a_refused_command_line_is_still_judged(prod: Program) -> None:
    """Two plugin DaemonSets: another team's, whose command line the plugin refuses, listed first, then
    gpushare's l20 plugin, whose file is now refused: each is reported, the file as its reader reads it."""
    vendor = copy.deepcopy(prod.get(PLUGIN))
    vendor.name = "vendor-plugin"
    vendor.props["metadata"]["name"] = "vendor-device-plugin"
    vendor.props["spec"]["template"]["spec"]["containers"][0]["args"] = ["--pass-device-specs=maybe"]
    config_map = with_data(prod.get(CONFIG_MAP), "l20", replicas_text("one"))
    refused = stack_messages(
        rules.POLICIES_BY_NAME["device-plugin-config-valid"],  # type: ignore[arg-type]
        [vendor, *prod.but(config_map)],
    )
    assert [urn.rpartition("::")[2] for _, urn in refused] == ["vendor-plugin", CONFIG_MAP]
    assert refused[0][0] == (
        "DaemonSet kube-system/vendor-device-plugin: device plugin 0.14.5 refuses its command line: invalid "
        "boolean value 'maybe' for -pass-device-specs"
    )
    assert refused[1][0].startswith(
        f'ConfigMap kube-system/time-slicing-config key "l20": device plugin 0.14.5 refuses it as read by '
        f"{PLUGIN_LABEL}: "
    )


def test_an_override_is_still_reported_after_a_plugin_that_reads_no_config_map(prod: Program) -> None:
    """Another team's plugin DaemonSet, listed first, runs without --config-file (nothing for the rule to
    compare); gpushare's l20 plugin after it still has its override reported."""
    vendor = copy.deepcopy(prod.get(PLUGIN))
    vendor.name = "vendor-plugin"
    vendor.props["metadata"]["name"] = "vendor-device-plugin"
    vendor.props["spec"]["template"]["spec"]["containers"][0]["args"] = ["--mig-strategy=single"]
    reported = overrides_reported([vendor, *prod.but(_with_mig_strategy_flag(prod))])
    assert reported == [
        (
            f"{PLUGIN_LABEL}: argument --mig-strategy=single sets migStrategy='single', overriding "
            "migStrategy: 'none' in ConfigMap kube-system/time-slicing-config key \"l20\" (command line > env > "
            "file), so the file silently does not decide. Drop the override or make the file say it.",
            PLUGIN_URN,
        )
    ]


# --------------------------------------------------------------------------------------------------------
# config-key-exists on a pool no modelled plugin serves: its key must be in some device-plugin config


def _keys_reported(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["config-key-exists"], resources)  # type: ignore[arg-type]


def _batch_pool(prod: Program, selected: str) -> Res:
    """A second L20 pool of the user's own: TKE's plugin opted out (`disable`), no gpushare plugin selects
    gpushare.io/pool=l20-batch, and it asks the plugin config key `selected`."""
    pool = copy.deepcopy(prod.get("gpushare-l20-pool"))
    pool.name = "l20-batch-pool"
    pool.props["name"] = "l20-batch"
    pool.props["labels"].update(
        {
            "gpushare.io/pool": "l20-batch",
            "nvidia-device-enable": "disable",
            "nvidia.com/device-plugin.config": selected,
        }
    )
    return pool


def _team_configs(prod: Program) -> Res:
    """Another team's device-plugin ConfigMap in the same stack, holding only key h100."""
    team = copy.deepcopy(prod.get(CONFIG_MAP))
    team.name = "team-plugin-configs"
    team.props["metadata"]["name"] = "team-plugin-configs"
    team.props["data"] = {"h100": replicas_text(4)}
    return team


def test_a_pool_no_plugin_serves_may_select_a_key_that_one_of_the_configs_has(prod: Program) -> None:
    # l20 is a key of time-slicing-config (keys any, l20, t4), though not of the team's (h100).
    assert _keys_reported([_team_configs(prod), *prod.resources, _batch_pool(prod, "l20")]) == []


def test_a_pool_no_plugin_serves_selecting_a_key_no_config_has_is_reported(prod: Program) -> None:
    """The near miss: a100 is in neither ConfigMap."""
    assert _keys_reported([_team_configs(prod), *prod.resources, _batch_pool(prod, "a100")]) == [
        (
            "node pool l20-batch: label nvidia.com/device-plugin.config=a100 names a key no device-plugin config "
            "has (ConfigMap kube-system/team-plugin-configs: h100; ConfigMap kube-system/time-slicing-config: any, "
            "l20, t4).",
            "urn:pulumi:prod::gpushare::tencentcloud:Kubernetes/nodePool:NodePool::l20-batch-pool",
        )
    ]


# --------------------------------------------------------------------------------------------------------
# device-plugin-config-valid on a key no plugin reads: judged by the versions of the plugins mounting it


def test_a_key_no_plugin_reads_is_judged_by_the_version_of_the_plugin_mounting_its_config_map(
    prod: Program,
) -> None:
    """Key "any" of time-slicing-config is read by no DaemonSet (l20 reads "l20"), but the l20 plugin mounts
    the ConfigMap: with its image at v0.17.1, "any" is judged as 0.17.1 reads it, which refuses a
    deviceDiscoveryStrategy it does not know (0.14.5, the version assumed for an unmounted map, would
    ignore the key)."""
    newer_only = "version: v1\nflags:\n  migStrategy: none\n  deviceDiscoveryStrategy: bogus\n"
    config_map = with_data(prod.get(CONFIG_MAP), "any", newer_only)
    plugin = copy.deepcopy(prod.get(PLUGIN))
    plugin.props["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    )
    found = stack_messages(rules.POLICIES_BY_NAME["device-plugin-config-valid"], [config_map, plugin])  # type: ignore[arg-type]
    assert found == [
        (
            'ConfigMap kube-system/time-slicing-config key "any": device plugin 0.17.1 refuses it: '
            "flags.deviceDiscoveryStrategy: invalid --device-discovery-strategy option bogus",
            config_map.urn,
        )
    ]
