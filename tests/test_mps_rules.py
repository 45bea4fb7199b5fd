"""policies/gpushare_policies/mps_rules.py on the real program's resources (tests/test_policies.py's helpers).

The healthy MPS pool is dev's `l20` (Pulumi.dev.yaml: helm chart 0.17.1, the seed's L20 measurement, 8
clients); each breaking case is one change to what the program registers for dev, prod (daemonsets,
TKE's v0.14.5) or staging (the GPU Operator, a MIG H20 pool).
"""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any

import pytest
from test_policies import Program, Res, _isolated_environment, messages_of, program

from gpushare import kube_names

__all__ = ["_isolated_environment"]  # a fixture used by name below

MPS_POLICIES = (
    "mps-plugin-supported",
    "mps-not-with-mig",
    "mps-control-daemon-scheduled",
    "mps-replicas-tuned",
)
DEV_RELEASE = "gpushare-device-plugin-release"
DEV_L20 = 'Helm release nvidia-device-plugin/nvidia-device-plugin config.map key "l20"'
DEV_CHART = "Helm release nvidia-device-plugin/nvidia-device-plugin (chart nvidia-device-plugin 0.17.1)"


def mps_text(replicas: int = 8, strategy: str = "none") -> str:
    """An MPS file as gpushare writes it (gpushare/device_plugin/rendering.py mps_config)."""
    return (
        f"version: v1\nflags:\n  migStrategy: {strategy}\n  mpsRoot: /run/nvidia/mps\nsharing:\n  mps:\n"
        "    renameByDefault: false\n    failRequestsGreaterThanOne: true\n    resources:\n"
        f"    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
    )


@pytest.fixture(scope="module")
def dev() -> Program:
    return program("dev")


def verdicts(resources: list[Res]) -> dict[str, list[str]]:
    found = {name: messages_of(name, resources) for name in MPS_POLICIES}
    return {name: messages for name, messages in found.items() if messages}


def _dev_with(dev: Program, edit_values: object = None, edit_pool: object = None) -> list[Res]:
    resources = copy.deepcopy(dev.resources)
    release = next(r for r in resources if r.name == DEV_RELEASE)
    pool = next(r for r in resources if r.name == "gpushare-l20-pool")
    if callable(edit_values):
        edit_values(release.props["values"])
    if callable(edit_pool):
        edit_pool(pool.props)
    return resources


def test_devs_mps_pool_passes_every_mps_policy(dev: Program) -> None:
    assert "mps:" in dev.get(DEV_RELEASE).props["values"]["config"]["map"]["l20"]  # the near miss is MPS
    assert verdicts(dev.resources) == {}


def test_tkes_plugin_ignores_mps(dev: Program) -> None:
    prod = program("prod")
    resources = copy.deepcopy(prod.resources)
    config_map = next(
        r for r in resources if r.type.endswith("ConfigMap") and "l20" in r.props.get("data", {})
    )
    config_map.props["data"]["l20"] = mps_text()
    found = verdicts(resources)
    assert list(found) == ["mps-plugin-supported"]
    (message,) = found["mps-plugin-supported"]
    assert message.startswith(
        'node pool l20: ConfigMap kube-system/time-slicing-config key "l20" shares its GPUs'
    )
    assert message.endswith(
        "runs device plugin 0.14.5, which ignores sharing.mps: the GPUs are not shared at all. MPS needs "
        "NVIDIA's plugin 0.17.1 or later (devicePlugin.mode helm or gpu-operator); or time-slice them."
    )


def test_mig_strategy_mixed_over_an_mps_file_is_refused(dev: Program) -> None:
    resources = _dev_with(dev, edit_values=lambda values: values.update(migStrategy="mixed"))
    assert verdicts(resources)["mps-not-with-mig"] == [
        f"node pool l20: {DEV_L20} shares with MPS under {DEV_CHART}'s migStrategy mixed: the plugin refuses "
        "MPS with it ('using --mig-strategy=mixed is not supported with MPS') and crash-loops; leave "
        "migStrategy unset."
    ]


def test_mps_on_the_operators_mig_pool_is_refused() -> None:
    staging = program("staging")
    resources = copy.deepcopy(staging.resources)
    config_map = next(
        r for r in resources if r.type.endswith("ConfigMap") and "h20" in (r.props.get("data") or {})
    )
    config_map.props["data"]["h20"] = mps_text(replicas=19)
    found = verdicts(resources)
    (message,) = found.pop("mps-not-with-mig")
    assert message == (
        f'node pool h20: ConfigMap gpu-operator/{config_map.props["metadata"]["name"]} key "h20" shares with '
        "MPS, but its nodes are labelled nvidia.com/mig.config=h20-6x1g.12gb-1x1g.24gb: MPS shares whole GPUs "
        "only (the plugin fails allocations on MIG devices). Time-slice the MIG instances, or use MPS on a "
        "pool without MIG."
    )
    # The MIG pool has no nvidia.com/mps.capable label either (19 replicas: floor(0.9 x 97871 / 4621)).
    assert list(found) == ["mps-control-daemon-scheduled"]


