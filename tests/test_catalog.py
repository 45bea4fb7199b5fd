"""Behavioural checks of gpushare.catalog: MIG geometry is self-consistent, captured memory is where
docs/catalog.md says it is, the seed's facts are pinned, and the public surface behaves."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from gpushare import catalog
from gpushare.catalog import GPUS, GpuModel, MigProfile, as_json, gpu, instance_type
from gpushare.errors import GpushareError

MIG_GPUS = [m for m in GPUS.values() if m.mig_capable]
MIG_PROFILES = [(m, p) for m in MIG_GPUS for p in m.mig_profiles]


def _ids(pairs: list[tuple[GpuModel, MigProfile]]) -> list[str]:
    return [f"{m.key}:{p.name}" for m, p in pairs]


def _nominal_mib(profile: MigProfile) -> int:
    """The inference rule: the profile name's size read as decimal gigabytes."""
    match = re.fullmatch(r"\d+g\.(\d+)gb(\+me)?", profile.name)
    assert match, profile.name
    return int(match.group(1)) * 1000**3 // 2**20


# Captured (-lgip) profiles whose memory is BELOW the decimal-GB rule (docs/catalog.md, "the rule is not
# always conservative"). Pinned both ways: a new capture that breaks the rule, or an entry here that no
# longer does, must be looked at and the doc updated.
BELOW_NOMINAL = {
    ("H100-94GB", "1g.12gb"),
    ("H100-94GB", "1g.12gb+me"),
    ("H100-94GB", "1g.24gb"),
    ("H100-94GB", "2g.24gb"),
    ("H200", "1g.18gb"),
    ("H200", "1g.18gb+me"),
    ("H200", "1g.35gb"),
    ("H200", "2g.35gb"),
}


# --- MIG geometry ------------------------------------------------------------------------------------


def test_mig_gpus_are_the_documented_set() -> None:
    expected = {"H20", "A30", "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200"}
    assert {m.key for m in MIG_GPUS} == expected
    for model in MIG_GPUS:
        assert (model.compute_slices, model.memory_slices) in {(7, 8), (4, 4)}, model.key


@pytest.mark.parametrize(("model", "profile"), MIG_PROFILES, ids=_ids(MIG_PROFILES))
def test_every_placement_lies_inside_the_memory_slices(model: GpuModel, profile: MigProfile) -> None:
    assert profile.placement_size == profile.memory_slices
    assert profile.placement_starts, "a profile with no placement can never be created"
    assert list(profile.placement_starts) == sorted(set(profile.placement_starts))
    for start in profile.placement_starts:
        assert start >= 0
        assert start + profile.placement_size <= model.memory_slices


@pytest.mark.parametrize(("model", "profile"), MIG_PROFILES, ids=_ids(MIG_PROFILES))
def test_max_instances_fit_the_slices(model: GpuModel, profile: MigProfile) -> None:
    assert 1 <= profile.max_instances <= len(profile.placement_starts)
    assert profile.max_instances * profile.memory_slices <= model.memory_slices
    assert profile.compute_slices <= model.compute_slices
    if profile.name.startswith("1g."):
        assert profile.max_instances * profile.compute_slices <= model.compute_slices
    if profile.media_extensions:
        assert profile.max_instances == 1


@pytest.mark.parametrize(("model", "profile"), MIG_PROFILES, ids=_ids(MIG_PROFILES))
def test_instance_memory_fits_the_gpu(model: GpuModel, profile: MigProfile) -> None:
    assert 0 < profile.memory_mib <= model.memory_mib
    assert profile.max_instances * profile.memory_mib <= model.memory_mib


@pytest.mark.parametrize("model", MIG_GPUS, ids=[m.key for m in MIG_GPUS])
def test_more_memory_slices_never_mean_less_memory(model: GpuModel) -> None:
    by_slices = sorted(model.mig_profiles, key=lambda p: p.memory_slices)
    for smaller, larger in itertools.pairwise(by_slices):
        assert smaller.memory_mib <= larger.memory_mib, (smaller.name, larger.name)


