"""The stack-config model: every rule fails with the file and the key path, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import HELM_MIG

from gpushare.errors import ConfigError
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import Mig, TimeSlicing
from gpushare.stack.plugin_settings import DevicePlugin, default_managed_action

Doc = dict[str, Any]


def test_prod_stack_is_the_seed_cluster(project_dir: Path) -> None:
    stack = load_stack_file(project_dir / "Pulumi.prod.yaml")
    assert stack.stack == "prod"
    assert [(p.name, p.gpu, p.instance_type) for p in stack.pools] == [
        ("l20", "L20", "PNV5b.8XLARGE96"),
        ("t4", "T4", "GN7.2XLARGE32"),
    ]
    measured = [p.sharing.measured_mib for p in stack.pools if isinstance(p.sharing, TimeSlicing)]
    assert measured == [4621, 4401]
    assert stack.plugin.mode == "daemonsets"
    assert stack.plugin.plugin_version == "0.14.5"
    assert stack.region == "ap-singapore"


def test_staging_stack_is_the_gpu_operator_environment(project_dir: Path) -> None:
    stack = load_stack_file(project_dir / "Pulumi.staging.yaml")
    h20 = stack.pool("h20")
    assert isinstance(h20.sharing, Mig)
    assert h20.sharing.mig_layout == {"1g.12gb": 6, "1g.24gb": 1}
    assert h20.sharing.config_name == "h20-6x1g.12gb-1x1g.24gb"
    assert h20.sharing.strategy == "mixed"  # time-sliced MIG instances need mixed
    assert h20.gpus_per_node_effective == 4
    assert stack.plugin.mode == "gpu-operator"
    operator = stack.plugin.gpu_operator
    assert (operator.chart_version, operator.namespace, operator.runtime_class) == (
        "v26.7.0",
        "gpu-operator",
        "runc",
    )
    assert not operator.driver_enabled and not operator.toolkit_enabled and not operator.cdi_enabled
    assert stack.plugin.plugin_version == "0.20.0"  # what the chart's values.yaml deploys
    assert stack.plugin.node_feature_discovery  # the operator brings NFD


def test_dev_stack_is_a_t4_and_an_mps_l20_on_the_helm_chart(project_dir: Path) -> None:
    stack = load_stack_file(project_dir / "Pulumi.dev.yaml")
    # The L20 MPS pool (issue 37) puts an MPS pool under CI's render, check and scan.
    assert [(p.name, p.gpu, p.sharing.mode) for p in stack.pools] == [
        ("t4", "T4", "time-slicing"),
        ("l20", "L20", "mps"),
    ]
    assert (stack.plugin.mode, stack.plugin.plugin_version) == ("helm", "0.17.1")


def test_gpu_operator_mode_refuses_adopt_and_chart_keys(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {"action": "adopt", "pool": "l20"}
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:sharing.devicePlugin.managedPlugin.action: adopt only works in daemonsets "
        "mode, not gpu-operator (the gpu-operator plugin serves every pool; TKE's DaemonSet must stay off them)"
    )
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["namespace"] = "nvidia"
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:sharing.devicePlugin.namespace: does not apply to mode gpu-operator (the "
        "operator chart decides it; see gpuOperator)"
    )
    doc = stack_document("prod")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["gpuOperator"] = {"namespace": "x"}
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:sharing.devicePlugin.gpuOperator: only applies to mode gpu-operator, not "
        "daemonsets"
    )
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["gpuOperator"]["chartVersion"] = "v25.3.0"
    assert "gpushare:sharing.devicePlugin.gpuOperator.chartVersion: must be one of" in _error(
        write_stack, doc
    )


def test_gpu_operator_mig_config_names_mean_one_layout(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    pools = doc["config"]["gpushare:pools"]
    twin = {**pools[0], "name": "h20b", "sharing": {**pools[0]["sharing"], "migLayout": {"1g.12gb": 7}}}
    pools.append(twin)
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[2].sharing.layoutName: 'h20-6x1g.12gb-1x1g.24gb' names another "
        "pool's different layout; the GPU Operator's one mig-parted file needs one layout per name"
    )
    pools[2]["sharing"]["layoutName"] = "all-disabled"
    assert "'all-disabled' is the MIG manager's config for unlabelled nodes" in _error(write_stack, doc)
    # The same layout under the same name on two pools is one config.
    pools[2]["sharing"] = pools[0]["sharing"]
    assert load_stack_file(write_stack(doc, "twins")).pool("h20b").sharing.mode == "mig"


def test_plugin_version_0_20_0_is_accepted(stack_document: Callable[[str], Doc], write_stack: Any) -> None:
    doc = stack_document(HELM_MIG)
    doc["config"]["gpushare:sharing"]["devicePlugin"]["version"] = "0.20.0"
    stack = load_stack_file(write_stack(doc, "newer"))
    assert stack.plugin.plugin_version == "0.20.0"
    assert stack.plugin.plugin_image == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def _error(write_stack: Callable[[Doc, str], Path], document: Doc) -> str:
    with pytest.raises(ConfigError) as caught:
        load_stack_file(write_stack(document, "bad"))
    return str(caught.value)


def test_measured_must_be_positive(stack_document: Callable[[str], Doc], write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 0
    assert _error(write_stack, doc) == "Pulumi.bad.yaml: gpushare:pools[1].sharing.measuredMiB: must be > 0"


def test_measured_above_gpu_memory(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 16000
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[1].sharing.measuredMiB: 16000 MiB is more than T4's 15360 MiB"
    )


def test_unknown_gpu_model(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["gpu"] = "L30"
    message = _error(write_stack, doc)
    assert message.startswith(
        "Pulumi.bad.yaml: gpushare:pools[0].gpu: unknown GPU model 'L30': not in the catalog; known: L20, T4"
    )


def test_instance_type_must_match_gpu(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["instanceType"] = "GN7.2XLARGE32"
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[0].instanceType: GN7.2XLARGE32 carries T4, not L20"
    )


def test_unknown_instance_type_needs_gpus_per_node(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["instanceType"] = "PNV5b.16XLARGE192"
    assert "gpushare:pools[0].gpusPerNode: required" in _error(write_stack, doc)


@pytest.mark.parametrize(
    "ceiling, expected", [(0, "must be > 0"), (1.5, "must be <= 1"), ("0.9", "must be a number")]
)
def test_ceiling_outside_0_1(stack_document: Any, write_stack: Any, ceiling: object, expected: str) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:sharing"]["utilizationCeiling"] = ceiling
    assert _error(write_stack, doc) == f"Pulumi.bad.yaml: gpushare:sharing.utilizationCeiling: {expected}"


def test_ceiling_of_one_is_allowed(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:sharing"]["utilizationCeiling"] = 1
    assert load_stack_file(write_stack(doc, "ok")).sharing.utilization_ceiling == 1.0


def test_mig_on_a_non_mig_gpu(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["sharing"] = {"mode": "mig", "migLayout": {"1g.12gb": 7}}
    assert (
        _error(write_stack, doc)
        == "Pulumi.bad.yaml: gpushare:pools[0].sharing.mode: mig: L20 does not support MIG"
    )


def test_mig_layout_that_does_not_fit(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:pools"][0]["sharing"]["migLayout"] = {"1g.12gb": 8}
    assert "gpushare:pools[0].sharing.migLayout: " in _error(write_stack, doc)


def test_seed_h100_names_on_h20_are_rejected(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:pools"][0]["sharing"]["migLayout"] = {"3g.47gb": 2}
    message = _error(write_stack, doc)
    assert "gpushare:pools[0].sharing.migLayout" in message
    assert "3g.48gb" in message


def test_duplicate_pool_names(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][1]["name"] = "l20"
    assert _error(write_stack, doc) == "Pulumi.bad.yaml: gpushare:pools[1].name: duplicate pool name 'l20'"


def test_wrong_types(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["nodes"]["desired"] = "1"
    assert _error(write_stack, doc) == "Pulumi.bad.yaml: gpushare:pools[0].nodes.desired: must be an integer"


def test_misspelled_key(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["sharing"]["measuredMib"] = 4621
    message = _error(write_stack, doc)
    assert "Pulumi.bad.yaml: gpushare:pools[0].sharing.measuredMib: unknown key" in message


def test_missing_cluster_id(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    del doc["config"]["gpushare:cluster"]["id"]
    assert _error(write_stack, doc) == "Pulumi.bad.yaml: gpushare:cluster.id: required"


def test_missing_cluster(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    del doc["config"]["gpushare:cluster"]
    assert _error(write_stack, doc).startswith("Pulumi.bad.yaml: gpushare:cluster: missing")


def test_plain_text_secrets_are_rejected(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["tencentcloud:secretKey"] = "AKIDplaintext"
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: tencentcloud:secretKey: must be a secret (pulumi config set --secret tencentcloud:secretKey ...)"
    )


def test_secure_secrets_are_accepted(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["tencentcloud:secretKey"] = {"secure": "v1:abc"}
    doc["config"]["gpushare:kubeconfig"] = {"secure": "v1:def"}
    assert load_stack_file(write_stack(doc, "ok")).has_kubeconfig


def test_unknown_top_level_key(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pool"] = []
    assert "Pulumi.bad.yaml: gpushare:pool: unknown key" in _error(write_stack, doc)


def test_adopted_managed_plugin_needs_an_existing_pool(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"]["pool"] = "a10"
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:sharing.devicePlugin.managedPlugin.pool: no pool named 'a10'"
    )


def test_helm_mig_strategy_that_overrides_pool_files(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document(HELM_MIG)
    doc["config"]["gpushare:sharing"]["devicePlugin"]["migStrategy"] = "single"
    assert "gpushare:sharing.devicePlugin.migStrategy: single would override pool h20's mixed" in _error(
        write_stack, doc
    )


def test_several_errors_are_all_reported(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["nodes"]["min"] = -1
    doc["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = -1
    lines = _error(write_stack, doc).splitlines()
    assert "Pulumi.bad.yaml: gpushare:pools[0].nodes.min: must be >= 0" in lines
    assert "Pulumi.bad.yaml: gpushare:pools[1].sharing.measuredMiB: must be > 0" in lines


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Pulumi.nope.yaml: no such stack file"):
        load_stack_file(tmp_path / "Pulumi.nope.yaml")
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text("config: [unclosed\n")
    with pytest.raises(ConfigError, match="Pulumi.broken.yaml: not valid YAML"):
        load_stack_file(broken)


def test_unquoted_date_is_read_as_a_string(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    path = write_stack(doc, "dates")
    path.write_text(path.read_text().replace("measuredAt: '2025-06-01'", "measuredAt: 2025-06-01"))
    stack = load_stack_file(path)
    sharing = stack.pools[0].sharing
    assert isinstance(sharing, TimeSlicing)
    assert sharing.measured_at == "2025-06-01"


# --------------------------------------------------------------------------------------------------------
# managedPlugin action: optOut is the default outside daemonsets mode


@pytest.mark.parametrize(
    ("mode", "written", "action"),
    [
        ("helm", None, "optOut"),  # no managedPlugin at all
        ("helm", {}, "optOut"),  # managedPlugin without an action
        ("helm", {"action": "park"}, "park"),
        ("daemonsets", None, "park"),
        ("daemonsets", {"action": "optOut"}, "optOut"),
    ],
)
def test_managed_plugin_action_defaults_by_mode(mode: str, written: Doc | None, action: str) -> None:
    raw: Doc = {"mode": mode}
    if written is not None:
        raw["managedPlugin"] = written
    assert DevicePlugin.model_validate(raw).managed_plugin.action == action


@pytest.mark.parametrize("mode", ["helm", "gpu-operator", "a-mode-added-later"])
def test_every_mode_but_daemonsets_defaults_to_opt_out(mode: str) -> None:
    assert default_managed_action(mode) == "optOut"
    assert default_managed_action("daemonsets") == "park"


def test_staging_opts_out_and_prod_adopts(project_dir: Path) -> None:
    staging = load_stack_file(project_dir / "Pulumi.staging.yaml").plugin.managed_plugin
    prod = load_stack_file(project_dir / "Pulumi.prod.yaml").plugin.managed_plugin
    assert (staging.action, staging.device_enable_value) == ("optOut", "disable")
    assert (prod.action, prod.pool, prod.device_enable_value) == ("adopt", "t4", "enable")


def test_opt_out_takes_no_pool(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {"action": "optOut", "pool": "l20"}
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:sharing.devicePlugin.managedPlugin: `pool` only applies to action adopt"
    )


def test_pool_label_turning_tke_plugin_on_under_opt_out_is_refused(
    stack_document: Any, write_stack: Any
) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:pools"][1]["labels"] = {"nvidia-device-enable": "enable"}
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[1].labels.nvidia-device-enable: 'enable' contradicts "
        "managedPlugin.action optOut, which labels every GPU pool nvidia-device-enable=disable (TKE's plugin "
        "would run beside gpushare's)"
    )


def test_pool_label_agreeing_with_the_action_is_accepted(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:pools"][1]["labels"] = {"nvidia-device-enable": "disable"}
    load_stack_file(write_stack(doc, "ok"))
    prod = stack_document("prod")
    prod["config"]["gpushare:pools"][0]["labels"] = {"nvidia-device-enable": "disable"}
    assert (
        "contradicts managedPlugin.action adopt, which labels every GPU pool nvidia-device-enable=enable"
        in (_error(write_stack, prod))
    )


# --------------------------------------------------------------------------------------------------------
# sharing.fallback: opt-in, validated like a pool


def test_fallback_is_absent_unless_the_stack_opts_in(project_dir: Path) -> None:
    assert load_stack_file(project_dir / "Pulumi.staging.yaml").sharing.fallback is None
    prod = load_stack_file(project_dir / "Pulumi.prod.yaml").sharing.fallback
    assert prod is not None and (prod.gpu, prod.measured_mib) == ("T4", 4621)


@pytest.mark.parametrize(
    ("fallback", "error"),
    [
        (
            {"gpu": "T4", "measuredMiB": 16000},
            "gpushare:sharing.fallback.measuredMiB: 16000 MiB is more than T4's 15360 MiB",
        ),
        ({"gpu": "T4", "measuredMiB": 0}, "gpushare:sharing.fallback.measuredMiB: must be > 0"),
        ({"measuredMiB": 4401}, "gpushare:sharing.fallback.gpu: required"),
        ({"gpu": "T4"}, "gpushare:sharing.fallback.measuredMiB: required"),
        (
            {"gpu": "T4", "measuredMiB": 4401, "replicas": 3},
            "gpushare:sharing.fallback.replicas: unknown key",
        ),
        (
            {"gpu": "T4", "measuredMiB": 4401, "measuredAt": "June"},
            "gpushare:sharing.fallback.measuredAt: 'June' is not a date (YYYY-MM-DD, or an ISO 8601 date and time)",
        ),
    ],
)
def test_bad_fallback_is_refused_naming_the_key(
    stack_document: Any, write_stack: Any, fallback: Doc, error: str
) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["fallback"] = fallback
    assert error in _error(write_stack, doc)


def test_fallback_names_a_catalog_gpu(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("staging")
    doc["config"]["gpushare:sharing"]["fallback"] = {"gpu": "A999", "measuredMiB": 4401}
    assert _error(write_stack, doc).startswith("Pulumi.bad.yaml: gpushare:sharing.fallback.gpu: ")


def test_protect_pools_is_off_unless_the_stack_turns_it_on(
    stack_document: Callable[[str], dict[str, Any]], write_stack: Callable[[dict[str, Any], str], Path]
) -> None:
    """Pulumi.yaml declares `protectPools` with `default: false`, and the model holds the same default for
    what reads a stack without the project's defaults (plan, the hosted component without the input):
    staging sets no protectPools, prod sets true."""
    staging = stack_document("staging")
    assert "gpushare:protectPools" not in staging["config"]
    assert load_stack_file(write_stack(staging, "staging")).protect_pools is False
    assert load_stack_file(write_stack(stack_document("prod"), "prod")).protect_pools is True


def test_a_pool_is_found_by_its_own_name_and_an_unknown_name_is_a_key_error(
    stack_document: Callable[[str], dict[str, Any]], write_stack: Callable[[dict[str, Any], str], Path]
) -> None:
    # prod's pools, in file order: l20 (L20), then t4 (T4).
    prod = load_stack_file(write_stack(stack_document("prod"), "prod"))
    assert [(prod.pool(name).name, prod.pool(name).gpu) for name in ("t4", "l20")] == [
        ("t4", "T4"),
        ("l20", "L20"),
    ]
    with pytest.raises(KeyError) as caught:
        prod.pool("h20")
    assert caught.value.args == ("h20",)
