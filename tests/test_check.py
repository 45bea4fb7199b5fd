"""`python -m gpushare check`: the render handed to the policy pack as the engine would hand it."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, PROJECT_DIR, STACKS, device_plugin_mode, pinned_charts

from gpushare import kube_names
from gpushare.cli import main as cli_main
from gpushare.offline import policy_driver
from gpushare.offline.chart_render import RenderedRelease, render_releases
from gpushare.offline.chart_sources import ChartSources
from gpushare.offline.check import analyzed_resources, check_stack
from gpushare.offline.render import StackRun, redacted_resources, run_stack
from gpushare.offline.stack_files import load_stack_config
from gpushare.resource_types import CONFIG_MAP, HELM_RELEASE, NODE_POOL, is_chart_rendered
from gpushare.stack.model import PROJECT

# Whole processes (the pack, the CLI): make test-e2e, which CI runs after make test.
pytestmark = pytest.mark.e2e


def test_resources_reach_the_pack_as_the_engine_sends_them() -> None:
    resources = analyzed_resources(run_stack(PROJECT_DIR, "prod"))
    types = {r.type for r in resources}
    assert not any(t.startswith("pulumi:") for t in types)  # no root stack, no providers
    assert "kubernetes:apps/v1:DaemonSet" in types
    config_map = next(r for r in resources if r.type == "kubernetes:core/v1:ConfigMap")
    assert config_map.provider is not None
    assert config_map.provider.type == "pulumi:providers:kubernetes"
    # The kubeconfig is secret in the program: the pack sees it wrapped, as the engine sends it.
    assert config_map.provider.properties["kubeconfig"] == policy_driver.secret(
        config_map.provider.properties["kubeconfig"]["value"]
    )
    assert all(r.urn.startswith(f"urn:pulumi:prod::{PROJECT}::") for r in resources)


def test_sample_pack_sees_every_resource(tmp_path: Path) -> None:
    result = check_stack(PROJECT_DIR, "prod", pack_dir=FIXTURES / "sample_pack")
    inventory = next(d for d in result.report.diagnostics if d.policy_name == "stack-inventory")
    assert "11 resources:" in inventory.message
    assert result.passed


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_the_real_pack(stack: str) -> None:
    result = check_stack(PROJECT_DIR, stack)
    assert result.report.pack_name == "gpushare"
    assert not result.report.mandatory, policy_driver.format_report(result.report)


def test_check_through_the_cli_exits_0_for_prod() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpushare", "check", "--stack", "prod"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Policies:" in done.stdout
    assert "0 mandatory" in done.stdout


def _mutated_prod() -> list[policy_driver.AnalyzedResource]:
    """The prod render with the seed's mistakes typed back in, as a careless hand edit would."""
    resources = analyzed_resources(run_stack(PROJECT_DIR, "prod"))
    changed = []
    for resource in resources:
        properties = dict(resource.properties)
        if resource.type == "kubernetes:core/v1:ConfigMap":
            data = dict(properties["data"])
            # l20 typed as 10 (tuned maximum 8) and t4 hand-typed without any measurement behind it.
            data["l20"] = data["l20"].replace("replicas: 8", "replicas: 10")
            data["t4-hand"] = data["t4"]
            # t4 edited in place: the adopted plugin's checksum annotation is now stale.
            data["t4"] = data["t4"].replace("replicas: 3", "replicas: 2")
            properties["data"] = data
        if resource.type == "kubernetes:apps/v1:DaemonSet":
            # The directory crash of v0.14.5.
            container = properties["spec"]["template"]["spec"]["containers"][0]
            container["args"] = [*container["args"][:-1], "--config-file=/etc/nvidia/time-slicing-config"]
        if resource.type == "kubernetes:apps/v1:DaemonSetPatch":
            # TKE's original flag, silently overriding the file's `migStrategy: none`.
            container = properties["spec"]["template"]["spec"]["containers"][0]
            container["args"] = ["--mig-strategy=single", *container["args"]]
        changed.append(dataclasses.replace(resource, properties=properties, outputs=properties))
    return changed


