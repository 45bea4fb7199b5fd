"""Every GPU fact gpushare uses, in one table.

Sources (see docs/catalog.md for the long form):
- memory in MiB is what `nvidia-smi` reports as the total; L20 and T4 come from the seed's cluster,
  the others from public `nvidia-smi` captures (provenance per entry in `memory_source`);
- MIG shapes, profile names and IDs follow the NVIDIA MIG User Guide as summarised in
  shared/reference/nvidia-device-plugin-and-mig.md section C. H20 profile IDs are INFERRED from the
  common 7-slice shape: no H20 `nvidia-smi mig -lgip` capture was found;
- per-instance memory comes from `nvidia-smi mig -lgip` captures where one exists (GiB x 1024, rounded
  down; the lowest value seen across driver versions); otherwise it is the profile name's size read as
  decimal gigabytes (12gb -> 11444 MiB), flagged `memory_inferred`. That rule is below every capture of
  4- and 8-memory-slice profiles and of all A100/A30/H100-80GB profiles, but NOT of the 1- and 2-slice
  profiles of H100 94GB (1g.12gb captured at 11008 MiB) and H200 (1g.18gb at 16384 MiB); the GH200 96GB,
  whose profile names H20 shares, reports 1g.12gb as 11264 MiB, so H20's inferred values take the lower
  of the name rule and such sibling captures (`analog_mib`). Details and sources: docs/catalog.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from gpushare.errors import GpushareError
from gpushare.suggest import unknown_name


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as `nvidia-smi mig -lgip` / `-lgipp` list it."""

    name: str
    id: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    placement_starts: tuple[int, ...]
    placement_size: int
    memory_mib: int
    id_inferred: bool = False
    memory_inferred: bool = False

    @property
    def media_extensions(self) -> bool:
        """`+me` profiles own the GPU's media engines: at most one per GPU."""
        return "+me" in self.name

    @property
    def resource_suffix(self) -> str:
        """The mixed-strategy resource name without `nvidia.com/`: `+` becomes `.` (rm.go)."""
        return "mig-" + self.name.replace("+", ".")

    @property
    def resource_name(self) -> str:
        return "nvidia.com/" + self.resource_suffix


@dataclass(frozen=True)
class GpuModel:
    key: str
    product: str
    architecture: str
    compute_capability: str
    memory_mib: int
    memory_source: str
    mig_profiles: tuple[MigProfile, ...] = ()
    compute_slices: int = 0
    memory_slices: int = 0
    # The oldest driver with which NVIDIA supports MIG on this GPU (None: no known floor beyond MIG's own).
    mig_min_driver: str | None = None

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile:
        for profile in self.mig_profiles:
            if profile.name == name:
                return profile
        if not self.mig_capable:
            raise GpushareError(f"{self.key} does not support MIG")
        names = [p.name for p in self.mig_profiles]
        raise GpushareError(f"{self.key} has no MIG profile {name!r}{unknown_name(name, names)}")

    def mig_profile_by_resource(self, resource_suffix: str) -> MigProfile | None:
        for profile in self.mig_profiles:
            if profile.resource_suffix == resource_suffix:
                return profile
        return None


@dataclass(frozen=True)
class InstanceType:
    """A Tencent Cloud CVM instance type and the GPUs it carries."""

    name: str
    gpu: str
    gpus_per_node: int
    source: str


def _decimal_gb_to_mib(gigabytes: int) -> int:
    return gigabytes * 1000**3 // 2**20


# The shape every 7-compute/8-memory-slice MIG GPU shares (A100, H100, H20, H200, B200).
# (suffix template, profile ID, compute slices, memory slices, max instances, placement starts, size)
_SEVEN_SLICE_SHAPE: tuple[tuple[str, int, int, int, int, tuple[int, ...], int], ...] = (
    ("1g.{s}gb", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.{s}gb+me", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.{d}gb", 15, 1, 2, 4, (0, 2, 4, 6), 2),
    ("2g.{d}gb", 14, 2, 2, 3, (0, 2, 4), 2),
    ("3g.{q}gb", 9, 3, 4, 2, (0, 4), 4),
    ("4g.{q}gb", 5, 4, 4, 1, (0,), 4),
    ("7g.{f}gb", 0, 7, 8, 1, (0,), 8),
)