def test_a_pool_without_the_mps_capable_label_has_no_control_daemon(dev: Program) -> None:
    resources = _dev_with(dev, edit_pool=lambda props: props["labels"].pop(kube_names.LABEL_MPS_CAPABLE))
    assert verdicts(resources) == {
        "mps-control-daemon-scheduled": [
            f"node pool l20: {DEV_L20} shares with MPS, but the MPS control daemon ({DEV_CHART}) runs only on "
            "nodes labelled nvidia.com/mps.capable=true and it has none: no MPS client can start. Label the "
            "pool (gpushare does for mode mps)."
        ]
    }
    # A near miss: the label with another value counts as missing.
    resources = _dev_with(
        dev, edit_pool=lambda props: props["labels"].update({kube_names.LABEL_MPS_CAPABLE: "True"})
    )
    assert "and it has 'True'" in verdicts(resources)["mps-control-daemon-scheduled"][0]


def test_mps_replicas_above_the_tuning_rule_are_refused(dev: Program) -> None:
    def nine(values: dict) -> None:
        values["config"]["map"]["l20"] = mps_text(replicas=9)

    # floor(0.9 x 46068 / 4621) = floor(8.97) = 8 (no stack config in the environment: the basis is the
    # chart's gpushare.io/tuning-l20 annotation).
    assert verdicts(_dev_with(dev, edit_values=nine)) == {
        "mps-replicas-tuned": [
            f"{DEV_L20}: MPS nvidia.com/gpu replicas 9 exceeds the tuned maximum 8 = floor(0.9 x 46068 MiB L20 "
            "/ 4621 MiB measured, annotation gpushare.io/tuning-l20)."
        ]
    }


def test_an_mps_client_limit_below_the_measured_peak_is_refused(dev: Program) -> None:
    """T4 at 1536 MiB: floor(0.9 x 15360 / 1536) = floor(9.0) = 9 replicas pass the tuning rule, but each
    client gets 15360 // 9 = 1706 MiB and 0.9 x 1706 = 1535.4 < 1536."""

    def t4(values: dict) -> None:
        values["config"]["map"]["l20"] = mps_text(replicas=9)
        annotation = kube_names.tuning_annotation("l20")
        provenance = json.loads(values["podAnnotations"][annotation])
        provenance.update(gpu="T4", measuredMiB=1536)
        values["podAnnotations"][annotation] = json.dumps(provenance)

    assert verdicts(_dev_with(dev, edit_values=t4)) == {
        "mps-replicas-tuned": [
            f"{DEV_L20}: the MPS per-client limit 15360 MiB / 9 = 1706 MiB is below the 1536 MiB measured with "
            "the ceiling's headroom (1707 MiB at 0.9): a client would hit the limit."
        ]
    }


def test_an_mps_pools_measurement_is_held_to_the_same_age(dev: Program, fixed_today: Any) -> None:
    """time-slicing-measurement-fresh (advisory) reads MPS keys too: 2025-06-01 to 2026-12-04 is 551 days,
    above the pack's default 180. The pool with a fresh date is not advised."""
    fixed_today(date(2026, 12, 4))
    found = messages_of("time-slicing-measurement-fresh", dev.resources)
    assert (
        f"{DEV_L20}: measured 2025-06-01 (annotation gpushare.io/tuning-l20), 551 days ago, older than 180 days. "
        "Re-measure the largest process; the workload may have grown." in found
    )
    fixed_today(date(2025, 6, 2))
    assert messages_of("time-slicing-measurement-fresh", dev.resources) == []


def test_an_untuned_mps_entry_does_not_end_the_files_judgement(dev: Program) -> None:
    """Two MPS resources in the l20 file: the first, a MIG profile, has no basis on an L20 (no MIG there);
    the second, nvidia.com/gpu at 9, is still judged against floor(0.9 x 46068 / 4621) = 8."""

    def two(values: dict) -> None:
        values["config"]["map"]["l20"] = mps_text(replicas=9).replace(
            "    resources:\n",
            "    resources:\n    - name: nvidia.com/mig-1g.12gb\n      replicas: 2\n",
        )

    found = verdicts(_dev_with(dev, edit_values=two))["mps-replicas-tuned"]
    assert found == [
        f"{DEV_L20}: MPS nvidia.com/mig-1g.12gb replicas 2 is not tuned: nvidia.com/mig-1g.12gb is not a MIG "
        "profile of L20. Measure the largest process and give it to the pool (sharing.measuredMiB); replica "
        "counts are derived, never typed.",
        f"{DEV_L20}: MPS nvidia.com/gpu replicas 9 exceeds the tuned maximum 8 = floor(0.9 x 46068 MiB L20 "
        "/ 4621 MiB measured, annotation gpushare.io/tuning-l20).",
    ]