@pytest.fixture(scope="module")
def seed_mistakes_report() -> policy_driver.PackReport:
    config, secret_keys = load_stack_config(PROJECT_DIR, "prod")
    return policy_driver.run_policy_pack(
        PROJECT_DIR / "policies",
        _mutated_prod(),
        stack="prod",
        project=PROJECT,
        config=config,
        secret_keys=secret_keys,
    )


def test_seed_mistakes_fail_through_the_real_protocol(seed_mistakes_report: policy_driver.PackReport) -> None:
    mandatory = {d.policy_name for d in seed_mistakes_report.mandatory}
    assert {
        "time-slicing-replicas-tuned",
        "config-file-not-directory",
        "plugin-restarts-on-config-change",
    } <= mandatory
    tuned = [
        d.message for d in seed_mistakes_report.mandatory if d.policy_name == "time-slicing-replicas-tuned"
    ]
    assert any('"l20"' in m and "10" in m and "8" in m for m in tuned), tuned
    advisory = {d.policy_name for d in seed_mistakes_report.advisory}
    assert "cli-flag-overrides-config" in advisory


def test_policy_config_can_raise_the_ceiling_through_the_protocol() -> None:
    config, secret_keys = load_stack_config(PROJECT_DIR, "prod")
    with pytest.raises(policy_driver.PolicyConfigError):
        policy_driver.run_policy_pack(
            PROJECT_DIR / "policies",
            [],
            stack="prod",
            project=PROJECT,
            config=config,
            secret_keys=secret_keys,
            policy_config={"time-slicing-replicas-tuned": {"utilizationCeiling": 0}},
        )


# --------------------------------------------------------------------------------------------------------
# staging (GPU Operator, optOut, exclusive `any`) with hand edits: each catches its policy through the protocol

# A config the MIG manager has, but 8 x 1g.12gb does not fit an H20 (7 compute slices).
TOO_MANY = "  all-1g.12gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.12gb: 8\n"


def _mutated_staging(*, mig_label: str, extra_mig_config: str = "") -> list[policy_driver.AnalyzedResource]:
    """The staging render with hand edits: the l20 pool labelled `nvidia-device-enable=enable` (TKE's
    plugin back beside the operator's), `any` typed as shared without naming its GPU, the h20 pool's MIG
    label changed, the operator's driver on over TKE's, and an inexact chart version."""
    changed = []
    for resource in analyzed_resources(run_stack(PROJECT_DIR, "staging")):
        properties = copy.deepcopy(dict(resource.properties))
        if resource.type == NODE_POOL and properties["labels"][kube_names.LABEL_POOL] == "l20":
            assert properties["labels"][kube_names.LABEL_DEVICE_ENABLE] == "disable"
            properties["labels"][kube_names.LABEL_DEVICE_ENABLE] = "enable"
        if resource.type == NODE_POOL and properties["labels"][kube_names.LABEL_POOL] == "h20":
            properties["labels"][kube_names.LABEL_MIG_CONFIG] = mig_label
        if resource.type == CONFIG_MAP and "config.yaml" in properties["data"]:
            properties["data"] = {"config.yaml": properties["data"]["config.yaml"] + extra_mig_config}
        if resource.type == CONFIG_MAP and "any" in properties["data"]:
            data = properties["data"]
            assert "sharing" not in yaml.safe_load(data["any"])  # the safe default
            data["any"] = data["l20"]  # l20's 8 replicas, for GPUs nobody named
        if resource.type == HELM_RELEASE:
            properties["values"]["driver"]["enabled"] = True  # on top of TKE's driver
            properties["version"] = "v26.7"  # not an exact chart version
        changed.append(dataclasses.replace(resource, properties=properties, outputs=properties))
    return changed


def _report(resources: list[policy_driver.AnalyzedResource]) -> policy_driver.PackReport:
    config, secret_keys = load_stack_config(PROJECT_DIR, "staging")
    return policy_driver.run_policy_pack(
        PROJECT_DIR / "policies",
        resources,
        stack="staging",
        project=PROJECT,
        config=config,
        secret_keys=secret_keys,
    )


@pytest.fixture(scope="module")
def staging_hand_edits_report() -> policy_driver.PackReport:
    return _report(_mutated_staging(mig_label="all-1g.12gb", extra_mig_config=TOO_MANY))


def _messages(report: policy_driver.PackReport, policy: str) -> list[str]:
    return [d.message for d in report.mandatory if d.policy_name == policy]


