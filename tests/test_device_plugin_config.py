"""gpushare.device_plugin against the upstream rules (reference section A.3) and recorded upstream runs."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpushare import device_plugin as dpc
from gpushare.cli.validate import run_validate_cli
from gpushare.device_plugin import (
    PLUGIN_VERSIONS,
    AdvertisedResource,
    DevicePluginConfigError,
    advertised_resources,
    effective_flags,
    exclusive_config,
    flag_overrides,
    parse,
    render,
    time_slicing_config,
)
from gpushare.errors import GpushareError

FIXTURES = Path(__file__).parent / "fixtures" / "device_plugin"
OLD, NEW, LATEST = PLUGIN_VERSIONS

SEED_CONFIGMAP_TEMPLATE = """version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: {replicas}
"""
SEED_CONFIGMAP_REPLICAS = {"any": 2, "l20": 8, "t4": 3}


def time_slicing(resources: str, *, head: str = "version: v1\n", section: str = "timeSlicing") -> str:
    """A config whose sharing section lists `resources` (YAML list items, indented by 4)."""
    return f"{head}sharing:\n  {section}:\n    resources:\n{resources}"


def one_resource(fields: str, **kwargs: str) -> str:
    lines = fields.strip("\n").split("\n")
    body = "    - " + lines[0] + "\n" + "".join(f"      {line}\n" for line in lines[1:])
    return time_slicing(body, **kwargs)


def rejection(text: str, plugin_version: str = OLD, **kwargs: Any) -> DevicePluginConfigError:
    with pytest.raises(DevicePluginConfigError) as caught:
        parse(text, plugin_version, **kwargs)
    return caught.value


# --- A.3.1 version -------------------------------------------------------------------------------------


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n", "{}", "null\n"])
def test_empty_file_is_valid(text: str, plugin_version: str) -> None:
    result = parse(text, plugin_version)
    assert result.config == dpc.DevicePluginConfig()
    assert result.warnings == []


@pytest.mark.parametrize(
    "text", ["flags: {migStrategy: single}\n", "version: ''\n", "version: ~\n", "version:\n"]
)
def test_missing_or_empty_version_defaults_to_v1(text: str) -> None:
    assert parse(text).config.version == "v1"


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("version: v2\n", "v2"),
        ("version: v1beta1\n", "v1beta1"),
        ("version: V1\n", "V1"),
        # sigs.k8s.io/yaml turns YAML numbers and booleans into strings for this one string field.
        ("version: 1\n", "1"),
        ("version: 1.0\n", "1"),
        ("version: yes\n", "true"),
        ("Version: v2\n", "v2"),
    ],
)
def test_any_other_version_is_rejected(text: str, shown: str, plugin_version: str) -> None:
    error = rejection(text, plugin_version)
    assert (error.path, error.reason) == ("version", f"unknown version: {shown}")
    assert str(error) == f"version: unknown version: {shown}"


# --- A.3.2 unknown keys, key case, JSON ----------------------------------------------------------------


def test_unknown_keys_are_ignored_and_reported_with_their_path() -> None:
    text = "version: v1\ncolour: blue\nflags:\n  plugin:\n    speed: 11\n  migStrategy: single\n"
    result = parse(text)
    assert result.config.flags.mig_strategy == "single"
    assert "colour: unknown key, ignored by the plugin" in result.warnings
    assert "flags.plugin.speed: unknown key, ignored by the plugin" in result.warnings


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
def test_plain_struct_keys_match_case_insensitively(plugin_version: str) -> None:
    text = "version: v1\nflags:\n  migstrategy: single\nsharing:\n  timeslicing:\n    resources:\n"
    text += "    - name: gpu\n      replicas: 3\n"
    result = parse(text, plugin_version)
    assert result.config.flags.mig_strategy == "single"
    assert result.config.sharing.time_slicing is not None
    assert (
        "flags.migstrategy: matched 'migStrategy' case-insensitively; write 'migStrategy'" in result.warnings
    )


def test_two_spellings_of_one_key_the_last_in_sorted_order_wins() -> None:
    # encoding/json sees the keys sorted ("migStrategy" < "migstrategy") and keeps the last one.
    result = parse("version: v1\nflags:\n  migstrategy: mixed\n  migStrategy: single\n")
    assert result.config.flags.mig_strategy == "mixed"
    assert any("set by 2 keys" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ("Name: gpu\nreplicas: 2", "no resource name specified"),
        ("name: gpu\nReplicas: 2", "no replicas specified"),
    ],
)
def test_keys_read_by_custom_unmarshalers_are_case_sensitive(fields: str, reason: str) -> None:
    error = rejection(one_resource(fields))
    assert error.path == "sharing.timeSlicing.resources[0]"
    assert error.reason.startswith(reason)
    assert "keys here are case-sensitive" in error.reason


def test_case_sensitive_sharing_options_are_ignored_with_a_hint() -> None:
    text = time_slicing("    - name: gpu\n      replicas: 2\n").replace(
        "timeSlicing:\n", "timeSlicing:\n    renamebydefault: true\n"
    )
    result = parse(text)
    assert result.config.sharing.time_slicing is not None
    assert result.config.sharing.time_slicing.rename_by_default is False
    assert any("renamebydefault" in w and "did you mean 'renameByDefault'" in w for w in result.warnings)


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
def test_json_input_works(plugin_version: str) -> None:
    # Tabs between JSON tokens: go-yaml accepts them, PyYAML does not, so JSON is read as JSON.
    text = '{\n\t"version": "v1",\n\t"flags": {"migStrategy": "mixed"},\n\t"sharing": {"timeSlicing": '
    text += '{"resources": [{"name": "gpu", "replicas": 4}]}}\n}\n'
    config = parse(text, plugin_version).config
    assert config.flags.mig_strategy == "mixed"
    assert config.sharing.time_slicing is not None
    assert config.sharing.time_slicing.resources[0].replicas == 4


def test_only_the_first_yaml_document_is_read() -> None:
    assert parse("version: v1\n---\n: : not yaml [\n").config.version == "v1"


def test_yaml_syntax_error_is_reported() -> None:
    error = rejection("version: v1\nflags: [\n")
    assert error.reason.startswith("error converting YAML to JSON: yaml: line")


# --- A.3.3 type errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        (
            one_resource("name: gpu\nreplicas: '4'"),
            "sharing.timeSlicing.resources[0].replicas",
            "json: cannot unmarshal string into Go value of type int",
        ),
        (
            one_resource("name: gpu\nreplicas: 2.5"),
            "sharing.timeSlicing.resources[0].replicas",
            "json: cannot unmarshal number 2.5 into Go value of type int",
        ),
        (
            "flags:\n  failOnInitError: 'yes'\n",
            "flags.failOnInitError",
            "json: cannot unmarshal string into Go value of type bool",
        ),
        (
            time_slicing("    - name: gpu\n      replicas: 2\n").replace(
                "timeSlicing:\n", "timeSlicing:\n    renameByDefault: 'true'\n"
            ),
            "sharing.timeSlicing.renameByDefault",
            "json: cannot unmarshal string into Go value of type bool",
        ),
        (
            "flags:\n  migStrategy: 1\n",
            "flags.migStrategy",
            "json: cannot unmarshal number into Go value of type string",
        ),
        (
            "flags:\n  gfd:\n    sleepInterval: 5x\n",
            "flags.gfd.sleepInterval",
            'time: unknown unit "x" in duration "5x"',
        ),
        (
            "flags:\n  gfd:\n    sleepInterval: abc\n",
            "flags.gfd.sleepInterval",
            'time: invalid duration "abc"',
        ),
        (
            "flags:\n  gfd:\n    sleepInterval: '5'\n",
            "flags.gfd.sleepInterval",
            'time: missing unit in duration "5"',
        ),
        ("flags:\n  gfd:\n    sleepInterval: true\n", "flags.gfd.sleepInterval", "invalid duration"),
        ("flags: 5\n", "flags", "json: cannot unmarshal number into Go value of type v1.Flags"),
    ],
)
def test_type_errors_are_fatal(text: str, path: str, reason: str, plugin_version: str) -> None:
    error = rejection(text, plugin_version)
    assert (error.path, error.reason) == (path, reason)


def test_integral_float_is_accepted_as_int() -> None:
    # Decision: sigs.k8s.io/yaml re-encodes YAML/JSON `2.0` as the JSON literal `2`, which encoding/json
    # decodes into an int; `1e3` is a float to go-yaml (not to PyYAML) and likewise becomes 1000.
    resources = parse(one_resource("name: gpu\nreplicas: 2.0")).config.sharing.time_slicing
    assert resources is not None and resources.resources[0].replicas == 2
    resources = parse(one_resource("name: gpu\nreplicas: 1e3")).config.sharing.time_slicing
    assert resources is not None and resources.resources[0].replicas == 1000


@pytest.mark.parametrize(
    ("literal", "value"), [("yes", True), ("on", True), ("y", True), ("N", False), ("off", False)]
)
def test_yaml_1_1_booleans_are_booleans(literal: str, value: bool) -> None:
    # go-yaml v2 also reads `y`/`n` as booleans, which PyYAML does not.
    assert parse(f"flags:\n  failOnInitError: {literal}\n").config.flags.fail_on_init_error is value


@pytest.mark.parametrize(
    ("text", "nanoseconds"), [("60s", 60 * 10**9), ("1m30s", 90 * 10**9), ("1.5h", 5400 * 10**9)]
)
def test_go_durations_parse_and_render_back(text: str, nanoseconds: int) -> None:
    config = parse(f"flags:\n  gfd:\n    sleepInterval: {text}\n").config
    assert config.flags.gfd is not None and config.flags.gfd.sleep_interval_ns == nanoseconds
    assert parse(render(config)).config == config


def test_nan_anywhere_fails_the_yaml_to_json_step() -> None:
    error = rejection("version: v1\nnotes: .nan\n")
    assert error.reason == "error converting YAML to JSON: json: unsupported value: NaN"


# --- A.3.4 sharing sections and their resources ---------------------------------------------------------


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize(
    ("sharing", "path"),
    [
        ("sharing:\n  timeSlicing: {}\n", "sharing.timeSlicing"),
        ("sharing:\n  timeSlicing:\n", "sharing.timeSlicing"),
        ("sharing:\n  timeSlicing:\n    resources: []\n", "sharing.timeSlicing.resources"),
        ("sharing:\n  timeSlicing:\n    renameByDefault: true\n", "sharing.timeSlicing"),
    ],
)
def test_time_slicing_needs_resources(sharing: str, path: str, plugin_version: str) -> None:
    error = rejection("version: v1\n" + sharing, plugin_version)
    assert (error.path, error.reason) == (path, "no resources specified")


@pytest.mark.parametrize("text", ["version: v1\nsharing: {}\n", "version: v1\nsharing:\n"])
def test_empty_sharing_is_fine(text: str) -> None:
    assert parse(text).config.sharing == dpc.Sharing()


def test_resource_needs_a_name() -> None:
    error = rejection(one_resource("replicas: 2"))
    assert (error.path, error.reason) == ("sharing.timeSlicing.resources[0]", "no resource name specified")


def test_resource_needs_replicas() -> None:
    error = rejection(one_resource("name: gpu"))
    assert (error.path, error.reason) == ("sharing.timeSlicing.resources[0]", "no replicas specified")


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize("replicas", ["1", "0", "-1", "~"])
def test_replicas_below_two_are_rejected(replicas: str, plugin_version: str) -> None:
    error = rejection(one_resource(f"name: gpu\nreplicas: {replicas}"), plugin_version)
    assert str(error) == "sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2"


@pytest.mark.parametrize(
    ("devices", "stored"),
    [
        ("all", "all"),
        ("2", 2),
        ("[0, 1]", ("0", "1")),
        ("['0', '1:2']", ("0", "1:2")),
        ("[0:1]", ("0:1",)),  # go-yaml reads 0:1 as a string (PyYAML: the base-60 integer 1)
        ("['GPU-b1028956-cfa2-0990-bf4a-5da9abb51763']", ("GPU-b1028956-cfa2-0990-bf4a-5da9abb51763",)),
        ("['MIG-b1028956-cfa2-0990-bf4a-5da9abb51763']", ("MIG-b1028956-cfa2-0990-bf4a-5da9abb51763",)),
        (
            "['MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0']",
            ("MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0",),
        ),
    ],
)
def test_accepted_devices_forms(devices: str, stored: object) -> None:
    result = parse(one_resource(f"name: gpu\nreplicas: 2\ndevices: {devices}"))
    assert result.config.sharing.time_slicing is not None
    assert result.config.sharing.time_slicing.resources[0].devices == stored


@pytest.mark.parametrize(
    ("devices", "path_suffix", "reason"),
    [
        ("ALL", "", "devices set as 'ALL' but the only valid string input is 'all'"),
        ("0", "", "devices set as '0' but a count of devices must be > 0"),
        ("-2", "", "devices set as '-2' but a count of devices must be > 0"),
        ("true", "", "unrecognized type for devices spec: true"),
        ("[-1]", "[0]", "unsupported type for device in devices list: , string"),
        ("['gpu0']", "[0]", "unsupported type for device in devices list: gpu0, string"),
        ("['0:1:2']", "[0]", "unsupported type for device in devices list: 0:1:2, string"),
        (
            "['GPU-b1028956-cfa2-0990-bf4a-5da9abb5176']",
            "[0]",
            "unsupported type for device in devices list: GPU-b1028956-cfa2-0990-bf4a-5da9abb5176, string",
        ),
        (
            "['MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3']",
            "[0]",
            "unsupported type for device in devices list: MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3, string",
        ),
    ],
)
def test_rejected_devices_forms(devices: str, path_suffix: str, reason: str) -> None:
    error = rejection(one_resource(f"name: gpu\nreplicas: 2\ndevices: {devices}"))
    assert (error.path, error.reason) == ("sharing.timeSlicing.resources[0].devices" + path_suffix, reason)


def test_rename_goes_through_resource_name_rules() -> None:
    error = rejection(one_resource("name: gpu\nreplicas: 2\nrename: GPU"))
    assert error.path == "sharing.timeSlicing.resources[0].rename"
    assert error.reason.startswith("incorrect format for resource name 'nvidia.com/GPU'")


@pytest.mark.parametrize("first_replicas, second_replicas", [(2, 4), (4, 2)])
def test_duplicate_resource_names_are_accepted_with_a_warning(
    first_replicas: int, second_replicas: int
) -> None:
    text = time_slicing(
        f"    - name: gpu\n      replicas: {first_replicas}\n"
        f"    - name: nvidia.com/gpu\n      replicas: {second_replicas}\n"
    )
    result = parse(text)
    assert any(
        w.startswith("sharing.timeSlicing.resources[1].name: duplicate of sharing.timeSlicing.resources[0]")
        for w in result.warnings
    )
    # The largest of the duplicates wins (replica IDs overwrite), whichever comes last.
    assert [(r.name, r.replicas) for r in advertised_resources(result.config)] == [("nvidia.com/gpu", 4)]


# --- A.3.5 resource names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "qualified"),
    [
        ("gpu", "nvidia.com/gpu"),
        ("nvidia.com/gpu", "nvidia.com/gpu"),
        ("mig-1g.10gb", "nvidia.com/mig-1g.10gb"),
        ("nvidia.com/gpu.shared", "nvidia.com/gpu.shared"),
        ("a" * 52, "nvidia.com/" + "a" * 52),
    ],
)
def test_resource_name_prefix_is_prepended(written: str, qualified: str) -> None:
    resources = parse(one_resource(f"name: {written}\nreplicas: 2")).config.sharing.time_slicing
    assert resources is not None and resources.resources[0].name == qualified


def test_resource_name_longer_than_63_is_rejected() -> None:
    error = rejection(one_resource(f"name: {'a' * 53}\nreplicas: 2"))
    assert (
        error.reason == f"fully-qualified resource name must be 63 characters or less: nvidia.com/{'a' * 53}"
    )


@pytest.mark.parametrize("name", ["GPU", "$invalid$", "example.com/gpu", "-gpu", "gpu.", "a_b", "''"])
def test_resource_name_must_be_a_lowercase_dns_subdomain(name: str) -> None:
    error = rejection(one_resource(f"name: {name}\nreplicas: 2"))
    assert error.path == "sharing.timeSlicing.resources[0].name"
    assert error.reason.startswith("incorrect format for resource name 'nvidia.com/")
    assert "a lowercase RFC 1123 subdomain must consist of" in error.reason


# --- A.3.6 resources.gpus / resources.mig --------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("name: gpu", "resources must have a 'pattern' field set"),
        ("pattern: '*'", "resources must have a 'name' field set"),
    ],
)
def test_resources_entries_need_pattern_and_name(entry: str, reason: str) -> None:
    error = rejection(f"version: v1\nresources:\n  gpus:\n  - {entry}\n")
    assert (error.path, error.reason) == ("resources.gpus[0]", reason)


def test_resources_section_is_accepted_but_ignored_at_runtime() -> None:
    result = parse("version: v1\nresources:\n  mig:\n  - pattern: '1g.12gb'\n    name: mig-small\n")
    assert result.config.resources.mig == (
        dpc.ResourcePattern(pattern="1g.12gb", name="nvidia.com/mig-small"),
    )
    assert "resources: customizing 'resources' is not supported by the plugin; ignored" in result.warnings


# --- A.3.7 flag checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_known_mig_strategies_are_accepted(strategy: str, plugin_version: str) -> None:
    assert (
        parse(f"flags:\n  migStrategy: {strategy}\n", plugin_version).effective_flags.mig_strategy == strategy
    )


@pytest.mark.parametrize(
    ("plugin_version", "reason"), [(OLD, "unknown strategy: Single"), (NEW, "unknown MIG strategy: Single")]
)
def test_mig_strategy_is_case_sensitive_and_worded_per_version(plugin_version: str, reason: str) -> None:
    error = rejection("flags:\n  migStrategy: Single\n", plugin_version)
    assert (error.path, error.reason) == ("flags.migStrategy", reason)


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("envvar", ("envvar",)),
        ("[envvar, volume-mounts]", ("envvar", "volume-mounts")),
        ("cdi-annotations", None),
    ],
)
def test_device_list_strategy_string_or_list(
    value: str, parsed: tuple[str, ...] | None, plugin_version: str
) -> None:
    flags = parse(f"flags:\n  plugin:\n    deviceListStrategy: {value}\n", plugin_version).effective_flags
    assert flags.device_list_strategy == (parsed or (value,))


def test_cdi_cri_is_a_0_17_1_device_list_strategy() -> None:
    text = "flags:\n  plugin:\n    deviceListStrategy: [envvar, cdi-cri]\n"
    assert parse(text, NEW).effective_flags.device_list_strategy == ("envvar", "cdi-cri")
    error = rejection(text, OLD)
    assert (error.path, error.reason) == (
        "flags.plugin.deviceListStrategy",
        "invalid --device-list-strategy option: invalid strategy: cdi-cri",
    )


def test_device_list_strategy_of_the_wrong_type() -> None:
    error = rejection("flags:\n  plugin:\n    deviceListStrategy: [1]\n")
    assert (error.path, error.reason) == (
        "flags.plugin.deviceListStrategy",
        "invalid deviceListStrategy: [1]",
    )


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
def test_device_id_strategy(plugin_version: str) -> None:
    assert (
        parse(
            "flags:\n  plugin:\n    deviceIDStrategy: index\n", plugin_version
        ).effective_flags.device_id_strategy
        == "index"
    )
    error = rejection("flags:\n  plugin:\n    deviceIDStrategy: UUID\n", plugin_version)
    assert (error.path, error.reason) == (
        "flags.plugin.deviceIDStrategy",
        "invalid --device-id-strategy option: UUID",
    )


MPS = time_slicing("    - name: gpu\n      replicas: 3\n", section="mps")


def test_mps_needs_an_mps_root_by_default() -> None:
    error = rejection(MPS, NEW)
    assert (error.path, error.reason) == ("flags.mpsRoot", "using MPS requires --mps-root to be specified")


def test_mps_root_from_the_file_or_the_chart() -> None:
    with_root = MPS.replace("version: v1\n", "version: v1\nflags:\n  mpsRoot: /run/nvidia/mps\n")
    assert parse(with_root, NEW).config.sharing.mps is not None
    result = parse(MPS, NEW, chart_supplies_mps_root=True)
    assert result.effective_flags.mps_root == dpc.CHART_MPS_ROOT


def test_mps_with_mixed_mig_strategy_is_rejected() -> None:
    text = MPS.replace("version: v1\n", "version: v1\nflags:\n  migStrategy: mixed\n")
    error = rejection(text, NEW, chart_supplies_mps_root=True)
    assert (error.path, error.reason) == (
        "sharing.mps",
        "using --mig-strategy=mixed is not supported with MPS",
    )


def test_mps_resources_follow_the_time_slicing_rules() -> None:
    error = rejection(MPS.replace("replicas: 3", "replicas: 1"), NEW, chart_supplies_mps_root=True)
    assert str(error) == "sharing.mps.resources[0].replicas: number of replicas must be >= 2"


@pytest.mark.parametrize(
    ("channel_ids", "valid"), [("[]", True), ("[0]", True), ("[1]", False), ("[0, 1]", False)]
)
def test_imex_channel_ids(channel_ids: str, valid: bool) -> None:
    text = f"version: v1\nimex:\n  channelIDs: {channel_ids}\n"
    if valid:
        parse(text, NEW)
    else:
        error = rejection(text, NEW)
        assert error.path == "imex.channelIDs"
        assert error.reason.startswith(
            "invalid IMEX channel IDs: invalid IMEX config: channelIDs must be [] or [0]"
        )


@pytest.mark.parametrize(
    ("strategy", "valid"), [("auto", True), ("nvml", True), ("tegra", True), ("Auto", False)]
)
def test_device_discovery_strategy(strategy: str, valid: bool) -> None:
    text = f"flags:\n  deviceDiscoveryStrategy: {strategy}\n"
    if valid:
        assert parse(text, NEW).effective_flags.device_discovery_strategy == strategy
    else:
        assert rejection(text, NEW).reason == f"invalid --device-discovery-strategy option {strategy}"


@pytest.mark.parametrize(
    ("text", "warned_path"),
    [
        (MPS, "sharing.mps"),
        ("version: v1\nimex:\n  channelIDs: [7]\n", "imex"),
        ("flags:\n  deviceDiscoveryStrategy: bogus\n", "flags.deviceDiscoveryStrategy"),
        ("flags:\n  mpsRoot: 5\n", "flags.mpsRoot"),
    ],
)
def test_0_17_1_keys_are_ignored_by_0_14_5_with_a_warning(text: str, warned_path: str) -> None:
    result = parse(text, OLD)
    assert result.config.sharing.mps is None and result.config.imex == dpc.Imex()
    assert any(
        w.startswith(f"{warned_path}: '") and w.endswith("' needs plugin 0.17.1 or later; 0.14.5 ignores it")
        for w in result.warnings
    )


# --- what 0.20.0 changed from 0.17.1 (read in `git diff v0.17.1 v0.20.0`, confirmed by the recorded runs) ---

POLICY = "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: {}\n"


@pytest.mark.parametrize("policy", ["distributed", "packed"])
def test_0_20_0_allocation_policies(policy: str) -> None:
    assert parse(POLICY.format(policy), LATEST).effective_flags.shared_devices_allocation_policy == policy


def test_0_20_0_allocation_policy_defaults_to_distributed() -> None:
    # The CLI default of --shared-devices-allocation-policy; a `null` in the file leaves the flag unset too.
    assert parse("version: v1\n", LATEST).effective_flags.shared_devices_allocation_policy == "distributed"
    assert parse(POLICY.format("~"), LATEST).effective_flags.shared_devices_allocation_policy == "distributed"
    assert parse("version: v1\n", NEW).effective_flags.shared_devices_allocation_policy is None


@pytest.mark.parametrize("policy", ["Packed", "''", "spread"])
def test_0_20_0_refuses_other_allocation_policies(policy: str) -> None:
    error = rejection(POLICY.format(policy), LATEST)
    shown = "" if policy == "''" else policy
    assert (error.path, error.reason) == (
        "flags.plugin.sharedDevicesAllocationPolicy",
        f"invalid --shared-devices-allocation-policy option: {shown}",
    )


def test_0_20_0_allocation_policy_must_be_a_string() -> None:
    error = rejection(POLICY.format("5"), LATEST)
    assert (error.path, error.reason) == (
        "flags.plugin.sharedDevicesAllocationPolicy",
        "json: cannot unmarshal number into Go value of type string",
    )


def test_allocation_policy_from_the_environment() -> None:
    overrides = flag_overrides((), {"SHARED_DEVICES_ALLOCATION_POLICY": "packed"}, LATEST)
    result = parse(POLICY.format("distributed"), LATEST, overrides=overrides)
    assert result.effective_flags.shared_devices_allocation_policy == "packed"
    error = rejection("version: v1\n", LATEST, overrides={"plugin.sharedDevicesAllocationPolicy": "x"})
    assert (
        error.reason == "invalid --shared-devices-allocation-policy option: x (value from a CLI/env override)"
    )


def test_gdrcopy_enabled_is_a_0_20_0_flag() -> None:
    assert parse("version: v1\n", LATEST).effective_flags.gdrcopy_enabled is False
    assert parse("flags:\n  gdrcopyEnabled: true\n", LATEST).effective_flags.gdrcopy_enabled is True
    assert flag_overrides(["--gdrcopy-enabled"], {}, LATEST) == {"gdrcopyEnabled": True}
    error = rejection("flags:\n  gdrcopyEnabled: 'yes'\n", LATEST)
    assert (error.path, error.reason) == (
        "flags.gdrcopyEnabled",
        "json: cannot unmarshal string into Go value of type bool",
    )


@pytest.mark.parametrize(
    ("text", "warned_path", "key"),
    [
        ("flags:\n  gdrcopyEnabled: 'yes'\n", "flags.gdrcopyEnabled", "gdrcopyEnabled"),
        (
            POLICY.format("bogus"),
            "flags.plugin.sharedDevicesAllocationPolicy",
            "sharedDevicesAllocationPolicy",
        ),
    ],
)
@pytest.mark.parametrize("plugin_version", [OLD, NEW])
def test_0_20_0_keys_are_ignored_before_0_20_0(
    text: str, warned_path: str, key: str, plugin_version: str
) -> None:
    result = parse(text, plugin_version)
    assert (
        f"{warned_path}: '{key}' needs plugin 0.20.0 or later; {plugin_version} ignores it" in result.warnings
    )


MPS_ROOTED = MPS.replace("version: v1\n", "version: v1\nflags:\n  mpsRoot: /run/nvidia/mps\n")


@pytest.mark.parametrize(
    ("option", "plugin_version", "stored"),
    [
        # 0.17.1 stores what the file says (absent: false) and forces true at start-up (upstream_view below).
        ("", NEW, False),
        ("    failRequestsGreaterThanOne: false\n", NEW, False),
        # 0.20.0: a pointer that NewConfig sets to true only when the file leaves it unset.
        ("", LATEST, True),
        ("    failRequestsGreaterThanOne: ~\n", LATEST, True),
        ("    failRequestsGreaterThanOne: false\n", LATEST, False),
        ("    failRequestsGreaterThanOne: true\n", LATEST, True),
    ],
)
def test_mps_fail_requests_greater_than_one(option: str, plugin_version: str, stored: bool) -> None:
    text = MPS_ROOTED.replace("  mps:\n", "  mps:\n" + option)
    mps = parse(text, plugin_version).config.sharing.mps
    assert mps is not None and mps.fail_requests_greater_than_one is stored


def test_0_20_0_time_slicing_leaves_fail_requests_greater_than_one_unset() -> None:
    section = parse(one_resource("name: gpu\nreplicas: 2"), LATEST).config.sharing.time_slicing
    assert section is not None and section.fail_requests_greater_than_one is None
    section = parse(one_resource("name: gpu\nreplicas: 2"), NEW).config.sharing.time_slicing
    assert section is not None and section.fail_requests_greater_than_one is False


def test_infinite_durations_from_0_20_0() -> None:
    text = "flags:\n  gfd:\n    sleepInterval: infinite\n"
    gfd = parse(text, LATEST).config.flags.gfd
    assert gfd is not None and gfd.sleep_interval_ns == 2**63 - 1  # Go's math.MaxInt64
    for plugin_version in (OLD, NEW):
        error = rejection(text, plugin_version)
        assert (error.path, error.reason) == ("flags.gfd.sleepInterval", 'time: invalid duration "infinite"')


def test_render_round_trips_0_20_0_fields() -> None:
    source = (
        "version: v1\nflags:\n  gdrcopyEnabled: true\n  plugin:\n    sharedDevicesAllocationPolicy: packed\n"
        "  gfd:\n    sleepInterval: infinite\n"
        "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 4\n"
    )
    config = parse(source, LATEST).config
    assert parse(render(config), LATEST).config == config


# --- A.2 defaults and overrides ------------------------------------------------------------------------


def test_defaults_after_parsing() -> None:
    flags = parse("version: v1\n").effective_flags
    assert flags.model_dump(exclude={"overridden"}) == {
        "mig_strategy": "none",
        "fail_on_init_error": True,
        "nvidia_driver_root": "/",
        "gds_enabled": False,
        "mofed_enabled": False,
        "pass_device_specs": False,
        "device_list_strategy": ("envvar",),
        "device_id_strategy": "uuid",
        "cdi_annotation_prefix": "cdi.k8s.io/",
        "nvidia_ctk_path": "/usr/bin/nvidia-ctk",
        "container_driver_root": "/driver-root",
        "mps_root": None,
        "nvidia_dev_root": None,
        "device_discovery_strategy": None,
        "gdrcopy_enabled": None,
        "shared_devices_allocation_policy": None,
    }
    newer = parse("version: v1\nflags:\n  nvidiaDriverRoot: /run/nvidia/driver\n", NEW).effective_flags
    assert (newer.mps_root, newer.nvidia_dev_root, newer.device_discovery_strategy) == (
        "",
        "/run/nvidia/driver",
        "auto",
    )


def test_override_beats_the_file() -> None:
    config = parse("flags:\n  migStrategy: none\n").config
    flags = effective_flags(config, overrides={"migStrategy": "single"})
    assert flags.mig_strategy == "single"
    assert flags.overridden == (
        dpc.FlagOverride(name="migStrategy", file_value="none", effective_value="single"),
    )
    assert flags.overridden[0].changes_value


def test_override_can_rescue_an_invalid_file_value() -> None:
    # Reference A.2: with MIG_STRATEGY=single the plugin starts even though the file says `bogus`.
    assert (
        parse(
            "flags:\n  migStrategy: bogus\n", overrides={"migStrategy": "single"}
        ).effective_flags.mig_strategy
        == "single"
    )
    error = rejection("version: v1\n", overrides={"migStrategy": "bogus"})
    assert error.reason == "unknown strategy: bogus (value from a CLI/env override)"


def test_cli_beats_env_beats_file() -> None:
    overrides = flag_overrides(
        ["--mig-strategy=single", "--pass-device-specs"],
        {"MIG_STRATEGY": "mixed", "FAIL_ON_INIT_ERROR": "false"},
    )
    assert overrides == {"migStrategy": "single", "failOnInitError": False, "passDeviceSpecs": True}
    flags = parse(
        "flags:\n  migStrategy: none\n  failOnInitError: true\n", overrides=overrides
    ).effective_flags
    assert (flags.mig_strategy, flags.fail_on_init_error, flags.pass_device_specs) == ("single", False, True)


def test_seed_daemonset_args_override_the_l20_file() -> None:
    # The seed's L20 DaemonSet passes --mig-strategy=single next to a file that says `migStrategy: none`.
    args = [
        "--fail-on-init-error=false",
        "--mig-strategy=single",
        "--pass-device-specs=true",
        "--config-file=/x/l20",
    ]
    result = parse(SEED_CONFIGMAP_TEMPLATE.format(replicas=8), overrides=flag_overrides(args))
    changed = [o for o in result.effective_flags.overridden if o.changes_value]
    assert [(o.name, o.file_value, o.effective_value) for o in changed] == [("migStrategy", "none", "single")]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--bogus"], {}, "flag provided but not defined: -bogus"),
        (["--mig-strategy"], {}, "flag needs an argument: -mig-strategy"),
        ([], {"FAIL_ON_INIT_ERROR": "maybe"}, "could not parse 'maybe' as bool"),
    ],
)
def test_command_lines_the_plugin_refuses(args: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(GpushareError, match=re.escape(message)):
        flag_overrides(args, env)


def test_flag_parsing_stops_at_the_first_positional_argument() -> None:
    assert flag_overrides(["--mig-strategy=single", "extra", "--mig-strategy=mixed"]) == {
        "migStrategy": "single"
    }


def test_unknown_override_names_are_rejected() -> None:
    with pytest.raises(GpushareError, match="unknown device-plugin 0.14.5 flag override 'mpsRoot'"):
        effective_flags(dpc.DevicePluginConfig(), overrides={"mpsRoot": "/x"})


# --- warnings about what the plugin ignores ------------------------------------------------------------


def test_rename_is_ignored_unless_it_is_the_default_shared_name() -> None:
    result = parse(one_resource("name: gpu\nreplicas: 2\nrename: gpu-fast"))
    assert (
        "sharing.timeSlicing.resources[0].rename: 'rename' is not supported by the plugin; ignored "
        "(advertised as 'nvidia.com/gpu')"
    ) in result.warnings
    default_rename = one_resource("name: gpu\nreplicas: 2\nrename: gpu.shared").replace(
        "timeSlicing:\n", "timeSlicing:\n    renameByDefault: true\n"
    )
    assert parse(default_rename).warnings == []


def test_devices_other_than_all_are_ignored() -> None:
    result = parse(one_resource("name: gpu\nreplicas: 2\ndevices: [0]"))
    assert result.warnings == [
        "sharing.timeSlicing.resources[0].devices: 'devices' is not supported by the plugin; ignored "
        "(all devices are shared)"
    ]


def test_mps_wins_over_time_slicing_in_0_17_1() -> None:
    text = MPS + "  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
    result = parse(text, NEW, chart_supplies_mps_root=True)
    assert "sharing.timeSlicing: ignored: 'mps' takes precedence over 'timeSlicing'" in result.warnings
    assert (
        "sharing.mps.failRequestsGreaterThanOne: plugin 0.17.1 forces this to true for MPS (0.20.0 honours false)"
        in result.warnings
    )
    assert [r.sharing_strategy for r in advertised_resources(result.config)] == ["mps"]


# --- advertised resources ------------------------------------------------------------------------------


def test_advertised_names_keep_the_name_and_suffix_the_product_label() -> None:
    config = time_slicing_config([("nvidia.com/gpu", 4), ("mig-1g.12gb", 2)], "mixed")
    assert advertised_resources(config) == [
        AdvertisedResource(
            name="nvidia.com/gpu",
            replicas=4,
            product_label_suffix="-SHARED",
            source_name="nvidia.com/gpu",
            sharing_strategy="time-slicing",
        ),
        AdvertisedResource(
            name="nvidia.com/mig-1g.12gb",
            replicas=2,
            product_label_suffix="-SHARED",
            source_name="nvidia.com/mig-1g.12gb",
            sharing_strategy="time-slicing",
        ),
    ]


def test_rename_by_default_advertises_the_shared_name_without_label_suffix() -> None:
    config = time_slicing_config([("nvidia.com/gpu", 4)], "none", rename_by_default=True)
    [resource] = advertised_resources(config)
    assert (resource.name, resource.product_label_suffix) == ("nvidia.com/gpu.shared", "")


def test_no_sharing_advertises_nothing_shared() -> None:
    assert advertised_resources(exclusive_config("single")) == []


# --- render, builders, round trips ---------------------------------------------------------------------


@pytest.mark.parametrize(("key", "replicas"), sorted(SEED_CONFIGMAP_REPLICAS.items()))
def test_seed_configmap_values_are_reproduced_and_valid(key: str, replicas: int) -> None:
    seed_value = SEED_CONFIGMAP_TEMPLATE.format(replicas=replicas)
    assert render(time_slicing_config([("nvidia.com/gpu", replicas)], "none")).rstrip(
        "\n"
    ) == seed_value.rstrip("\n")
    for plugin_version in PLUGIN_VERSIONS:
        result = parse(seed_value, plugin_version)
        assert result.warnings == []
        assert [(r.name, r.replicas) for r in advertised_resources(result.config)] == [
            ("nvidia.com/gpu", replicas)
        ]


def test_exclusive_config_renders_only_the_mig_strategy() -> None:
    assert render(exclusive_config("single")) == "version: v1\nflags:\n  migStrategy: single\n"


@pytest.mark.parametrize(
    "resources",
    [[("nvidia.com/gpu", 1)], [], [("GPU", 2)]],
)
def test_builder_refuses_what_the_plugin_would_refuse(resources: list[tuple[str, int]]) -> None:
    with pytest.raises(DevicePluginConfigError):
        time_slicing_config(resources, "none")


def test_builder_refuses_an_unknown_mig_strategy() -> None:
    with pytest.raises(DevicePluginConfigError, match="unknown strategy: bogus"):
        exclusive_config("bogus")


ROUND_TRIP_SOURCES = [
    SEED_CONFIGMAP_TEMPLATE.format(replicas=8),
    "version: v1\n",
    "version: v1\nflags:\n  migStrategy: mixed\n  failOnInitError: false\n  nvidiaDriverRoot: 'y'\n"
    "  plugin:\n    deviceListStrategy: [envvar, volume-mounts]\n    deviceIDStrategy: index\n"
    "    passDeviceSpecs: true\n  gfd:\n    sleepInterval: 90s\n    oneshot: true\n"
    "resources:\n  gpus:\n  - pattern: '*'\n    name: gpu\n"
    "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
    "    - name: gpu\n      replicas: 3\n      devices: ['0', '1:0']\n      rename: other\n"
    "    - name: mig-1g.12gb\n      replicas: 2\n      devices: 1\n",
]


@pytest.mark.parametrize("plugin_version", PLUGIN_VERSIONS)
@pytest.mark.parametrize("source", ROUND_TRIP_SOURCES)
def test_render_then_parse_round_trips(source: str, plugin_version: str) -> None:
    config = parse(source, plugin_version).config
    rendered = render(config)
    assert parse(rendered, plugin_version).config == config
    assert render(parse(rendered, plugin_version).config) == rendered


def test_render_round_trips_0_17_1_sections() -> None:
    source = (
        "version: v1\nflags:\n  mpsRoot: /run/nvidia/mps\n  deviceDiscoveryStrategy: nvml\n"
        "sharing:\n  mps:\n    failRequestsGreaterThanOne: true\n    resources:\n    - name: gpu\n      replicas: 4\n"
        "imex:\n  channelIDs: [0]\n  required: true\n"
    )
    config = parse(source, NEW).config
    assert parse(render(config), NEW).config == config


def test_render_quotes_strings_go_yaml_would_misread() -> None:
    # `y` is a boolean and `1e3` a float to go-yaml v2; unquoted they would change type on the way back.
    config = dpc.DevicePluginConfig(flags=dpc.Flags(nvidia_driver_root="y", mig_strategy="1e3"))
    rendered = render(config)
    assert "nvidiaDriverRoot: 'y'" in rendered and "migStrategy: '1e3'" in rendered


# --- run_validate_cli ----------------------------------------------------------------------------------


def run_cli(paths: list[str], plugin_version: str = OLD) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_validate_cli(paths, plugin_version, out, err)
    return status, out.getvalue(), err.getvalue()


def test_cli_all_valid_exits_0_and_prints_warnings_to_err(tmp_path: Path) -> None:
    good = tmp_path / "l20.yaml"
    good.write_text(SEED_CONFIGMAP_TEMPLATE.format(replicas=8))
    noisy = tmp_path / "noisy.yaml"
    noisy.write_text("version: v1\nextra: 1\n")
    status, out, err = run_cli([str(good), str(noisy)])
    assert status == 0
    assert out == f"{good}: valid\n{noisy}: valid\n"
    assert err == f"{noisy}: warning: extra: unknown key, ignored by the plugin\n"


def test_cli_invalid_exits_1_and_names_the_field(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("version: v1\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(one_resource("name: gpu\nreplicas: 1"))
    status, out, _ = run_cli([str(good), str(bad)])
    assert status == 1
    assert out.splitlines() == [
        f"{good}: valid",
        f"{bad}: invalid: sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2",
    ]


def test_cli_unreadable_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: v2\n")
    status, out, err = run_cli([str(tmp_path), str(bad), str(tmp_path / "missing.yaml")])
    assert status == 2
    assert out == f"{bad}: invalid: version: unknown version: v2\n"
    assert err.splitlines() == [
        f"{tmp_path}: is a directory, not a file",
        f"{tmp_path / 'missing.yaml'}: no such file",
    ]


def test_cli_checks_against_the_requested_plugin_version(tmp_path: Path) -> None:
    cri = tmp_path / "cri.yaml"
    cri.write_text("flags:\n  plugin:\n    deviceListStrategy: cdi-cri\n")
    assert run_cli([str(cri)], NEW)[0] == 0
    assert run_cli([str(cri)], OLD)[0] == 1
    assert run_cli([str(cri)], "0.99.0")[0] == 2


# --- recorded upstream behaviour -----------------------------------------------------------------------

UPSTREAM_VECTORS: list[dict[str, Any]] = json.loads((FIXTURES / "upstream_vectors.json").read_text())[
    "vectors"
]


def upstream_view(result: dpc.ParseResult) -> dict[str, Any]:
    """Our result in the shape the upstream vectors record the plugin's final config."""
    flags, config = result.effective_flags, result.config
    pointer_era = dpc.version_at_least(result.plugin_version, "0.20.0")
    view: dict[str, Any] = {
        "migStrategy": flags.mig_strategy,
        "failOnInitError": flags.fail_on_init_error,
        "nvidiaDriverRoot": flags.nvidia_driver_root,
        "passDeviceSpecs": flags.pass_device_specs,
        "deviceListStrategy": list(flags.device_list_strategy),
        "deviceIDStrategy": flags.device_id_strategy,
        "mpsRoot": flags.mps_root,
        "nvidiaDevRoot": flags.nvidia_dev_root,
        "deviceDiscoveryStrategy": flags.device_discovery_strategy,
        "imexChannelIDs": list(config.imex.channel_ids),
    }
    if pointer_era:
        view["sharedDevicesAllocationPolicy"] = flags.shared_devices_allocation_policy
        view["gdrcopyEnabled"] = flags.gdrcopy_enabled
    for key, section in (("timeSlicing", config.sharing.time_slicing), ("mps", config.sharing.mps)):
        if section is not None:
            view[key] = {
                "renameByDefault": section.rename_by_default,
                # 0.17.1 forces true for MPS; from 0.20.0 the stored (pointer) value is what runs.
                "failRequestsGreaterThanOne": True
                if key == "mps" and not pointer_era
                else section.fail_requests_greater_than_one,
                "resources": [
                    [
                        r.name,
                        r.replicas,
                        r.name + dpc.SHARED_RESOURCE_SUFFIX if section.rename_by_default else "",
                    ]
                    for r in section.resources
                ],
            }
    return view


