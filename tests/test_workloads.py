"""policies/gpushare_policies/workloads.py: how the pack reads where a plugin runs and which file it reads.

Each case sits on a boundary of that reading (a node-affinity `Gt`/`Lt` at the label's own value, the
`--` that ends the flags, the chart version the default affinity starts at) and is judged by the policy a
user meets it through, on the real program's resources (tests/test_policies.py's helpers): the
device-plugin chart with a MIG pool (tests/fixtures/stacks/Pulumi.helm-mig.yaml: pools h20 and l20) and
prod's per-model DaemonSet for l20.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from conftest import HELM_MIG, PROJECT_DIR
from test_policies import (
    Program,
    Res,
    _isolated_environment,
    messages_of,
    prod,
    program,
    stack_messages,
    staging,
)

from gpushare import kube_names
from gpushare.resource_types import HELM_RELEASE
from gpushare_policies import rules
from gpushare_policies.config_files import RESTRUCTURED_IN
from gpushare_policies.props import Resource
from gpushare_policies.workloads import TKE_DAEMON_SET, helm_plugin

__all__ = ["_isolated_environment", "prod", "staging"]  # fixtures used by name below

RELEASE = "gpushare-device-plugin-release"
RELEASE_URN = f"urn:pulumi:{HELM_MIG}::gpushare::kubernetes:helm.sh/v3:Release::{RELEASE}"
RELEASE_LABEL = "Helm release nvidia-device-plugin/nvidia-device-plugin"
CHART = f"{RELEASE_LABEL} (chart nvidia-device-plugin 0.17.1)"  # the fixture's pinned chart
# A label of the user's own on each pool (TKE node pools carry any labels the stack gives them).
MEMORY_LABEL = "example.com/gpu-memory-gib"
MEMORY_GIB = {"gpushare-l20-pool": "48", "gpushare-h20-pool": "96"}


def schedulable(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["helm-plugin-schedulable"], resources)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------------
# Requirement.matches: Gt and Lt are strict, as Kubernetes' node affinity is


def _with_affinity(staging: Program, operator: str, value: str) -> list[Res]:
    resources = copy.deepcopy(staging.resources)
    for res in resources:
        if res.name in MEMORY_GIB:
            res.props["labels"][MEMORY_LABEL] = MEMORY_GIB[res.name]
    release = next(r for r in resources if r.name == RELEASE)
    release.props["values"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": MEMORY_LABEL, "operator": operator, "values": [value]}]}
                ]
            }
        }
    }
    return resources


def _blocked(pools: str, nowhere: bool = False) -> list[tuple[str, str | None]]:
    where = " (on no GPU pool at all)" if nowhere else ""
    return [
        (
            f"{CHART} schedules on no node of pool(s) {pools}{where}: its values.affinity matches none of "
            "their nodes' labels.",
            RELEASE_URN,
        )
    ]


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        # l20 is labelled 48, h20 96.
        ("Gt", "47", []),  # 48 > 47 and 96 > 47
        ("Gt", "48", _blocked("l20")),  # 48 > 48 is false: the label equal to the value is not greater
        ("Gt", "96", _blocked("h20, l20", nowhere=True)),
        ("Lt", "97", []),  # 48 < 97 and 96 < 97
        ("Lt", "96", _blocked("h20")),  # 96 < 96 is false
        ("Lt", "48", _blocked("h20, l20", nowhere=True)),
        ("Gt", "forty-eight", _blocked("h20, l20", nowhere=True)),  # not an integer: matches no node
    ],
)
def test_a_gt_or_lt_affinity_at_the_labels_own_value_does_not_match(
    staging: Program, operator: str, value: str, expected: list[tuple[str, str | None]]
) -> None:
    assert schedulable(_with_affinity(staging, operator, value)) == expected


# --------------------------------------------------------------------------------------------------------
# DaemonSetPlugin.config_file: an argument after `--` is no flag (the plugin's flag parser stops there)

CONFIG_DIR = kube_names.CONFIG_MOUNT_DIR  # the directory the l20 DaemonSet mounts the ConfigMap at
DIRECTORY_REFUSED = f"is mounted at {CONFIG_DIR}"


def _l20_plugin(prod: Program, args: list[str], env: list[dict[str, Any]]) -> Res:
    plugin = copy.deepcopy(prod.get("gpushare-plugins-l20"))
    container = plugin.props["spec"]["template"]["spec"]["containers"][0]
    container["args"] = args
    container["env"] = env
    return plugin


def test_a_config_file_flag_after_the_double_dash_is_not_read(prod: Program) -> None:
    env = [{"name": "CONFIG_FILE", "value": f"{CONFIG_DIR}/l20"}]
    after_dash = _l20_plugin(prod, ["--fail-on-init-error=false", "--", f"--config-file={CONFIG_DIR}"], env)
    # The plugin reads CONFIG_FILE, the file of key l20: nothing to refuse, no key missing.
    assert messages_of("config-file-not-directory", [after_dash]) == []
    assert messages_of("config-key-exists", prod.but(after_dash)) == []
    # The near miss: the same flag before the `--` is read, and it names the mounted directory.
    before_dash = _l20_plugin(prod, ["--fail-on-init-error=false", f"--config-file={CONFIG_DIR}", "--"], env)
    (message,) = messages_of("config-file-not-directory", [before_dash])
    assert DIRECTORY_REFUSED in message


def test_an_environment_directory_behind_the_double_dash_is_still_refused(prod: Program) -> None:
    """The `--` ends the flags, not the reading: CONFIG_FILE naming the directory is the same crash."""
    env = [{"name": "CONFIG_FILE", "value": CONFIG_DIR}]
    plugin = _l20_plugin(prod, ["--", f"--config-file={CONFIG_DIR}/l20"], env)
    (message,) = messages_of("config-file-not-directory", [plugin])
    assert DIRECTORY_REFUSED in message


# --------------------------------------------------------------------------------------------------------
# HelmPlugin.has_default_affinity: chart 0.15.0 is the first that schedules only where a GPU is known


def _no_gpu_known(chart_version: str) -> tuple[str, str]:
    return (
        f"{RELEASE_LABEL} (chart nvidia-device-plugin {chart_version}) schedules on no node of pool(s) h20, "
        f"l20 (on no GPU pool at all): chart >= 0.15 requires NFD's NVIDIA PCI label or "
        f"{kube_names.LABEL_GPU_PRESENT}=true on the node, and there is no node-feature-discovery "
        "(gfd.enabled / nfd.enabled, or sharing.devicePlugin.nfdPresent). Label the pools "
        f"{kube_names.LABEL_GPU_PRESENT}=true or enable GFD.",
        RELEASE_URN,
    )


def _unlabelled_at(staging: Program, chart_version: str | None) -> list[Res]:
    resources = copy.deepcopy(staging.resources)
    for res in resources:
        res.props.get("labels", {}).pop(kube_names.LABEL_GPU_PRESENT, None)
    release = next(r for r in resources if r.name == RELEASE)
    if chart_version is None:
        del release.props["version"]
    else:
        release.props["version"] = chart_version
    return resources


@pytest.mark.parametrize(
    ("chart_version", "expected"),
    [
        ("0.14.5", []),  # the last chart before the restructure: a DaemonSet on every node
        ("0.15.0", [_no_gpu_known("0.15.0")]),  # the first with the default affinity
        ("0.15.1", [_no_gpu_known("0.15.1")]),
    ],
)
def test_the_default_affinity_starts_at_chart_0_15_0(
    staging: Program, chart_version: str, expected: list[tuple[str, str | None]]
) -> None:
    assert RESTRUCTURED_IN == (0, 15, 0)
    assert schedulable(_unlabelled_at(staging, chart_version)) == expected


def test_an_unpinned_chart_is_the_newest_so_it_has_the_default_affinity(staging: Program) -> None:
    """No `version`: Helm installs the newest chart, which is >= 0.15 (helm-chart-pinned says so too)."""
    assert schedulable(_unlabelled_at(staging, None)) == [_no_gpu_known("unpinned")]


def test_chart_0_15_0_without_nfd_asks_the_pools_for_the_gpu_present_label(staging: Program) -> None:
    lacking = messages_of("gpu-pool-labels", _unlabelled_at(staging, "0.15.0"))
    assert [m.split(" lacks ")[0] for m in lacking] == ["node pool h20 (H20)", "node pool l20 (L20)"]
    assert all(
        f"({RELEASE_LABEL} (chart nvidia-device-plugin 0.15.0) without NFD needs {kube_names.LABEL_GPU_PRESENT})"
        in m
        for m in lacking
    )
    assert messages_of("gpu-pool-labels", _unlabelled_at(staging, "0.14.5")) == []


# --------------------------------------------------------------------------------------------------------
# DaemonSetPlugin.config_reference: only a ConfigMap volume holds a key the pack can look up


def test_a_config_file_on_a_host_path_volume_names_no_config_map_key(prod: Program) -> None:
    """The l20 DaemonSet also mounts the hostPath /var/lib/kubelet/device-plugins: a file there is the
    node's, not a ConfigMap key, so config-key-exists has nothing to look up."""
    on_host = _l20_plugin(prod, ["--config-file=/var/lib/kubelet/device-plugins/config.yaml"], [])
    assert messages_of("config-key-exists", prod.but(on_host)) == []
    # The near miss: a file under the ConfigMap's mount names a key, and this one is missing.
    missing = _l20_plugin(prod, [f"--config-file={CONFIG_DIR}/l40s"], [])
    assert messages_of("config-key-exists", prod.but(missing))[:1] == [
        f"DaemonSet kube-system/nvidia-device-plugin-daemonset-l20: --config-file {CONFIG_DIR}/l40s reads key "
        "'l40s' of ConfigMap kube-system/time-slicing-config, which has no such key (keys: any, l20, t4); the "
        "file is missing and the plugin cannot start."
    ]