def _seven_slice(
    sizes: Mapping[str, int],
    measured_mib: Mapping[str, int] | None = None,
    *,
    ids_inferred: bool = False,
    analog_mib: Mapping[str, int] | None = None,
) -> tuple[MigProfile, ...]:
    """Profiles for a 7-slice GPU. `sizes` names the GB in the profile names for one (s), two (d),
    four (q) and eight (f) memory slices; `measured_mib` holds `-lgip` memory where captured.
    `analog_mib` holds captures of a sibling GPU for profiles never captured on this one: the inferred
    value is the lower of the analog and the decimal-GB rule, so tuning errs towards fewer replicas."""
    measured = measured_mib or {}
    analog = analog_mib or {}
    profiles = []
    for template, pid, compute, memory, max_inst, starts, size in _SEVEN_SLICE_SHAPE:
        name = template.format(**sizes)
        nominal = sizes[{1: "s", 2: "d", 4: "q", 8: "f"}[memory]]
        base = name.removesuffix("+me")
        profiles.append(
            MigProfile(
                name=name,
                id=pid,
                compute_slices=compute,
                memory_slices=memory,
                max_instances=max_inst,
                placement_starts=starts,
                placement_size=size,
                memory_mib=measured.get(base, min(_decimal_gb_to_mib(nominal), analog.get(base, 2**31))),
                id_inferred=ids_inferred,
                memory_inferred=base not in measured,
            )
        )
    return tuple(profiles)