def test_opt_out_pool_labelled_enable_fails_through_the_real_protocol(
    staging_hand_edits_report: policy_driver.PackReport,
) -> None:
    labels = _messages(staging_hand_edits_report, "gpu-pool-labels")
    assert any("node pool l20 (L20) is labelled nvidia-device-enable=enable" in m for m in labels), labels
    (plugins,) = _messages(staging_hand_edits_report, "one-device-plugin-per-node")
    # The operator's plugin counts: it and TKE's both land on l20's nodes.
    assert "node pool l20: 2 device plugins" in plugins
    assert "chart gpu-operator" in plugins and "TKE DaemonSet" in plugins, plugins


def test_shared_fallback_without_a_named_gpu_fails_through_the_real_protocol(
    staging_hand_edits_report: policy_driver.PackReport,
) -> None:
    tuned = _messages(staging_hand_edits_report, "time-slicing-replicas-tuned")
    assert len(tuned) == 1 and 'key "any"' in tuned[0] and "replicas 8 is not tuned" in tuned[0], tuned


# ------------------------------------------------------------------------------- chart-rendered objects

HELM_STACK = next((stack for stack in STACKS if device_plugin_mode(stack) == "helm"), None)


@pytest.fixture(scope="module")
def helm_stack_run() -> tuple[StackRun, list[RenderedRelease]]:
    if HELM_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode helm")
    pinned_charts()
    stack_run = run_stack(PROJECT_DIR, HELM_STACK)
    releases = render_releases(redacted_resources(stack_run.run), ChartSources.from_environment(), "1.30.0")
    return stack_run, releases


