"""gpushare/advise/fleet.py on its own: the fleet file as YAML types it, its bounds, and the pool each service gets.

The fleet files are written the way a user writes them: unquoted dates, numbers in quotes, candidates as a
bare GPU model. Expected values by hand (memory from the catalog, ceiling 0.9 unless said):
- L20 46068 MiB: floor(0.9 x 46068 / 4621) = floor(8.97) = 8 slots per GPU.
- T4 15360 MiB: floor(0.9 x 15360 / 4401) = floor(3.14) = 3 slots per GPU.
- H20 97871 MiB: floor(0.9 x 97871 / 4621) = floor(19.06) = 19 slots per GPU time-sliced.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from gpushare.advise import fleet
from gpushare.advise.fleet import Candidate, load_fleet, parse_fleet, plan_fleet
from gpushare.cli.main import main
from gpushare.errors import ConfigError, GpushareError
from gpushare.stack.model import Mig, Pool, TimeSlicing


def write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def advise_json(path: Path) -> dict[str, object]:
    out = io.StringIO()
    assert main(["advise", "--fleet", str(path), "--json"], out) == 0
    document: dict[str, object] = json.loads(out.getvalue())
    return document


def snippet_pools(snippet: str) -> list[Pool]:
    """The printed `gpushare:pools` block, read back by the stack model's pool type."""
    pools = yaml.safe_load("config:\n" + snippet)["config"]["gpushare:pools"]
    return [Pool.model_validate(pool) for pool in pools]


# --------------------------------------------------------------------------------------------------------
# Candidates


def test_a_bare_gpu_candidate_is_one_gpu_per_node(tmp_path: Path) -> None:
    """`{gpu: L20}` names no instance type: one GPU per node, and the snippet asks for the type."""
    path = write(
        tmp_path,
        "services:\n  - {name: nlp, measuredMiB: 4621, replicas: 10}\ncandidates:\n  - {gpu: L20}\n",
    )
    (plan,) = plan_fleet(load_fleet(path), str(path))
    assert plan.candidate.instance_type is None
    assert plan.candidate.per_node == 1
    # 8 slots per L20: ceil(10 / 8) = 2 GPUs, one per node: 2 nodes, 16 slots.
    assert (plan.option.mode, plan.option.slots, plan.nodes, plan.gpus, plan.slots) == (
        "time-slicing",
        8,
        2,
        2,
        16,
    )
    # 2 x 46068 - 10 x 4621 = 92136 - 46210 = 45926 MiB left unused.
    assert plan.wasted_mib == 45926
    entry = plan.snippet().checked_entry()
    assert (entry["instanceType"], entry["gpusPerNode"]) == ("FILL-IN", 1)


def test_a_bare_model_name_takes_the_catalogs_only_instance_type_and_only_then() -> None:
    document = parse_fleet(
        "services: [{name: a, measuredMiB: 4621, replicas: 1}]\ncandidates: [L20, H20]\n", "f"
    )
    l20, h20 = document.candidates
    # The catalog has one L20 type (PNV5b.8XLARGE96, 1 GPU) and four H20 types: H20 stays without one.
    assert (l20.gpu, l20.instance_type, l20.per_node) == ("L20", "PNV5b.8XLARGE96", 1)
    assert (h20.gpu, h20.instance_type, h20.per_node) == ("H20", None, 1)


def test_a_catalog_instance_type_brings_its_gpus_per_node(tmp_path: Path) -> None:
    # PNV6.16XLARGE640 carries 4 H20 (catalog): 20 replicas at 19 slots per GPU need ceil(20 / 19) = 2 GPUs,
    # bought as ceil(2 / 4) = 1 node of 4 GPUs = 76 slots; unused 4 x 97871 - 20 x 4621 = 391484 - 92420.
    path = write(
        tmp_path,
        "services: [{name: nlp, measuredMiB: 4621, replicas: 20, isolation: shared}]\n"
        "candidates: [PNV6.16XLARGE640]\n",
    )
    (plan,) = plan_fleet(load_fleet(path), str(path))
    assert (plan.candidate.per_node, plan.nodes, plan.gpus, plan.slots) == (4, 1, 4, 76)
    assert plan.wasted_mib == 299064