def normalised_upstream_error(error: str) -> str:
    """Undo the two encoding/json wordings of the Go used for recording that release builds do not have."""
    error = error.replace("map[string]jsontext.Value", "map[string]json.RawMessage")
    error = re.sub(r"into (Go struct field \S+|\.\S+) of type", "into Go value of type", error)
    return error.replace("Unsupported map key", "unsupported map key")


RECORDED_RUNS = [
    pytest.param(vector, plugin_version, id=f"v{index:03d}-{plugin_version}")
    for index, vector in enumerate(UPSTREAM_VECTORS)
    for plugin_version in PLUGIN_VERSIONS
    if plugin_version in vector["upstream"]
]


@pytest.mark.parametrize(("vector", "plugin_version"), RECORDED_RUNS)
def test_agrees_with_recorded_upstream_runs(vector: dict[str, Any], plugin_version: str) -> None:
    expected = vector["upstream"][plugin_version]
    overrides = flag_overrides((), vector["env"], plugin_version) if vector["env"] else None
    try:
        result = parse(vector["text"], plugin_version, overrides=overrides)
    except DevicePluginConfigError as error:
        assert not expected["ok"], f"upstream accepted it; we said {error}"
        upstream = normalised_upstream_error(expected["error"])
        if (
            "error converting YAML to JSON: yaml:" not in upstream
        ):  # YAML syntax errors are worded differently
            reason = re.sub(r" \((found '.*|value from a CLI/env override)\)$", "", error.reason)
            assert reason in upstream
        return
    assert expected["ok"], f"upstream rejected it: {expected['error']}"
    assert upstream_view(result) == expected["effective"]
