"""gpushare/plugin_configs.py: each pool's device-plugin config, its checksum and its provenance.

Prod (the seed): L20 at 4621 MiB -> floor(0.9 x 46068 / 4621) = 8 replicas, T4 at 4401 -> 3, and `any`
opted in for a T4 at 4621 -> floor(0.9 x 15360 / 4621) = floor(2.99) = 2. The texts are the plugin's
file format (NVIDIA's k8s-device-plugin `version: v1` config)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpushare.plan import build_plan
from gpushare.plugin_configs import config_checksum, plugin_config_entries
from gpushare.stack.loading import load_stack_file

TIME_SLICED_L20 = (
    "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
    "    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"
)


def test_prod_has_one_entry_per_pool_in_order_then_any(project_dir: Path) -> None:
    entries = plugin_config_entries(build_plan(load_stack_file(project_dir / "Pulumi.prod.yaml")))
    assert [e.key for e in entries] == ["l20", "t4", "any"]
    l20, t4, fallback = entries
    assert l20.text == TIME_SLICED_L20
    assert yaml.safe_load(t4.text)["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 3}
    ]
    assert yaml.safe_load(fallback.text)["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 2}
    ]
    assert l20.sha256 == hashlib.sha256(TIME_SLICED_L20.encode()).hexdigest() == config_checksum(l20.text)
    assert l20.provenance == {
        "pool": "l20",
        "gpu": "L20",
        "mode": "time-slicing",
        "migStrategy": "none",
        "resources": [
            {
                "resource": "nvidia.com/gpu",
                "migProfile": None,
                "memoryMiB": 46068,
                "measuredMiB": 4621,
                "ceiling": 0.9,
                "replicas": 8,
            }
        ],
        "measuredMiB": 4621,
        "measuredAt": "2025-06-01",
        "source": l20.provenance["source"],
    }
    assert fallback.provenance["pool"] is None and fallback.provenance["gpu"] == "T4"
    assert fallback.provenance["mode"] == "time-slicing"
    # Compact and sorted: the annotation's bytes do not depend on dict order.
    assert l20.provenance_json.startswith('{"gpu":"L20","measuredAt":"2025-06-01","measuredMiB":4621,')


def test_a_pool_with_one_slot_and_an_exclusive_fallback_share_nothing(
    stack_document: Callable[[str], dict[str, Any]], write_stack: Callable[[dict[str, Any], str], Path]
) -> None:
    doc = stack_document("prod")
    # T4 at 7000 MiB: floor(0.9 x 15360 / 7000) = 1, below 2: no time-slicing entry at all.
    doc["config"]["gpushare:pools"][1]["sharing"]["measuredMiB"] = 7000
    del doc["config"]["gpushare:sharing"]["fallback"]
    _, t4, fallback = plugin_config_entries(build_plan(load_stack_file(write_stack(doc, "one"))))
    assert t4.text == "version: v1\nflags:\n  migStrategy: none\n"
    assert t4.provenance["resources"] == [] and t4.provenance["measuredMiB"] == 7000
    assert fallback.text == "version: v1\nflags:\n  migStrategy: none\n"
    assert (fallback.provenance["gpu"], fallback.provenance["mode"]) == (None, "exclusive")
    assert "measuredMiB" not in fallback.provenance


def test_an_opted_in_fallback_that_fits_one_process_shares_nothing(
    stack_document: Callable[[str], dict[str, Any]], write_stack: Callable[[dict[str, Any], str], Path]
) -> None:
    doc = stack_document("prod")
    # `any` tuned for a T4 at 7000 MiB: floor(0.9 x 15360 / 7000) = floor(1.97) = 1, below 2: the plugin's
    # file time-slices nothing (a replicas: 1 entry is one the plugin refuses, "must be >= 2").
    doc["config"]["gpushare:sharing"]["fallback"] = {"gpu": "T4", "measuredMiB": 7000}
    *_, fallback = plugin_config_entries(build_plan(load_stack_file(write_stack(doc, "one"))))
    assert fallback.key == "any"
    assert fallback.text == "version: v1\nflags:\n  migStrategy: none\n"
    assert (fallback.provenance["gpu"], fallback.provenance["resources"]) == ("T4", [])