# --------------------------------------------------------------------------------------------------------
# HelmPlugin.has_default_affinity: the GPU Operator's plugin has none of the device-plugin chart's


def test_the_operator_without_nfd_asks_no_pool_for_the_gpu_present_label() -> None:
    """Pulumi.staging.yaml's GPU Operator with NFD off: its operands go where NFD's label says (that is
    operator-driver-consistent's and the operator's business), never on the chart's gpu.present affinity."""
    operator = program("staging")
    resources = copy.deepcopy(operator.resources)
    release = next(r for r in resources if r.name == "gpushare-gpu-operator-release")
    release.props["values"]["nfd"] = {"enabled": False}
    assert messages_of("gpu-pool-labels", resources) == []
    # The near miss: the device-plugin chart 0.15.0 without NFD does ask for it (above).


def test_a_config_file_mounted_by_sub_path_reads_that_key(prod: Program) -> None:
    """One key of the ConfigMap mounted as a single file (`subPath`), as hand-written DaemonSets do."""

    def sub_path_plugin(key: str) -> Res:
        plugin = _l20_plugin(prod, ["--config-file=/etc/nvidia/device-plugin.yaml"], [])
        container = plugin.props["spec"]["template"]["spec"]["containers"][0]
        container["volumeMounts"][1] = {
            "name": "time-slicing-config",
            "mountPath": "/etc/nvidia/device-plugin.yaml",
            "subPath": key,
        }
        return plugin

    assert messages_of("config-key-exists", prod.but(sub_path_plugin("l20"))) == []
    assert messages_of("config-key-exists", prod.but(sub_path_plugin("l40s")))[:1] == [
        "DaemonSet kube-system/nvidia-device-plugin-daemonset-l20: --config-file /etc/nvidia/device-plugin.yaml "
        "reads key 'l40s' of ConfigMap kube-system/time-slicing-config, which has no such key (keys: any, l20, "
        "t4); the file is missing and the plugin cannot start."
    ]