@pytest.mark.parametrize(
    ("candidate", "key", "message"),
    [
        # A quoted number is a string: the stack file's rule too (strict types, never coerced).
        (
            '{gpu: H20, instanceType: HX.FOUR, gpusPerNode: "4"}',
            "candidates[0].gpusPerNode",
            "must be an integer",
        ),
        ("{gpu: H20, instanceType: HX.FOUR, gpusPerNode: 0}", "candidates[0].gpusPerNode", "must be > 0"),
        ("{gpu: H20, instanceType: HX.FOUR}", "candidates[0]", "gpusPerNode: required, HX.FOUR is not in"),
        ("{gpu: T4, instanceType: PNV5b.8XLARGE96}", "candidates[0]", "PNV5b.8XLARGE96 carries L20, not T4"),
        ("{gpu: L20, instanceType: PNV5b.8XLARGE96, gpusPerNode: 1}", None, None),
        ("{gpu: B300}", "candidates[0]", "unknown GPU model 'B300'"),
    ],
)
def test_candidate_fields_are_typed_as_written(candidate: str, key: str | None, message: str | None) -> None:
    text = f"services: [{{name: a, measuredMiB: 4621, replicas: 1}}]\ncandidates: [{candidate}]\n"
    if message is None:
        assert parse_fleet(text, "fleet.yaml").candidates[0].per_node == 1
        return
    with pytest.raises(ConfigError) as caught:
        parse_fleet(text, "fleet.yaml")
    assert (caught.value.source, caught.value.key) == ("fleet.yaml", key)
    assert message in caught.value.message


def test_candidate_keys_may_be_written_as_their_python_names_as_in_the_stack_file() -> None:
    # The stack file's pools take `measured_mib` for `measuredMiB` (gpushare/stack/fields.py); a fleet file
    # is read the same way, so `instance_type` and `gpus_per_node` name the same fields, not unknown keys.
    services = "services: [{name: a, measuredMiB: 4621, replicas: 1}]\n"
    camel = parse_fleet(services + "candidates: [{gpu: H20, instanceType: HX.TWO, gpusPerNode: 2}]\n", "f")
    snake = parse_fleet(services + "candidates: [{gpu: H20, instance_type: HX.TWO, gpus_per_node: 2}]\n", "f")
    assert snake == camel
    assert (snake.candidates[0].instance_type, snake.candidates[0].per_node) == ("HX.TWO", 2)


def test_candidate_validation_names_the_type_or_the_count() -> None:
    with pytest.raises(ValueError, match=r"gpusPerNode: PNV6\.16XLARGE640 has 4 GPU\(s\) per node"):
        Candidate.model_validate({"gpu": "H20", "instanceType": "PNV6.16XLARGE640", "gpusPerNode": 8})
    assert Candidate.model_validate({"gpu": "H20", "instanceType": "HX.TWO", "gpusPerNode": 2}).per_node == 2
    assert Candidate(gpu="H20", instanceType="HX.TWO", gpusPerNode=2).describe() == "H20 on HX.TWO"
    assert Candidate(gpu="H20").describe() == "H20"


# --------------------------------------------------------------------------------------------------------
# Services and YAML's own types


def test_an_unquoted_measurement_date_reaches_the_snippet_as_a_string(tmp_path: Path) -> None:
    """YAML reads `measuredAt: 2025-06-01` as a date; the plan keeps it, the snippet quotes it."""
    path = write(
        tmp_path,
        "services:\n"
        "  - name: embed\n"
        "    measuredMiB: 4401\n"
        "    measuredAt: 2025-06-01\n"
        "    source: nvidia-smi on the T4 node\n"
        "    replicas: 3\n"
        "candidates: [GN7.2XLARGE32]\n",
    )
    loaded = load_fleet(path)
    assert loaded.services[0].measured_at == "2025-06-01"
    document = advise_json(path)
    snippet = document["stackSnippet"]
    assert isinstance(snippet, str)
    assert '        measuredAt: "2025-06-01"\n' in snippet
    (pool,) = snippet_pools(snippet)
    assert isinstance(pool.sharing, TimeSlicing)
    # 3 slots per T4: ceil(3 / 3) = 1 GPU.
    assert (pool.sharing.measured_at, pool.sharing.measured_mib, pool.nodes.desired) == (
        "2025-06-01",
        4401,
        1,
    )