@pytest.mark.parametrize("model", MIG_GPUS, ids=[m.key for m in MIG_GPUS])
def test_me_variant_shares_memory_and_capture_status_with_its_base(model: GpuModel) -> None:
    for profile in model.mig_profiles:
        if profile.media_extensions:
            base = model.mig_profile(profile.name.removesuffix("+me"))
            assert (profile.memory_mib, profile.memory_inferred) == (base.memory_mib, base.memory_inferred)
            assert (profile.memory_slices, profile.placement_starts) == (
                base.memory_slices,
                base.placement_starts,
            )


# --- per-instance memory: captured vs inferred ----------------------------------------------------------


@pytest.mark.parametrize(("model", "profile"), MIG_PROFILES, ids=_ids(MIG_PROFILES))
def test_inferred_memory_never_exceeds_the_decimal_gb_rule(model: GpuModel, profile: MigProfile) -> None:
    # Inferred = the lower of the name rule and a sibling GPU's capture (H20 only has the latter).
    if profile.memory_inferred:
        assert profile.memory_mib <= _nominal_mib(profile)


def test_h20_inferred_memory_follows_its_siblings_captures() -> None:
    h20 = catalog.gpu("H20")
    assert h20.mig_profile("1g.12gb").memory_mib == 11264  # GH200 96GB's -lgip
    assert h20.mig_profile("2g.24gb").memory_mib == 22138  # H100 NVL's -lgip
    assert h20.mig_profile("3g.48gb").memory_mib == _nominal_mib(h20.mig_profile("3g.48gb"))
    assert all(p.memory_inferred for p in h20.mig_profiles)


def test_captured_memory_is_at_least_the_rule_except_the_documented_profiles() -> None:
    captured = [(m, p) for m, p in MIG_PROFILES if not p.memory_inferred]
    assert captured, "no captured profile at all"
    below = {(m.key, p.name) for m, p in captured if p.memory_mib < _nominal_mib(p)}
    assert below == BELOW_NOMINAL


def test_which_profiles_are_captured() -> None:
    inferred = {(m.key, p.name) for m, p in MIG_PROFILES if p.memory_inferred}
    h20 = {("H20", p.name) for p in gpu("H20").mig_profiles}
    a30 = {("A30", p.name) for p in gpu("A30").mig_profiles}
    assert inferred == h20 | a30 | {("A100-80GB", "1g.20gb")}


def test_captured_values_spot_check() -> None:
    # -lgip GiB x 1024, rounded down (docs/catalog.md lists the captures).
    assert gpu("A100-40GB").mig_profile("1g.10gb").memory_mib == 9850  # 9.62 GiB
    assert gpu("A100-80GB").mig_profile("7g.80gb").memory_mib == 80896  # 79.00 GiB
    assert gpu("H100-80GB").mig_profile("1g.10gb").memory_mib == 9984  # 9.75 GiB
    assert gpu("H100-94GB").mig_profile("1g.12gb").memory_mib == 11008  # 10.75 GiB
    assert gpu("H200").mig_profile("1g.18gb").memory_mib == 16384  # 16.00 GiB


# --- the seed's facts ----------------------------------------------------------------------------------


def test_seed_l20_and_t4() -> None:
    l20, t4 = gpu("L20"), gpu("T4")
    assert (l20.product, l20.memory_mib, l20.compute_capability) == ("NVIDIA L20", 46068, "8.9")
    assert (t4.product, t4.memory_mib, t4.compute_capability) == ("Tesla T4", 15360, "7.5")
    for model in (l20, t4):
        assert not model.mig_capable
        assert model.mig_profiles == ()
        assert model.memory_source.startswith("seed:")
        with pytest.raises(GpushareError, match="does not support MIG"):
            model.mig_profile("1g.12gb")


def test_h20_profiles_follow_the_h20_96gb_names_with_inferred_ids() -> None:
    h20 = gpu("H20")
    assert h20.memory_mib == 97871
    assert [p.name for p in h20.mig_profiles] == [
        "1g.12gb",
        "1g.12gb+me",
        "1g.24gb",
        "2g.24gb",
        "3g.48gb",
        "4g.48gb",
        "7g.96gb",
    ]
    assert [p.id for p in h20.mig_profiles] == [19, 20, 15, 14, 9, 5, 0]
    assert all(p.id_inferred for p in h20.mig_profiles)
    assert all(p.memory_inferred for p in h20.mig_profiles)
    assert h20.mig_profile("1g.12gb+me").resource_name == "nvidia.com/mig-1g.12gb.me"
    assert h20.mig_profile_by_resource("mig-1g.12gb.me") is h20.mig_profile("1g.12gb+me")
    assert h20.mig_profile_by_resource("mig-3g.47gb") is None