# --------------------------------------------------------------------------------------------------------
# HelmPlugin.enabled: the chart's `devicePlugin.enabled` (default true) decides whether it deploys a plugin


@pytest.mark.parametrize(
    ("enabled", "expected"),
    [
        (True, [_no_gpu_known("0.15.0")]),  # said explicitly: the chart's default, a plugin DaemonSet
        (False, []),  # the chart renders no plugin DaemonSet (a GFD-only release): nothing to schedule
    ],
)
def test_a_release_that_says_devicePlugin_enabled_is_judged_and_one_that_turns_it_off_is_not(
    staging: Program, enabled: bool, expected: list[tuple[str, str | None]]
) -> None:
    resources = _unlabelled_at(staging, "0.15.0")
    release = next(r for r in resources if r.name == RELEASE)
    release.props["values"]["devicePlugin"] = {"enabled": enabled}
    assert schedulable(resources) == expected


# --------------------------------------------------------------------------------------------------------
# HelmPlugin.overrides: the chart's compatWithCPUManager: true is PASS_DEVICE_SPECS=true on every node


def _compat_with_cpu_manager(staging: Program, file_says: str) -> list[Res]:
    """The release with values.compatWithCPUManager: true; key l20's file says flags.plugin.passDeviceSpecs."""
    release = copy.deepcopy(staging.get(RELEASE))
    release.props["values"]["compatWithCPUManager"] = True
    configs = release.props["values"]["config"]["map"]
    configs["l20"] = configs["l20"].replace(
        "flags:\n", f"flags:\n  plugin:\n    passDeviceSpecs: {file_says}\n"
    )
    return staging.but(release)