def test_an_unquoted_date_and_time_is_kept_in_iso_form() -> None:
    text = (
        "services: [{name: a, measuredMiB: 4621, replicas: 1, measuredAt: 2025-06-01 08:30:00}]\n"
        "candidates: [L20]\n"
    )
    assert parse_fleet(text, "f").services[0].measured_at == "2025-06-01T08:30:00"


def test_a_service_without_a_date_gets_the_fill_in_comment(tmp_path: Path) -> None:
    path = write(tmp_path, "services: [{name: a, measuredMiB: 4621, replicas: 1}]\ncandidates: [L20]\n")
    snippet = advise_json(path)["stackSnippet"]
    assert isinstance(snippet, str)
    # A placeholder the stack loader refuses until it is filled in (plan, render and check name its key).
    assert '        measuredAt: "FILL-IN: YYYY-MM-DD, the day it was measured"\n' in snippet


@pytest.mark.parametrize(
    ("service", "key", "message"),
    [
        ('{name: a, measuredMiB: "4621", replicas: 1}', "services[0].measuredMiB", "must be an integer"),
        ('{name: a, measuredMiB: 4621, replicas: "2"}', "services[0].replicas", "must be an integer"),
        ("{name: a, measuredMiB: 4621, replicas: 0}", "services[0].replicas", "must be > 0"),
        (
            "{name: a, measuredMiB: 4621, replicas: 1, isolation: yes}",
            "services[0].isolation",
            "'mig', 'mps' or 'shared'",  # mps: a service served by an MPS pool (#37)
        ),
        ("{name: '', measuredMiB: 4621, replicas: 1}", "services[0].name", "at least 1 character"),
        ("{name: a, measuredMiB: 4621, replicas: 1, extra: 1}", "services[0].extra", "unknown key"),
    ],
)
def test_service_fields_are_typed_as_written(service: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fleet(f"services: [{service}]\ncandidates: [L20]\n", "fleet.yaml")
    assert caught.value.key == key
    assert message in caught.value.message


def test_duplicate_service_names_are_refused() -> None:
    text = "services: [{name: a, measuredMiB: 4621, replicas: 1}, {name: a, measuredMiB: 4401, replicas: 1}]\ncandidates: [L20]\n"
    with pytest.raises(ConfigError, match=r"duplicate service name 'a' \(each service becomes a pool\)"):
        parse_fleet(text, "f")


@pytest.mark.parametrize(
    ("ceiling", "problem"),
    [("1.0", None), ("0.5", None), ("0", "must be > 0"), ("1.01", "must be <= 1")],
)
def test_the_ceiling_bounds(ceiling: str, problem: str | None) -> None:
    text = f"services: [{{name: a, measuredMiB: 4621, replicas: 1}}]\ncandidates: [L20]\nceiling: {ceiling}\n"
    if problem is None:
        assert parse_fleet(text, "f").ceiling == float(ceiling)
        return
    with pytest.raises(ConfigError, match=problem):
        parse_fleet(text, "f")


def test_the_ceiling_decides_the_slots(tmp_path: Path) -> None:
    # Ceiling 0.5: floor(0.5 x 46068 / 4621) = floor(4.98) = 4 slots per L20; 9 replicas -> 3 GPUs.
    path = write(
        tmp_path, "services: [{name: a, measuredMiB: 4621, replicas: 9}]\ncandidates: [L20]\nceiling: 0.5\n"
    )
    (plan,) = plan_fleet(load_fleet(path), str(path))
    assert (plan.option.slots, plan.gpus) == (4, 3)


# --------------------------------------------------------------------------------------------------------
# The file's bounds


def test_a_file_one_byte_over_the_bound_is_refused_not_cut_and_parsed(tmp_path: Path) -> None:
    """Valid YAML up to the bound, then more: read up to the bound and parsed, it would plan a fleet."""
    head = "services: [{name: a, measuredMiB: 4621, replicas: 1}]\ncandidates: [L20]\n#"
    path = tmp_path / "big.yaml"
    path.write_text(head + "x" * (fleet.MAX_FLEET_FILE_BYTES + 1 - len(head)))
    assert path.stat().st_size == fleet.MAX_FLEET_FILE_BYTES + 1
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    assert caught.value.source == str(path)
    assert caught.value.message == f"larger than {fleet.MAX_FLEET_FILE_BYTES} bytes; not read"
    assert caught.value.exit_code == 2  # unreadable: never parsed


def test_a_file_of_exactly_the_bound_is_read(tmp_path: Path) -> None:
    head = "services: [{name: a, measuredMiB: 4621, replicas: 1}]\ncandidates: [L20]\n#"
    path = tmp_path / "full.yaml"
    path.write_text(head + "x" * (fleet.MAX_FLEET_FILE_BYTES - len(head)))
    assert path.stat().st_size == fleet.MAX_FLEET_FILE_BYTES
    assert load_fleet(path).services[0].name == "a"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"services: [{name: caf\xe9}]\n", "not UTF-8 text (byte 0xe9 at offset 21)"),
        (
            b"x: &a [1]\nservices: *a\ncandidates: [L20]\n",
            "YAML aliases (*name) are not supported in a fleet file",
        ),
        (b"- 1\n", "expected a mapping with `services` and `candidates`"),
        (
            b"services: !!binary aGk=\ncandidates: [L20]\n",
            "not valid YAML: line 1, column 11: the tag !!binary is not allowed here (only strings, numbers, "
            "booleans, null, lists and mappings)",
        ),
    ],
)
def test_unreadable_files_are_one_error_naming_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    assert (caught.value.source, caught.value.key, caught.value.message) == (str(path), None, message)