def test_chart_rendered_objects_reach_the_pack_as_children_of_their_release(
    helm_stack_run: tuple[StackRun, list[RenderedRelease]],
) -> None:
    stack_run, releases = helm_stack_run
    (release,) = releases
    resources = analyzed_resources(stack_run, releases)
    assert not any(is_chart_rendered(r.urn) for r in analyzed_resources(stack_run))  # what preview gives
    rendered = [r for r in resources if is_chart_rendered(r.urn)]
    assert len(rendered) == len(release.objects) == 6
    assert resources[-6:] == rendered  # after every registered resource
    release_resource = next(r for r in resources if r.type == HELM_RELEASE)
    namespace = release.release.namespace
    daemon_set = next(r for r in rendered if r.name.endswith(f":{namespace}/nvidia-device-plugin"))
    assert daemon_set.name == f"{release_resource.name}:{namespace}/nvidia-device-plugin"
    assert daemon_set.type == "kubernetes:apps/v1:DaemonSet"
    assert daemon_set.parent == release_resource.urn
    assert daemon_set.urn == (
        f"{release_resource.urn.rpartition('::')[0]}$kubernetes:apps/v1:DaemonSet::{daemon_set.name}"
    )
    assert daemon_set.provider == release_resource.provider
    assert daemon_set.properties["spec"]["template"]["spec"]["initContainers"][0]["command"] == [
        "config-manager"
    ]
    role = next(r for r in rendered if r.type == "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert role.name == f"{release_resource.name}:nvidia-device-plugin-role"  # cluster-scoped: no namespace


def test_check_judges_what_the_engine_hands_the_pack_and_inside_the_charts_only_when_asked() -> None:
    # dev runs the device-plugin chart 0.17.1 with no image set: the one tag-only image is judged on the
    # Release (what `pulumi preview` shows the pack), and with --inside-charts on the chart's DaemonSet too.
    if HELM_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode helm")
    pinned_charts()
    release_urn = (
        f"urn:pulumi:{HELM_STACK}::gpushare::gpushare:index:GpuSharingCluster$gpushare:helm:DevicePluginRelease"
        "$kubernetes:helm.sh/v3:Release::gpushare-device-plugin-release"
    )
    chart_daemon_set_urn = (
        f"{release_urn.rpartition('::')[0]}$kubernetes:apps/v1:DaemonSet::"
        "gpushare-device-plugin-release:nvidia-device-plugin/nvidia-device-plugin"
    )

    def pinned_verdicts(**kwargs: bool) -> list[str]:
        report = check_stack(PROJECT_DIR, HELM_STACK, **kwargs).report
        return sorted(d.urn for d in report.diagnostics if d.policy_name == "plugin-image-pinned")

    assert pinned_verdicts() == [release_urn]
    assert pinned_verdicts(inside_charts=True) == sorted([release_urn, chart_daemon_set_urn])


@pytest.mark.parametrize(("flags", "on_the_chart_daemon_set"), [([], False), (["--inside-charts"], True)])
def test_the_cli_judges_inside_the_charts_with_inside_charts(
    flags: list[str], on_the_chart_daemon_set: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    if HELM_STACK is None:
        pytest.skip("no stack uses devicePlugin.mode helm")
    pinned_charts()
    status = cli_main.main(["check", "--stack", HELM_STACK, "--dir", str(PROJECT_DIR), *flags])
    out = capsys.readouterr().out
    assert status == 0  # advisories only
    # The chart's DaemonSet as the pack names it (its type and `<release resource>:<namespace>/<name>`).
    daemon_set = "(kubernetes:apps/v1:DaemonSet: gpushare-device-plugin-release:nvidia-device-plugin/nvidia-device-plugin)"
    assert (daemon_set in out) is on_the_chart_daemon_set
    assert out.count("[advisory]  plugin-image-pinned") == (2 if on_the_chart_daemon_set else 1)


def test_a_plugin_daemon_set_rendered_from_another_chart_counts_as_a_second_plugin(
    helm_stack_run: tuple[StackRun, list[RenderedRelease]],
) -> None:
    # The device-plugin chart's own DaemonSet is the Helm release the pack already counts (the stack passes,
    # test_every_stack_passes_the_real_pack); the same DaemonSet from a chart the pack does not model is a
    # plugin of its own, and lands on the same pools.
    stack_run, (release,) = helm_stack_run
    resource = release.release.resource
    other_resource = dataclasses.replace(
        resource, name="vendor-plugins", urn=f"{resource.urn.rpartition('::')[0]}::vendor-plugins"
    )
    other_release = dataclasses.replace(release.release, resource=other_resource, chart="vendor-gpu-plugins")
    plugin = next(o for o in release.objects if o.kind == "DaemonSet" and o.name == "nvidia-device-plugin")
    document = copy.deepcopy(plugin.document)
    document["metadata"]["name"] = "vendor-device-plugin"
    other = dataclasses.replace(
        release,
        release=other_release,
        objects=(dataclasses.replace(plugin, release=other_release, document=document),),
    )
    report = policy_driver.run_policy_pack(
        PROJECT_DIR / "policies",
        analyzed_resources(stack_run, [release, other]),
        stack=str(HELM_STACK),
        project=PROJECT,
        config=stack_run.raw_config,
        secret_keys=stack_run.secret_keys,
    )
    found = [d.message for d in report.mandatory if d.policy_name == "one-device-plugin-per-node"]
    assert found, policy_driver.format_report(report)
    assert all("DaemonSet" in m and "vendor-device-plugin" in m and "Helm release" in m for m in found), found
    assert {d.policy_name for d in report.mandatory} == {"one-device-plugin-per-node"}


def test_operator_mistakes_fail_through_the_real_protocol(
    staging_hand_edits_report: policy_driver.PackReport,
) -> None:
    report = staging_hand_edits_report
    (fit,) = _messages(report, "mig-config-exists")
    assert "node pool h20: label nvidia.com/mig.config=all-1g.12gb: config 'all-1g.12gb'" in fit
    assert "does not fit this pool's H20" in fit
    drivers = _messages(report, "operator-driver-consistent")
    assert len(drivers) == 2  # h20 and l20
    assert all(
        "values.driver.enabled is true" in m and "TKE's GPU node set-up installs" in m for m in drivers
    )
    (pinned,) = _messages(report, "helm-chart-pinned")
    assert "chart gpu-operator v26.7" in pinned and "not an exact chart version" in pinned


def test_a_mig_label_naming_no_config_fails_through_the_real_protocol() -> None:
    (missing,) = _messages(_report(_mutated_staging(mig_label="h20-7x1g.12gb")), "mig-config-exists")
    assert "label nvidia.com/mig.config=h20-7x1g.12gb names no config in ConfigMap gpu-operator/" in missing
    assert "(configs: all-disabled, h20-6x1g.12gb-1x1g.24gb)" in missing