def _a30_profiles() -> tuple[MigProfile, ...]:
    # A30: 4 compute / 4 memory slices. IDs and placements from third-party captures (reference C).
    rows = (
        ("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3), 1, 6),
        ("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3), 1, 6),
        ("2g.12gb", 5, 2, 2, 2, (0, 2), 2, 12),
        ("2g.12gb+me", 6, 2, 2, 1, (0, 2), 2, 12),
        ("4g.24gb", 0, 4, 4, 1, (0,), 4, 24),
    )
    return tuple(
        MigProfile(
            name=name,
            id=pid,
            compute_slices=c,
            memory_slices=m,
            max_instances=mx,
            placement_starts=starts,
            placement_size=size,
            memory_mib=_decimal_gb_to_mib(gb),
            memory_inferred=True,
        )
        for name, pid, c, m, mx, starts, size, gb in rows
    )


_MODELS: tuple[GpuModel, ...] = (
    GpuModel("L20", "NVIDIA L20", "Ada Lovelace", "8.9", 46068, "seed: nvidia-smi -q on PNV5b.8XLARGE96"),
    GpuModel("T4", "Tesla T4", "Turing", "7.5", 15360, "seed: nvidia-smi -q on GN7.2XLARGE32"),
    GpuModel(
        "H20",
        "NVIDIA H20",
        "Hopper",
        "9.0",
        97871,
        "public nvidia-smi capture of NVIDIA H20, driver 550.144.03 (third-party; same total as GH200 96GB)",
        _seven_slice(
            {"s": 12, "d": 24, "q": 48, "f": 96},
            ids_inferred=True,
            # No H20 -lgip capture exists: GH200 96GB (same names and total) reports 1g.12gb as 11264 MiB;
            # H100 NVL (smaller total) reports the 24gb profiles as 22138 MiB. Both undercut the name rule.
            analog_mib={"1g.12gb": 11264, "1g.24gb": 22138, "2g.24gb": 22138},
        ),
        7,
        8,
        # NVIDIA MIG User Guide, supported GPUs: H20 needs R535 >= 535.161.07.
        mig_min_driver="535.161.07",
    ),
    GpuModel(
        "A10",
        "NVIDIA A10",
        "Ampere",
        "8.6",
        23028,
        "public nvidia-smi captures, ECC on (third-party, several; 24564 MiB with ECC off)",
    ),
    GpuModel(
        "A30",
        "NVIDIA A30",
        "Ampere",
        "8.0",
        24576,
        "public nvidia-smi captures (third-party, 2 independent; one on driver 550.90.07)",
        _a30_profiles(),
        4,
        4,
    ),
    GpuModel(
        "A100-40GB",
        "NVIDIA A100-SXM4-40GB",
        "Ampere",
        "8.0",
        40960,
        "public nvidia-smi captures, current table layout (third-party, several; driver 450 showed 40537)",
        _seven_slice(
            {"s": 5, "d": 10, "q": 20, "f": 40},
            # Third-party `nvidia-smi mig -lgip` captures on A100 40GB, older-driver variant
            # (4.75/9.62/19.50/39.25 GiB; newer drivers show 9.75/19.62), GiB x 1024 rounded down.
            {
                "1g.5gb": 4864,
                "1g.10gb": 9850,
                "2g.10gb": 9850,
                "3g.20gb": 19968,
                "4g.20gb": 19968,
                "7g.40gb": 40192,
            },
        ),
        7,
        8,
    ),
    GpuModel(
        "A100-80GB",
        "NVIDIA A100-SXM4-80GB",
        "Ampere",
        "8.0",
        81920,
        "public nvidia-smi captures (third-party, several)",
        _seven_slice(
            {"s": 10, "d": 20, "q": 40, "f": 80},
            # Third-party `-lgip` on A100 80GB PCIe, driver 515.86.01 (9.50/19.50/39.25/79.00 GiB);
            # that driver has no 1g.20gb, which stays inferred.
            {"1g.10gb": 9728, "2g.20gb": 19968, "3g.40gb": 40192, "4g.40gb": 40192, "7g.80gb": 80896},
        ),
        7,
        8,
    ),
    GpuModel(
        "H100-80GB",
        "NVIDIA H100 80GB HBM3",
        "Hopper",
        "9.0",
        81559,
        "public nvidia-smi captures (third-party, several)",
        _seven_slice(
            {"s": 10, "d": 20, "q": 40, "f": 80},
            # Third-party `-lgip` on H100 80GB SXM (jbarrow.ai field notes): 9.75/19.62/39.50/79.25 GiB.
            {
                "1g.10gb": 9984,
                "1g.20gb": 20090,
                "2g.20gb": 20090,
                "3g.40gb": 40448,
                "4g.40gb": 40448,
                "7g.80gb": 81152,
            },
        ),
        7,
        8,
    ),
    GpuModel(
        "H100-94GB",
        "NVIDIA H100 NVL",
        "Hopper",
        "9.0",
        95830,
        "public nvidia-smi captures (third-party, several)",
        _seven_slice(
            {"s": 12, "d": 24, "q": 47, "f": 94},
            # Third-party `-lgip` on H100 NVL (Azure NC40ads_H100_v5, driver 560.35.03):
            # 10.75/21.62/46.38/93.12 GiB. 1g.12gb and 1g/2g.24gb are BELOW the decimal-GB rule.
            {
                "1g.12gb": 11008,
                "1g.24gb": 22138,
                "2g.24gb": 22138,
                "3g.47gb": 47493,
                "4g.47gb": 47493,
                "7g.94gb": 95354,
            },
        ),
        7,
        8,
    ),
    GpuModel(
        "H200",
        "NVIDIA H200",
        "Hopper",
        "9.0",
        143771,
        "public nvidia-smi captures (third-party, several)",
        _seven_slice(
            {"s": 18, "d": 35, "q": 71, "f": 141},
            # `-lgip` on NVIDIA H200 in NVIDIA/mig-parted issue #120: 16.00/32.25/69.50/139.75 GiB.
            # 1g.18gb and 1g/2g.35gb are BELOW the decimal-GB rule.
            {
                "1g.18gb": 16384,
                "1g.35gb": 33024,
                "2g.35gb": 33024,
                "3g.71gb": 71168,
                "4g.71gb": 71168,
                "7g.141gb": 143104,
            },
        ),
        7,
        8,
    ),
    GpuModel("L4", "NVIDIA L4", "Ada Lovelace", "8.9", 23034, "public nvidia-smi captures (third-party)"),
    GpuModel("L40S", "NVIDIA L40S", "Ada Lovelace", "8.9", 46068, "public nvidia-smi captures (third-party)"),
    GpuModel(
        "V100",
        "Tesla V100-SXM2-16GB",
        "Volta",
        "7.0",
        16384,
        "public nvidia-smi captures, current drivers (third-party; R418/R440 showed 16130/16160 MiB)",
    ),
)

GPUS: Mapping[str, GpuModel] = {model.key: model for model in _MODELS}

_TKE_H20_GUIDES = "TKE guides deploying DeepSeek on H20 (imroc/tke-guide sglang-deepseek-r1)"

INSTANCE_TYPES: Mapping[str, InstanceType] = {
    it.name: it
    for it in (
        InstanceType("PNV5b.8XLARGE96", "L20", 1, "seed (nvidia-smi on the node)"),
        InstanceType("GN7.2XLARGE32", "T4", 1, "seed (nvidia-smi on the node)"),
        # H20 96GB, all invite-only: TKE's own DeepSeek deployment guides (docs/catalog.md).
        InstanceType("PNV6.16XLARGE640", "H20", 4, _TKE_H20_GUIDES),
        InstanceType("PNV6.32XLARGE1280", "H20", 8, _TKE_H20_GUIDES),
        InstanceType("PNV6.96XLARGE2304", "H20", 8, _TKE_H20_GUIDES),
        InstanceType("HCCPNV6.96XLARGE2304", "H20", 8, _TKE_H20_GUIDES + " (RDMA)"),
    )
}
# Other sizes of the PNV6 family (and whether HCCPNV5v carries H20) are not listed: a pool on an
# unlisted type states `gpusPerNode` itself.


# --------------------------------------------------------------------------------------------------------
# TKE qGPU (shared/reference/tke-qgpu.md; docs/qgpu.md). Every figure carries its confidence: "verified"
# (a Tencent source says so), "third-party" (a public demo or guide shows it), "inferred" (a stated rule,
# no capture). `gpushare.qgpu` sizes pools from these; the plan prints the confidence beside the figure.

# qgpu-core: percent of one card in steps of 5, minimum 5; a whole card is 100 (VERIFIED, 457/65734).
QGPU_CORE_PER_GPU: Final = 100
QGPU_CORE_STEP: Final = 5
# qgpu-memory: whole GiB, minimum 1 (VERIFIED, 457/65734).
QGPU_MEMORY_UNIT_MIB: Final = 1024
# At most 16 qGPU devices per GPU (VERIFIED, 457/65734).
QGPU_MAX_SLICES_PER_GPU: Final = 16
# The NVIDIA driver series qGPU supports on native nodes (VERIFIED, 457/65734, 2026-01-16; minor versions
# "as the console offers"). The pinned provider's NativeNodePool has no driver field: TKE picks it.
QGPU_DRIVER_SERIES: Final = ("450", "470", "515", "525", "535", "550", "570")

QgpuConfidence = Literal["verified", "third-party", "inferred"]


@dataclass(frozen=True)
class QgpuCard:
    """What qGPU makes of one card: the allocatable `tke.cloud.tencent.com/qgpu-memory` (GiB, below the
    nominal size) and how sure that figure is; the instance family Tencent's qGPU list names."""

    gpu: str
    family: str
    allocatable_gib: int
    confidence: QgpuConfidence
    source: str

    @property
    def confirmed(self) -> bool:
        return self.confidence == "verified"


QGPU_CARDS: Mapping[str, QgpuCard] = {
    card.gpu: card
    for card in (
        QgpuCard(
            "T4",
            "GN7",
            14,
            "verified",
            "Tencent's qGPU GPU-CRD page: a T4 GPU object shows capacity qgpu-memory 14",
        ),
        QgpuCard(
            "L20",
            "PNV5b",
            44,
            "third-party",
            "camushoilingma/qgpu-demo @ 22fa0d7: an L20 native node (PNV5b.8XLARGE96) showed 44",
        ),
        QgpuCard(
            "H20",
            "PNV6",
            94,
            "inferred",
            "no capture: 96 GiB nominal less the ~2 GiB T4 and L20 lose (set sharing.allocatableGiB once "
            "`kubectl get node` shows the real figure)",
        ),
    )
}
# Tencent's qGPU list (457/65734) also names V100 (GN10x), A100 (GT4), A10 (PNV4), L40 (PNV5i) and L40S
# (PNV5); their allocatable memory was never seen, so a pool on them states sharing.allocatableGiB.
QGPU_LISTED_WITHOUT_FIGURE: Final = frozenset({"V100", "A100-40GB", "A100-80GB", "A10", "L40S"})


def qgpu_card(key: str) -> QgpuCard | None:
    return QGPU_CARDS.get(key)


def qgpu_supported(key: str) -> bool:
    """On Tencent's qGPU list (457/65734)."""
    return key in QGPU_CARDS or key in QGPU_LISTED_WITHOUT_FIGURE


def gpu(key: str) -> GpuModel:
    try:
        return GPUS[key]
    except KeyError:
        raise GpushareError(f"unknown GPU model {key!r}{unknown_name(key, GPUS)}") from None


def instance_type(name: str) -> InstanceType | None:
    return INSTANCE_TYPES.get(name)


def as_json(models: Sequence[GpuModel] | None = None) -> list[dict[str, object]]:
    """The catalog as `python -m gpushare catalog --json` prints it (camelCase keys)."""
    return [
        {
            "model": m.key,
            "product": m.product,
            "architecture": m.architecture,
            "computeCapability": m.compute_capability,
            "memoryMiB": m.memory_mib,
            "memorySource": m.memory_source,
            "migCapable": m.mig_capable,
            "migProfiles": [
                {
                    "name": p.name,
                    "id": p.id,
                    "computeSlices": p.compute_slices,
                    "memorySlices": p.memory_slices,
                    "maxInstances": p.max_instances,
                    "placementStarts": list(p.placement_starts),
                    "placementSize": p.placement_size,
                    "memoryMiB": p.memory_mib,
                    "idInferred": p.id_inferred,
                    "memoryInferred": p.memory_inferred,
                }
                for p in m.mig_profiles
            ],
            "qgpu": _qgpu_json(m.key),
        }
        for m in (models if models is not None else list(GPUS.values()))
    ]


def _qgpu_json(key: str) -> dict[str, object] | None:
    """TKE qGPU on this model: None when Tencent's list lacks it; `allocatableGiB` None when no figure is known."""
    if not qgpu_supported(key):
        return None
    card = qgpu_card(key)
    return {
        "allocatableGiB": card.allocatable_gib if card else None,
        "confidence": card.confidence if card else None,
        "source": card.source if card else None,
    }


def qgpu_summary() -> str:
    """One line of what the catalog knows of qGPU, for `gpushare catalog`."""
    figures = ", ".join(f"{c.gpu} {c.allocatable_gib} GiB ({c.confidence})" for c in QGPU_CARDS.values())
    others = ", ".join(sorted(QGPU_LISTED_WITHOUT_FIGURE))
    return (
        f"TKE qGPU, allocatable qgpu-memory a card: {figures}; also on Tencent's list, no figure (pools state "
        f"sharing.allocatableGiB): {others}. At most {QGPU_MAX_SLICES_PER_GPU} slices a card; drivers "
        f"{', '.join(QGPU_DRIVER_SERIES)}."
    )
