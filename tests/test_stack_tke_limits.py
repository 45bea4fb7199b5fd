"""What TKE would refuse at apply time, refused by the stack model first: node-pool name length, label and
taint keys, taints without value or effect; and the GPU driver a MIG pool asks for (`pools[].driver`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpushare import catalog
from gpushare.errors import ConfigError
from gpushare.stack.loading import load_stack_file

Doc = dict[str, Any]


def _error(write_stack: Callable[[Doc, str], Path], document: Doc) -> str:
    with pytest.raises(ConfigError) as caught:
        load_stack_file(write_stack(document, "bad"))
    return str(caught.value)


def test_a_pool_name_whose_tke_name_is_too_long_is_refused(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["name"] = "l20-inference-pool"  # 18 characters
    # "gpushare-" (9) + 18 = 27 > 25, TKE's limit on a node pool's name.
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[0].name: the TKE node pool name gpushare-l20-inference-pool is 27 "
        "characters; TKE allows at most 25 (pool names of up to 16 characters fit)"
    )


def test_a_pool_name_of_16_characters_fits(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["name"] = "l20-inference-pl"  # 9 + 16 = 25
    assert load_stack_file(write_stack(doc, "ok")).pools[0].name == "l20-inference-pl"
    doc["config"]["gpushare:pools"][0]["name"] = "l20-inference-plx"  # 26
    assert "is 26 characters; TKE allows at most 25" in _error(write_stack, doc)


def test_a_label_key_longer_than_tke_allows_is_refused(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    key = "example.com/" + "k" * 52  # 64 characters
    doc["config"]["gpushare:pools"][1]["labels"] = {key: "x"}
    assert _error(write_stack, doc) == (
        f"Pulumi.bad.yaml: gpushare:pools[1].labels: key {key!r} is 64 characters; TKE allows at most 63"
    )
    doc["config"]["gpushare:pools"][1]["labels"] = {"/team": "x"}
    assert "begins with '/', which TKE refuses" in _error(write_stack, doc)


@pytest.mark.parametrize(
    ("taint", "expected"),
    [
        (
            {"key": "gpu", "effect": "NoSchedule"},
            "gpushare:pools[0].taints[0].value: required: TKE's provider takes a taint only with key, value "
            "and effect",
        ),
        (
            {"key": "gpu", "value": "x", "effect": "NoScheduled"},
            "gpushare:pools[0].taints[0].effect: 'NoScheduled' is not one of NoSchedule, PreferNoSchedule, "
            "NoExecute",
        ),
        (
            {"key": "gpu", "value": "x", "effect": "NoSchedule", "operator": "Equal"},
            "gpushare:pools[0].taints[0].operator: unknown taint field (TKE takes key, value, effect)",
        ),
    ],
)
def test_taints_need_what_tke_needs(stack_document: Any, write_stack: Any, taint: Doc, expected: str) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["taints"] = [taint]
    assert _error(write_stack, doc) == f"Pulumi.bad.yaml: {expected}"


def test_a_complete_taint_passes(stack_document: Any, write_stack: Any) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}
    ]
    assert load_stack_file(write_stack(doc, "ok")).pools[0].taints[0]["key"] == "nvidia.com/gpu"


# --------------------------------------------------------------------------------------------------------
# pools[].driver


def _h20_driver(doc: Doc, version: str) -> Doc:
    h20 = doc["config"]["gpushare:pools"][0]
    assert h20["name"] == "h20" and h20["sharing"]["mode"] == "mig"
    h20["driver"] = {"version": version, "name": f"NVIDIA-Linux-x86_64-{version}.run"}
    return doc


def test_a_mig_pool_on_h20_with_a_too_old_driver_is_refused(stack_document: Any, write_stack: Any) -> None:
    # NVIDIA MIG User Guide: H20 needs R535 >= 535.161.07.
    doc = _h20_driver(stack_document("staging"), "535.104.05")
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[0].driver.version: driver 535.104.05 is too old for MIG on H20: "
        "NVIDIA supports it from 535.161.07"
    )


@pytest.mark.parametrize("version", ["535.161.07", "550.54.15", "535"])
def test_a_mig_pool_on_h20_with_a_new_enough_or_unjudgeable_driver_passes(
    stack_document: Any, write_stack: Any, version: str
) -> None:
    stack = load_stack_file(write_stack(_h20_driver(stack_document("staging"), version), "ok"))
    driver = stack.pool("h20").driver
    assert driver is not None and driver.version == version


def test_the_driver_needs_name_and_version_and_knows_cuda_and_cudnn(
    stack_document: Any, write_stack: Any
) -> None:
    doc = stack_document("prod")
    doc["config"]["gpushare:pools"][0]["driver"] = {"version": "535.161.07"}
    assert _error(write_stack, doc) == "Pulumi.bad.yaml: gpushare:pools[0].driver.name: required"
    doc["config"]["gpushare:pools"][0]["driver"] = {
        "version": "535.161.07",
        "name": "NVIDIA-Linux-x86_64-535.161.07.run",
        "cuda": {"version": "12.2", "name": "cuda_12.2"},
        "cudnn": {"version": "8.9", "name": "cudnn-8.9", "docName": "doc", "devName": "dev"},
    }
    driver = load_stack_file(write_stack(doc, "ok")).pools[0].driver
    assert driver is not None and driver.cuda is not None and driver.cudnn is not None
    assert (driver.cuda.version, driver.cudnn.dev_name) == ("12.2", "dev")


# --------------------------------------------------------------------------------------------------------
# H20 instance types


def test_h20_instance_types_carry_their_gpu_count(stack_document: Any, write_stack: Any) -> None:
    # TKE's DeepSeek deployment guides: 4 x H20 on PNV6.16XLARGE640, 8 x H20 on the others.
    expected = {
        "PNV6.16XLARGE640": 4,
        "PNV6.32XLARGE1280": 8,
        "PNV6.96XLARGE2304": 8,
        "HCCPNV6.96XLARGE2304": 8,
    }
    for name, gpus in expected.items():
        known = catalog.instance_type(name)
        assert known is not None and (known.gpu, known.gpus_per_node) == ("H20", gpus)
    doc = stack_document("staging")
    h20 = doc["config"]["gpushare:pools"][0]
    h20["instanceType"] = "PNV6.16XLARGE640"
    h20.pop("gpusPerNode", None)
    assert load_stack_file(write_stack(doc, "ok")).pool("h20").gpus_per_node_effective == 4
    h20["gpusPerNode"] = 8
    assert _error(write_stack, doc) == (
        "Pulumi.bad.yaml: gpushare:pools[0].gpusPerNode: PNV6.16XLARGE640 has 4 GPU(s) per node"
    )