@pytest.mark.parametrize(
    ("file_says", "expected"),
    [
        (
            "false",
            [
                (
                    f"{CHART}: values.compatWithCPUManager is rendered as an env var on every node and sets "
                    "passDeviceSpecs=True, overriding passDeviceSpecs: False in Helm release "
                    'nvidia-device-plugin/nvidia-device-plugin config.map key "l20". Leave the top-level value '
                    "unset.",
                    RELEASE_URN,
                )
            ],
        ),
        ("true", []),  # the file already says what the value sets: nothing is overridden
    ],
)
def test_compat_with_cpu_manager_passes_device_specs_over_the_file(
    staging: Program, file_says: str, expected: list[tuple[str, str | None]]
) -> None:
    found = stack_messages(
        rules.POLICIES_BY_NAME["cli-flag-overrides-config"],  # type: ignore[arg-type]
        _compat_with_cpu_manager(staging, file_says),
    )
    assert found == expected


def test_the_packs_model_of_tkes_daemonset_is_the_recorded_one() -> None:
    """TKE's DaemonSet as the pack assumes it when no patch touches it equals the fixture built from the
    seed's record (args in TKE's order, the one env, the image, the switch nodeSelector), which the engine
    tests create on a real API server."""
    fixture = PROJECT_DIR / "tests" / "fixtures" / "tke_device_plugin" / "nvidia-device-plugin-daemonset.yaml"
    recorded = yaml.safe_load(fixture.read_text(encoding="utf-8"))
    pod = recorded["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    model = TKE_DAEMON_SET
    assert (
        model.argv
        == tuple(container["args"])
        == (
            "--mig-strategy=single",
            "--fail-on-init-error=false",
            "--pass-device-specs=true",
        )
    )
    assert model.env == {e["name"]: e["value"] for e in container["env"]}
    assert model.image == container["image"]
    assert model.placement is not None and dict(model.placement.node_selector) == pod["nodeSelector"]
    assert (model.namespace, model.name) == (recorded["metadata"]["namespace"], recorded["metadata"]["name"])


def test_a_config_file_flag_without_its_value_names_no_file(prod: Program) -> None:
    """`--config-file` as the last argument has no value to read (the plugin's flag parser stops: "flag
    needs an argument"), so the rules see no config file named, not a crash of the pack."""
    env = [{"name": "CONFIG_FILE", "value": CONFIG_DIR}]
    last = _l20_plugin(prod, ["--fail-on-init-error=false", "--config-file"], env)
    assert messages_of("config-file-not-directory", [last]) == []  # it exits before reading CONFIG_FILE
    assert messages_of("device-plugin-config-valid", prod.but(last)) == [
        "DaemonSet kube-system/nvidia-device-plugin-daemonset-l20: device plugin 0.14.5 refuses its command "
        "line: flag needs an argument: -config-file"
    ]


def test_a_release_with_an_empty_config_map_has_no_config_to_judge(staging: Program) -> None:
    """The chart treats an empty `config.map` as none (_helpers.tpl: `if empty .Values.config.map`, so no
    ConfigMap name and no embedded config): `config.default: any` then names a key of nothing the plugin
    reads, and config-key-exists has no key list to hold it against (not "keys: none")."""
    release = copy.deepcopy(staging.get(RELEASE))
    release.props["values"]["config"]["map"] = {}
    assert messages_of("config-key-exists", staging.but(release)) == []


def test_the_charts_top_level_values_become_the_flags_that_beat_the_file() -> None:
    """Chart 0.17.1's daemonset-device-plugin.yml passes each set value as an env var (FAIL_ON_INIT_ERROR,
    MOFED_ENABLED, DEVICE_DISCOVERY_STRATEGY, ...) and MPS_ROOT from mps.root always (values.yaml:
    /run/nvidia/mps). Booleans count in the provider's shapes only (true, "false"); `gdrcopyEnabled` is
    0.20.0's and not passed by this chart; a string list keeps its strings."""
    values = {
        "migStrategy": "mixed",
        "failOnInitError": True,
        "mofedEnabled": "false",
        "gdsEnabled": "yes",  # not a boolean the provider sends: no verdict, so not counted
        "deviceListStrategy": ["envvar", 3],
        "deviceIDStrategy": "index",
        "deviceDiscoveryStrategy": "nvml",
        "gdrcopyEnabled": True,
    }
    release = Resource(
        HELM_RELEASE,
        "urn:pulumi:dev::gpushare::kubernetes:helm.sh/v3:Release::plugin",
        "plugin",
        {"chart": "nvidia-device-plugin", "version": "0.17.1", "namespace": "nvidia", "values": values},
    )
    plugin = helm_plugin(release)
    assert plugin is not None
    assert plugin.overrides() == {
        "migStrategy": "mixed",
        "failOnInitError": True,
        "deviceListStrategy": ("envvar",),
        "deviceIDStrategy": "index",
        "mofedEnabled": False,
        "deviceDiscoveryStrategy": "nvml",
        "mpsRoot": "/run/nvidia/mps",
    }
