"""policies/gpushare_policies/tuning_rules.py: the tuning policies go on past an entry or key they cannot
judge, and count a measurement's age from its date whatever follows it.

The resources are the real program's (tests/test_policies.py's helpers): prod's ConfigMap
kube-system/time-slicing-config (keys any, l20, t4, all measured "2025-06-01") and the device-plugin chart
of tests/fixtures/stacks/Pulumi.helm-mig.yaml (key h20 time-slices MIG 1g.12gb and 1g.24gb instances of an
H20, measured 4621 MiB, utilizationCeiling 0.9).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from conftest import HELM_MIG
from test_policies import (
    Program,
    Res,
    _isolated_environment,
    messages_of,
    prod,
    staging,
    use_stack,
    with_data,
)

from gpushare import kube_names

__all__ = ["_isolated_environment", "prod", "staging", "use_stack"]  # fixtures used by name below

H20_KEY = 'Helm release nvidia-device-plugin/nvidia-device-plugin config.map key "h20"'
CM = "ConfigMap kube-system/time-slicing-config"
# floor(0.9 x 22138 MiB (H20 MIG 1g.24gb) / 4621 MiB) = floor(19924.2 / 4621) = floor(4.31) = 4
TUNED_1G_24GB = "4 = floor(0.9 x 22138 MiB H20 MIG 1g.24gb / 4621 MiB measured, stack pool h20)"
# 2025-06-01 + 180 days = 2025-11-28 (see test_policies.test_measurement_age_boundary): one day later is 181.
DAY_181 = date(2025, 11, 29)
RE_MEASURE = "Re-measure the largest process; the workload may have grown."


def _h20_file(first_replicas: str, second_replicas: int) -> str:
    """The program's h20 file with its two entries' replicas replaced (1g.12gb first, 1g.24gb second)."""
    return (
        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n"
        "    failRequestsGreaterThanOne: true\n    resources:\n"
        f"    - name: nvidia.com/mig-1g.12gb\n      replicas: {first_replicas}\n"
        f"    - name: nvidia.com/mig-1g.24gb\n      replicas: {second_replicas}\n"
    )


@pytest.fixture
def chart(staging: Program, use_stack: Callable[..., None]) -> Res:
    use_stack(HELM_MIG)
    return staging.get("gpushare-device-plugin-release")


# --------------------------------------------------------------------------------------------------------
# time-slicing-replicas-tuned, -underused: an entry whose replicas is no integer does not end the file


def test_an_entry_after_one_without_an_integer_replicas_is_still_held_to_its_maximum(chart: Res) -> None:
    release = with_data(chart, "h20", _h20_file("two", 9))
    assert messages_of("time-slicing-replicas-tuned", [release]) == [
        f"{H20_KEY}: nvidia.com/mig-1g.24gb replicas 9 exceeds the tuned maximum {TUNED_1G_24GB}. "
        "Time-slicing does not isolate memory: more replicas than fit run the GPU out of memory."
    ]
    # The near miss: at its maximum the second entry is fine, and `two` is the validator's to refuse.
    assert messages_of("time-slicing-replicas-tuned", [with_data(chart, "h20", _h20_file("two", 4))]) == []


def test_an_entry_after_one_without_an_integer_replicas_is_still_advised_when_underused(chart: Res) -> None:
    release = with_data(chart, "h20", _h20_file("two", 3))
    assert messages_of("time-slicing-replicas-underused", [release]) == [
        f"{H20_KEY}: nvidia.com/mig-1g.24gb replicas 3 is below the tuned {TUNED_1G_24GB}: 1 slot(s) per "
        "device left unused."
    ]


# --------------------------------------------------------------------------------------------------------
# time-slicing-measurement-fresh: an undated key does not end the count


def test_keys_after_an_undated_one_are_still_judged_for_age(
    prod: Program, use_stack: Callable[..., None], fixed_today: Callable[[date], None]
) -> None:
    fixed_today(DAY_181)

    def undated_fallback(config: dict[str, Any]) -> None:
        del config["gpushare:sharing"]["fallback"]["measuredAt"]

    use_stack("prod", undated_fallback)
    # Keys in order: any (the fallback, undated), then l20 and t4 (2025-06-01, 181 days).
    assert messages_of("time-slicing-measurement-fresh", [prod.get("gpushare-config-configmap")]) == [
        f'{CM} key "any": the measurement (stack config gpushare:sharing.fallback) has no measuredAt, so its '
        "age is unknown.",
        f'{CM} key "l20": measured 2025-06-01 (stack pool l20), 181 days ago, older than 180 days. {RE_MEASURE}',
        f'{CM} key "t4": measured 2025-06-01 (stack pool t4), 181 days ago, older than 180 days. {RE_MEASURE}',
    ]


# --------------------------------------------------------------------------------------------------------
# measurement_age_days: a measuredAt with a time of day (an annotation written by another tool)


def _l20_measured_at(prod: Program, measured_at: str) -> Res:
    cm = copy.deepcopy(prod.get("gpushare-config-configmap"))
    annotations = cm.props["metadata"]["annotations"]
    provenance = json.loads(annotations[kube_names.tuning_annotation("l20")])
    provenance["measuredAt"] = measured_at
    annotations[kube_names.tuning_annotation("l20")] = json.dumps(provenance)
    return cm


def _stale(key: str, measured_at: str, problem: str) -> str:
    return f'{CM} key "{key}": measured {measured_at} (annotation gpushare.io/tuning-{key}), {problem}. {RE_MEASURE}'


def test_a_measured_at_with_a_time_of_day_is_aged_by_its_date(
    prod: Program, fixed_today: Callable[[date], None]
) -> None:
    cm = _l20_measured_at(prod, "2025-06-01T08:00:00Z")  # no PULUMI_CONFIG: the annotations are the basis
    fixed_today(date(2025, 11, 28))  # day 180 for all three keys: still fresh
    assert messages_of("time-slicing-measurement-fresh", [cm]) == []
    fixed_today(DAY_181)
    old = "181 days ago, older than 180 days"
    assert messages_of("time-slicing-measurement-fresh", [cm]) == [
        _stale("any", "2025-06-01", old),
        _stale("l20", "2025-06-01T08:00:00Z", old),
        _stale("t4", "2025-06-01", old),
    ]


def test_a_measured_at_whose_date_is_no_day_is_not_a_date(
    prod: Program, fixed_today: Callable[[date], None]
) -> None:
    """The near miss: a time of day after a day that does not exist (June has 30 days)."""
    fixed_today(date(2025, 11, 28))
    cm = _l20_measured_at(prod, "2025-06-31T08:00:00Z")
    assert messages_of("time-slicing-measurement-fresh", [cm]) == [
        _stale("l20", "2025-06-31T08:00:00Z", "which is not a date in the past")
    ]


def test_a_key_with_no_measurement_behind_it_is_left_to_the_tuning_policy(
    prod: Program, fixed_today: Callable[[date], None]
) -> None:
    """No stack config (the annotations are the basis), day 181 for every dated key: a key with no
    annotation at all and one whose annotation names a GPU and a date but no measuredMiB are not aged here
    (time-slicing-replicas-tuned reports them); the keys after them still are."""
    fixed_today(DAY_181)
    cm = _l20_measured_at(prod, "2025-06-01")
    annotations = cm.props["metadata"]["annotations"]
    provenance = json.loads(annotations[kube_names.tuning_annotation("l20")])
    del provenance["measuredMiB"]
    annotations[kube_names.tuning_annotation("l20")] = json.dumps(provenance)
    cm = with_data(cm, "a-foreign-key", cm.props["data"]["t4"])  # shared, and no annotation
    old = "181 days ago, older than 180 days"
    assert messages_of("time-slicing-measurement-fresh", [cm]) == [
        _stale("any", "2025-06-01", old),
        _stale("t4", "2025-06-01", old),
    ]