def test_only_h20_ids_are_inferred() -> None:
    assert {m.key for m, p in MIG_PROFILES if p.id_inferred} == {"H20"}


def test_h100_94gb_has_the_47gb_names_and_not_h20s() -> None:
    h100 = gpu("H100-94GB")
    assert h100.product == "NVIDIA H100 NVL"
    assert h100.mig_profile("3g.47gb").memory_slices == 4
    assert h100.mig_profile("7g.94gb").id == 0
    with pytest.raises(GpushareError, match=re.escape("no MIG profile '3g.48gb'")):
        h100.mig_profile("3g.48gb")


def test_every_model_names_its_memory_source() -> None:
    for model in GPUS.values():
        assert model.memory_source.strip(), model.key
        assert model.memory_mib > 0


# --- public surface ------------------------------------------------------------------------------------


def test_as_json_keys_are_camel_case() -> None:
    document = as_json()
    assert [entry["model"] for entry in document] == list(GPUS)
    for entry in document:
        assert set(entry) == {
            "model",
            "product",
            "architecture",
            "computeCapability",
            "memoryMiB",
            "memorySource",
            "migCapable",
            "migProfiles",
            "qgpu",
        }
        profiles = entry["migProfiles"]
        assert isinstance(profiles, list)
        assert entry["migCapable"] is bool(profiles)
        for profile in profiles:
            assert set(profile) == {
                "name",
                "id",
                "computeSlices",
                "memorySlices",
                "maxInstances",
                "placementStarts",
                "placementSize",
                "memoryMiB",
                "idInferred",
                "memoryInferred",
            }
            assert isinstance(profile["placementStarts"], list)


def test_as_json_of_a_subset() -> None:
    (entry,) = as_json([gpu("L20")])
    assert entry["memoryMiB"] == 46068
    assert entry["migProfiles"] == []


def test_qgpu_in_the_json_says_how_sure_each_figure_is() -> None:
    by_model = {entry["model"]: entry["qgpu"] for entry in as_json()}
    assert {m: (q or {}).get("allocatableGiB") for m, q in by_model.items() if q is not None} == {
        "L20": 44,
        "T4": 14,
        "H20": 94,
        "A10": None,
        "A100-40GB": None,
        "A100-80GB": None,
        "L40S": None,
        "V100": None,
    }
    assert (by_model["T4"]["confidence"], by_model["L20"]["confidence"], by_model["H20"]["confidence"]) == (  # type: ignore[index]
        "verified",
        "third-party",
        "inferred",
    )
    assert by_model["L4"] is None  # not on Tencent's qGPU list


def test_instance_types() -> None:
    l20_node = instance_type("PNV5b.8XLARGE96")
    t4_node = instance_type("GN7.2XLARGE32")
    assert l20_node is not None and (l20_node.gpu, l20_node.gpus_per_node) == ("L20", 1)
    assert t4_node is not None and (t4_node.gpu, t4_node.gpus_per_node) == ("T4", 1)
    assert instance_type("NO.SUCH") is None
    for it in catalog.INSTANCE_TYPES.values():
        assert it.gpu in GPUS


def test_unknown_gpu_lists_the_known_models() -> None:
    with pytest.raises(GpushareError) as info:
        gpu("X")
    message = str(info.value)
    assert "'X'" in message
    for key in GPUS:
        assert key in message


# The profile table every 7-compute/8-memory-slice GPU shares (NVIDIA's MIG user guide, A100/H100 tables
# and `nvidia-smi mig -lgip` / `-lgipp`): (ID, compute slices, memory slices, max instances, placements).
SEVEN_SLICE_TABLE = [
    (19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 1),  # 1g.<s>gb
    (20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),  # 1g.<s>gb+me
    (15, 1, 2, 4, (0, 2, 4, 6), 2),  # 1g.<d>gb
    (14, 2, 2, 3, (0, 2, 4), 2),  # 2g.<d>gb
    (9, 3, 4, 2, (0, 4), 4),  # 3g.<q>gb
    (5, 4, 4, 1, (0,), 4),  # 4g.<q>gb
    (0, 7, 8, 1, (0,), 8),  # 7g.<f>gb
]