def test_a_missing_file_is_an_unreadable_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_fleet(tmp_path / "absent.yaml")
    assert (caught.value.message, caught.value.exit_code) == ("no such file", 2)


# --------------------------------------------------------------------------------------------------------
# The choice


def test_isolation_mig_takes_mig_layouts_and_shared_takes_whole_gpus(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "services:\n"
        "  - {name: iso, measuredMiB: 4621, replicas: 7, isolation: mig}\n"
        "  - {name: whole, measuredMiB: 4621, replicas: 7, isolation: shared}\n"
        "candidates: [{gpu: H20, instanceType: HX.ONE, gpusPerNode: 1}]\n",
    )
    iso, whole = plan_fleet(load_fleet(path), str(path))
    # 7 replicas fit one H20 either way; MIG asked for: the layout with the most instances (7) wins ties.
    assert (iso.option.mode, iso.option.isolation_domains, iso.gpus) == ("mig", 7, 1)
    entry = iso.snippet().checked_entry()
    assert isinstance(Pool.model_validate(entry).sharing, Mig)
    assert (whole.option.mode, whole.option.slots, whole.gpus) == ("time-slicing", 19, 1)


def test_a_service_that_fits_no_candidate_names_it_and_the_service(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "services:\n  - {name: ok, measuredMiB: 1000, replicas: 1}\n  - {name: big, measuredMiB: 20000, replicas: 1, isolation: shared}\n"
        "candidates: [T4]\n",
    )
    with pytest.raises(GpushareError) as caught:
        plan_fleet(load_fleet(path), str(path))
    # T4 15360 MiB < 20000 MiB: the second service (index 1) fits nowhere.
    assert (caught.value.source, caught.value.key) == (str(path), "services[1]")
    assert caught.value.message == "20000 MiB fits no candidate GPU without MIG (T4 on GN7.2XLARGE32)"


def test_a_candidate_the_process_does_not_fit_is_skipped_not_the_end_of_the_search(tmp_path: Path) -> None:
    # 20000 MiB fits no T4 (15360 MiB) but an L20: floor(0.9 x 46068 / 20000) = floor(2.07) = 2 slots.
    path = write(
        tmp_path, "services: [{name: big, measuredMiB: 20000, replicas: 2}]\ncandidates: [T4, L20]\n"
    )
    (plan,) = plan_fleet(load_fleet(path), str(path))
    assert (plan.candidate.gpu, plan.option.slots, plan.gpus) == ("L20", 2, 1)