@pytest.mark.parametrize("key", ["A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200", "H20"])
def test_seven_slice_gpus_have_nvidias_profile_table(key: str) -> None:
    shape = [
        (p.id, p.compute_slices, p.memory_slices, p.max_instances, p.placement_starts, p.placement_size)
        for p in catalog.gpu(key).mig_profiles
    ]
    assert shape == SEVEN_SLICE_TABLE


def test_a30_has_nvidias_profile_table() -> None:
    # NVIDIA's MIG user guide, A30: 4 compute and 4 memory slices; the decimal-GB rule for memory:
    # 6e9 / 2^20 = 5722.04, 12e9 / 2^20 = 11444.09, 24e9 / 2^20 = 22888.18 MiB.
    rows = [
        (p.name, p.id, p.compute_slices, p.memory_slices, p.max_instances, p.placement_starts, p.memory_mib)
        for p in catalog.gpu("A30").mig_profiles
    ]
    assert rows == [
        ("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3), 5722),
        ("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3), 5722),
        ("2g.12gb", 5, 2, 2, 2, (0, 2), 11444),
        ("2g.12gb+me", 6, 2, 2, 1, (0, 2), 11444),
        ("4g.24gb", 0, 4, 4, 1, (0,), 22888),
    ]


@pytest.mark.parametrize(
    ("key", "captured"),
    [
        # `-lgip` captures in GiB (catalog comments), x 1024, rounded down.
        # A100 40GB: 4.75 / 9.62 / 19.50 / 39.25 GiB.
        ("A100-40GB", {"1g.5gb": 4864, "1g.10gb": 9850, "2g.10gb": 9850, "3g.20gb": 19968, "7g.40gb": 40192}),
        # A100 80GB PCIe: 9.50 / 19.50 / 39.25 / 79.00 GiB (no 1g.20gb capture).
        (
            "A100-80GB",
            {"1g.10gb": 9728, "2g.20gb": 19968, "3g.40gb": 40192, "4g.40gb": 40192, "7g.80gb": 80896},
        ),
        # H100 80GB SXM: 9.75 / 19.62 / 39.50 / 79.25 GiB.
        (
            "H100-80GB",
            {"1g.10gb": 9984, "1g.20gb": 20090, "2g.20gb": 20090, "3g.40gb": 40448, "7g.80gb": 81152},
        ),
        # H100 NVL: 10.75 / 21.62 / 46.38 / 93.12 GiB.
        (
            "H100-94GB",
            {
                "1g.12gb": 11008,
                "1g.24gb": 22138,
                "2g.24gb": 22138,
                "3g.47gb": 47493,
                "4g.47gb": 47493,
                "7g.94gb": 95354,
            },
        ),
        # H200 (NVIDIA/mig-parted issue #120): 16.00 / 32.25 / 69.50 / 139.75 GiB.
        (
            "H200",
            # 3g.71gb and 4g.71gb alike: both list 69.50 GiB (four memory slices each).
            {
                "1g.18gb": 16384,
                "1g.35gb": 33024,
                "2g.35gb": 33024,
                "3g.71gb": 71168,
                "4g.71gb": 71168,
                "7g.141gb": 143104,
            },
        ),
    ],
)
def test_captured_instance_memory_is_the_capture(key: str, captured: dict[str, int]) -> None:
    gpu = catalog.gpu(key)
    assert {name: gpu.mig_profile(name).memory_mib for name in captured} == captured
    assert not any(gpu.mig_profile(name).memory_inferred for name in captured)


def test_an_instance_type_cannot_be_changed_by_a_caller() -> None:
    """Every caller shares the one catalog (the stack model, advise, fleet); a caller that changed the T4
    node's GPU count (1, the seed's nvidia-smi) would change every later plan in the process."""
    t4_node = instance_type("GN7.2XLARGE32")
    assert t4_node is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        t4_node.gpus_per_node = 2  # type: ignore[misc]
    assert instance_type("GN7.2XLARGE32") == catalog.InstanceType(
        "GN7.2XLARGE32", "T4", 1, "seed (nvidia-smi on the node)"
    )
