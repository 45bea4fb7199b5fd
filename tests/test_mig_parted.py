"""mig-parted config files: the format rules of reference section D, fit checks, rendering, the CLI."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest
from conftest import shared_file

from gpushare.catalog import gpu
from gpushare.cli.validate import run_mig_validate_cli as run_validate_cli
from gpushare.errors import GpushareError
from gpushare.mig.parted import (
    MigConfigEntry,
    MigPartedConfig,
    MigPartedConfigError,
    check_fits,
    parse,
    parse_profile_name,
    render,
    single_layout_config,
)

# In the reference tree (../shared): the parity tests get it through `shared_file` (conftest.py).
OPERATOR_DEFAULT = "reference/gpu-operator-v25.3.0-default-mig-parted-config.yaml"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "mig_parted"
H20 = gpu("H20")


def config_text(body: str) -> str:
    """`version: v1` plus an indented YAML body under `mig-configs:`."""
    return "version: v1\nmig-configs:\n" + textwrap.indent(textwrap.dedent(body), "  ")


def entry_text(entry: str, name: str = "c") -> str:
    """One config `name` with one entry given as YAML mapping lines."""
    return config_text(
        f"{name}:\n" + textwrap.indent(textwrap.dedent(entry), "    ").replace("    ", "  - ", 1)
    )


def error_of(text: str) -> str:
    with pytest.raises(MigPartedConfigError) as caught:
        parse(text)
    return str(caught.value)


# --- the GPU Operator's default config -------------------------------------------------------------------


@pytest.fixture(scope="module")
def operator_default() -> MigPartedConfig:
    return parse(shared_file(OPERATOR_DEFAULT).read_text(encoding="utf-8"))


def test_gpu_operator_default_config_parses(operator_default: MigPartedConfig) -> None:
    configs = operator_default.mig_configs
    assert list(configs)[:3] == ["all-disabled", "all-enabled", "all-1g.5gb"]
    assert configs["all-disabled"] == (MigConfigEntry(devices="all", mig_enabled=False),)
    assert configs["all-enabled"][0].mig_devices == {}
    assert configs["all-1g.12gb.me"][0].mig_devices == {"1g.12gb+me": 1}
    assert [e.mig_devices for e in configs["all-1g.10gb"]] == [{"1g.10gb": 7}, {"1g.10gb": 4}]
    h20_balanced = [
        e
        for e in configs["all-balanced"]
        if isinstance(e.device_filter, tuple) and "0x232910DE" in e.device_filter
    ]
    assert [e.mig_devices for e in h20_balanced] == [{"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}]
    a30_balanced = [e for e in configs["all-balanced"] if e.device_filter == "0x20B710DE"]
    assert len(a30_balanced) == 1  # a plain string filter stays a string


def test_gpu_operator_default_config_round_trips_through_render(operator_default: MigPartedConfig) -> None:
    assert parse(render(operator_default)) == operator_default
    assert render(operator_default) == render(parse(render(operator_default)))


def test_gpu_operator_h20_configs_fit_h20(operator_default: MigPartedConfig) -> None:
    h20_names = ["all-disabled", "all-enabled", "all-1g.12gb", "all-1g.12gb.me", "all-2g.24gb", "all-3g.48gb"]
    h20_names += ["all-4g.48gb", "all-7g.96gb"]
    check_fits(MigPartedConfig(mig_configs={n: operator_default.mig_configs[n] for n in h20_names}), H20)


def test_gpu_operator_default_does_not_fit_h20_as_a_whole(operator_default: MigPartedConfig) -> None:
    # Device filters are not evaluated: the A100 configs are checked against H20 too.
    with pytest.raises(
        MigPartedConfigError, match=r"^mig-configs\.all-1g\.5gb\[0\]\.mig-devices: does not fit H20"
    ):
        check_fits(operator_default, H20)


# --- top level ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n", "~\n"])
def test_empty_document_is_valid_and_has_no_configs(text: str) -> None:
    assert parse(text) == MigPartedConfig()


def test_version_alone_is_valid() -> None:
    assert parse("version: v1\n").mig_configs == {}


def test_missing_version_is_rejected() -> None:
    text = "mig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
    assert "missing 'version' field" in error_of(text)
    assert "missing 'version' field" in error_of("{}")


@pytest.mark.parametrize("version", ["v2", "V1", "1", "null", "'v1 '"])
def test_version_must_be_v1(version: str) -> None:
    assert error_of(f"version: {version}\n").startswith("version: unknown version")


def test_unexpected_top_level_field_is_rejected() -> None:
    text = "version: v1\nbogus: field\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n"
    assert error_of(text) == "bogus: unexpected field (allowed: version, mig-configs)"


@pytest.mark.parametrize("value", ["{}", "null", "[]", "x"])
def test_mig_configs_must_be_a_non_empty_mapping(value: str) -> None:
    assert error_of(f"version: v1\nmig-configs: {value}\n").startswith("mig-configs: ")


@pytest.mark.parametrize("value", ["[]", "null", "{}"])
def test_each_config_needs_at_least_one_entry(value: str) -> None:
    message = error_of(config_text(f"all-x: {value}\n"))
    assert message.startswith("mig-configs.all-x: ")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # No entries (null, an empty list) and no list at all (a mapping, even an empty one; a string) are
        # two faults, each said as such, at the config's own key; never the string read as its characters.
        ("null", "mig-configs.all-x: at least one entry in 'all-x' is required"),
        ("[]", "mig-configs.all-x: at least one entry in 'all-x' is required"),
        ("{}", "mig-configs.all-x: expected a list of entries, got a mapping"),
        ("{devices: all}", "mig-configs.all-x: expected a list of entries, got a mapping"),
        ("all", "mig-configs.all-x: expected a list of entries, got a string"),
    ],
)
def test_a_config_of_no_entries_and_a_config_that_is_no_list_are_told_apart(value: str, message: str) -> None:
    assert error_of(config_text(f"all-x: {value}\n")) == message


def test_top_level_must_be_a_mapping() -> None:
    assert error_of("- version: v1\n").startswith("expected a mapping with 'version' and 'mig-configs'")


def test_invalid_yaml_is_reported_on_one_line() -> None:
    message = error_of("version: v1\nmig-configs: [\n")
    assert message.startswith("not valid YAML: ")
    assert "\n" not in message


# --- entries --------------------------------------------------------------------------------------------


def test_valid_entry_forms() -> None:
    config = parse(
        config_text(
            """
            mixed:
              - device-filter: "0x232910DE"
                devices: [0, 1]
                mig-enabled: false
              - device-filter: ["0x232910DE", "0x233010DE"]
                devices: all
                mig-enabled: true
                mig-devices: {"1g.12gb": 7}
            """
        )
    )
    first, second = config.mig_configs["mixed"]
    assert first == MigConfigEntry(device_filter="0x232910DE", devices=(0, 1), mig_enabled=False)
    assert second.device_filter == ("0x232910DE", "0x233010DE")
    assert second.devices == "all"
    assert second.mig_devices == {"1g.12gb": 7}


@pytest.mark.parametrize("missing", ["devices", "mig-enabled"])
def test_entry_requires_devices_and_mig_enabled(missing: str) -> None:
    fields = {"devices": "devices: all", "mig-enabled": "mig-enabled: false"}
    del fields[missing]
    message = error_of(entry_text("\n".join(fields.values()) + "\n", name="all-x"))
    assert message == f"mig-configs.all-x[0]: missing required field '{missing}'"


def test_unknown_entry_key_is_rejected() -> None:
    message = error_of(entry_text("devices: all\nmig-enabled: false\nmig-device: {}\n", name="all-x"))
    assert message.startswith(
        "mig-configs.all-x[0].mig-device: unexpected field (allowed: device-filter, devices,"
    )


def test_entry_must_be_a_mapping() -> None:
    assert error_of(config_text("c:\n  - all\n")).startswith("mig-configs.c[0]: expected a mapping")


@pytest.mark.parametrize("devices", ["bogus", "null", "{}", "[true]", "[0, x]", "[0.5]", "3"])
def test_devices_must_be_all_or_a_list_of_integers(devices: str) -> None:
    message = error_of(entry_text(f"devices: {devices}\nmig-enabled: false\n"))
    assert message.startswith('mig-configs.c[0].devices: must be "all" or a list of GPU indexes')


@pytest.mark.parametrize(("devices", "parsed"), [("[]", ()), ("[3, 1, 1]", (3, 1, 1)), ("[2.0]", (2,))])
def test_devices_lists_are_taken_as_mig_parted_takes_them(devices: str, parsed: tuple[int, ...]) -> None:
    config = parse(entry_text(f"devices: {devices}\nmig-enabled: false\n"))
    assert config.mig_configs["c"][0].devices == parsed


def test_device_filter_must_be_a_string_or_list_of_strings() -> None:
    message = error_of(entry_text("device-filter: 0x232910DE\ndevices: all\nmig-enabled: false\n"))
    assert message.startswith("mig-configs.c[0].device-filter: must be a string or a list of strings")
    assert 'quote PCI IDs: "0x232910DE"' in message  # unquoted hex is a YAML integer
    message = error_of(entry_text("device-filter: {a: b}\ndevices: all\nmig-enabled: false\n"))
    assert message.startswith("mig-configs.c[0].device-filter: must be a string or a list of strings")
    assert "quote" not in message


def test_mig_enabled_true_requires_mig_devices() -> None:
    message = error_of(entry_text("devices: all\nmig-enabled: true\n"))
    assert message.startswith(
        "mig-configs.c[0]: missing required field 'mig-devices' when 'mig-enabled' is true"
    )


def test_mig_enabled_true_with_empty_mig_devices_is_valid() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {}\n"))
    assert config.mig_configs["c"][0].mig_devices == {}


def test_mig_enabled_false_rejects_mig_devices_but_allows_an_empty_map() -> None:
    message = error_of(entry_text("devices: all\nmig-enabled: false\nmig-devices: {1g.12gb: 7}\n"))
    assert message == "mig-configs.c[0].mig-devices: MIG devices included when 'mig-enabled' is false"
    parse(entry_text("devices: all\nmig-enabled: false\nmig-devices: {}\n"))


def test_mig_enabled_must_be_a_boolean() -> None:
    message = error_of(entry_text('devices: all\nmig-enabled: "true"\nmig-devices: {}\n'))
    assert message.startswith("mig-configs.c[0].mig-enabled: must be true or false")


def test_nulls_behave_as_mig_parted_decodes_them() -> None:
    # null mig-enabled is Go's false; null device-filter is "" (no filter); null mig-devices is absent.
    entry = parse(entry_text("device-filter: null\ndevices: all\nmig-enabled: null\nmig-devices: null\n"))
    assert entry.mig_configs["c"][0] == MigConfigEntry(devices="all", mig_enabled=False)


# --- mig-devices: the profile grammar and counts ----------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "1g.12gb",
        "1g.12gb+me",
        "1g.12gb-me",
        "1g.12gb+me,gfx",
        "1g.12gb+Me.2",
        "1c.2g.24gb",
        "01g.012gb",
        "0g.0gb",
        "7g.96gb",
        "1g.5gb+me",
    ],
)
def test_well_formed_profile_names_are_accepted(name: str) -> None:
    parse(entry_text(f'devices: all\nmig-enabled: true\nmig-devices: {{"{name}": 1}}\n'))


@pytest.mark.parametrize(
    "name",
    [
        "",
        "1g",
        "12gb",
        "1G.12gb",
        "1g.12GB",
        "1g.12gb ",
        " 1g.12gb",
        "1g. 12gb",
        "1g.12",
        "g.12gb",
        "1.5g.12gb",
        "1g.12gb+me-x",
        "1g.12gb+",
        "1g.12gb+me,me",
        "1g.12gb+me,",
        "1g.12gb+1me",
        "1g.12gb+.me",
        "1g.12gb+me.",
        "1g.12gb+m_e",
        "1x.1g.12gb",
        "1g.١٢gb",  # Arabic-Indic digits: Go's Atoi takes ASCII only
        "1c.1g.12gb.x",
    ],
)
def test_malformed_profile_names_are_rejected(name: str) -> None:
    message = error_of(
        entry_text(f'devices: all\nmig-enabled: true\nmig-devices: {{"{name}": 1}}\n', "all-x")
    )
    assert message.startswith(f"mig-configs.all-x[0].mig-devices: invalid profile name {name!r}: ")


def test_profile_name_grammar_details() -> None:
    assert parse_profile_name("1c.2g.24gb").is_gpu_instance is False
    assert parse_profile_name("2c.2g.24gb").canonical() == "2g.24gb"
    assert parse_profile_name("01g.012gb+me").canonical() == "1g.12gb+me"
    assert parse_profile_name("1g.12gb+b,a").canonical() == "1g.12gb+a,b"
    assert parse_profile_name("1g.12gb-me").negative_attributes == ("me",)


@pytest.mark.parametrize("count", ["-1", "1.5", '"2"', "true", "null", "[1]"])
def test_counts_must_be_non_negative_integers(count: str) -> None:
    message = error_of(entry_text(f"devices: all\nmig-enabled: true\nmig-devices: {{1g.12gb: {count}}}\n"))
    assert message.startswith("mig-configs.c[0].mig-devices: count for '1g.12gb' must be an integer >= 0")


def test_zero_counts_are_allowed_but_not_all_zero() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 0, 2g.24gb: 3}\n"))
    assert config.mig_configs["c"][0].mig_devices == {"1g.12gb": 0, "2g.24gb": 3}
    message = error_of(entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 0, 2g.24gb: 0}\n"))
    assert message.startswith("mig-configs.c[0].mig-devices: all counts are 0")


def test_integral_float_counts_decode_as_integers() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 7.0}\n"))
    assert config.mig_configs["c"][0].mig_devices == {"1g.12gb": 7}


def test_capacity_is_not_checked_at_parse_time() -> None:
    parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {0g.0gb: 100, 1g.12gb: 8}\n"))


def test_errors_are_gpushare_errors_with_the_field_path_as_key() -> None:
    with pytest.raises(GpushareError) as caught:
        parse(entry_text("devices: all\nmig-enabled: true\n", name="all-1g.12gb"))
    assert isinstance(caught.value, MigPartedConfigError)
    assert caught.value.key == "mig-configs.all-1g.12gb[0]"


def test_models_are_frozen() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: false\n"))
    with pytest.raises(pydantic.ValidationError):
        config.mig_configs["c"][0].mig_enabled = True  # type: ignore[misc]


# --- check_fits -----------------------------------------------------------------------------------------


def test_h20_fixture_fits_h20() -> None:
    check_fits(parse((FIXTURES / "h20-mixed.yaml").read_text()), H20)


def test_seed_h100_94gb_names_do_not_fit_h20_and_the_real_names_are_suggested() -> None:
    config = parse((FIXTURES / "h20-with-h100-94gb-names.yaml").read_text())
    with pytest.raises(MigPartedConfigError) as caught:
        check_fits(config, H20)
    message = str(caught.value)
    assert message.startswith(
        "mig-configs.h20-3g[0].mig-devices: does not fit H20: unknown profile 3g.47gb for H20"
    )
    assert "did you mean 3g.48gb?" in message
    # ... and the same names are fine on the GPU they belong to.
    check_fits(config, gpu("H100-94GB"))


def test_too_many_instances_do_not_fit() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 8}\n", "all-1g.12gb"))
    with pytest.raises(MigPartedConfigError) as caught:
        check_fits(config, H20)
    assert (
        str(caught.value)
        == "mig-configs.all-1g.12gb[0].mig-devices: does not fit H20: 1g.12gb x8: at most 7 per GPU"
    )


def test_zero_counts_and_equivalent_spellings_are_merged_before_fitting() -> None:
    fits = entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 5, 01g.12gb: 2, 3g.48gb: 0}\n")
    check_fits(parse(fits), H20)
    too_many = entry_text("devices: all\nmig-enabled: true\nmig-devices: {1g.12gb: 5, 1c.1g.12gb: 3}\n")
    with pytest.raises(MigPartedConfigError, match=r"1g\.12gb x8: at most 7 per GPU"):
        check_fits(parse(too_many), H20)


def test_compute_instance_profiles_cannot_be_checked() -> None:
    config = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {1c.2g.24gb: 2}\n"))
    with pytest.raises(
        MigPartedConfigError, match=r"^mig-configs\.c\[0\]\.mig-devices: cannot check '1c\.2g\.24gb'"
    ):
        check_fits(config, H20)


def test_non_mig_gpu_accepts_only_disabled_entries() -> None:
    check_fits(parse(entry_text("devices: all\nmig-enabled: false\n")), gpu("T4"))
    enabled = parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {}\n"))
    with pytest.raises(
        MigPartedConfigError, match=r"^mig-configs\.c\[0\]\.mig-enabled: T4 does not support MIG$"
    ):
        check_fits(enabled, gpu("T4"))


def test_mig_enabled_without_instances_fits_any_mig_gpu() -> None:
    check_fits(parse(entry_text("devices: all\nmig-enabled: true\nmig-devices: {}\n")), gpu("A30"))


# --- render and single_layout_config --------------------------------------------------------------------


def test_single_layout_config_renders_like_the_gpu_operator_config() -> None:
    config = single_layout_config("h20-balanced", {"1g.12gb": 2, "3g.48gb": 1, "2g.24gb": 1}, "0x232910DE")

    assert render(config) == textwrap.dedent(
        """\
        version: v1
        mig-configs:
          h20-balanced:
            - device-filter: '0x232910DE'
              devices: all
              mig-enabled: true
              mig-devices:
                3g.48gb: 1
                2g.24gb: 1
                1g.12gb: 2
        """
    )
    assert parse(render(config)) == config
    check_fits(config, H20)


def test_single_layout_config_without_filter() -> None:
    config = single_layout_config("all-1g.12gb", {"1g.12gb": 7})
    assert config.mig_configs == {
        "all-1g.12gb": (MigConfigEntry(devices="all", mig_enabled=True, mig_devices={"1g.12gb": 7}),)
    }
    assert "device-filter" not in render(config)


@pytest.mark.parametrize(
    ("name", "counts", "expected"),
    [
        ("c", {"1G.12gb": 1}, "invalid profile name '1G.12gb'"),
        ("c", {"1g.12gb": 0}, "all counts are 0"),
        ("c", {"1g.12gb": -1}, "must be an integer >= 0"),
        ("c", {}, "give at least one profile"),
        ("", {"1g.12gb": 1}, "config name must not be empty"),
    ],
)
def test_single_layout_config_validates_the_format(name: str, counts: dict[str, int], expected: str) -> None:
    with pytest.raises(MigPartedConfigError, match=expected.replace(".", r"\.")):
        single_layout_config(name, counts)


def test_render_of_an_empty_config_parses_back() -> None:
    assert render(MigPartedConfig()) == "version: v1\n"
    assert parse(render(MigPartedConfig())) == MigPartedConfig()


def test_render_keeps_quotes_where_yaml_would_change_the_type() -> None:
    config = MigPartedConfig(
        mig_configs={
            "123": (MigConfigEntry(device_filter=("0x20B710DE", "true"), devices=(0, 1), mig_enabled=False),),
        }
    )
    assert parse(render(config)) == config


# --- run_validate_cli -----------------------------------------------------------------------------------


def run(paths: list[str], gpu_key: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_validate_cli(paths, gpu_key, out, err)
    return status, out.getvalue(), err.getvalue()


def test_cli_valid_file() -> None:
    path = str(FIXTURES / "h20-mixed.yaml")
    assert run([path]) == (0, f"{path}: valid\n", "")
    assert run([path], "H20") == (0, f"{path}: valid\n", "")


def test_cli_reports_each_file_and_fails_when_one_is_invalid() -> None:
    good, bad = str(FIXTURES / "h20-mixed.yaml"), str(FIXTURES / "missing-mig-devices.yaml")
    status, out, err = run([good, bad])
    assert status == 1
    assert out.splitlines() == [
        f"{good}: valid",
        f"{bad}: invalid: mig-configs.all-enabled[0]: missing required field 'mig-devices' "
        "when 'mig-enabled' is true (use mig-devices: {} for none)",
    ]
    assert err == ""


def test_cli_gpu_checks_that_layouts_fit() -> None:
    path = str(FIXTURES / "h20-with-h100-94gb-names.yaml")
    assert run([path])[0] == 0  # well-formed for mig-parted
    status, out, _ = run([path], "H20")
    assert status == 1
    assert out.startswith(
        f"{path}: invalid: mig-configs.h20-3g[0].mig-devices: does not fit H20: unknown profile 3g.47gb"
    )


def test_cli_unreadable_file_exits_2_but_still_checks_the_others(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    good = str(FIXTURES / "h20-mixed.yaml")
    status, out, err = run([missing, good])
    assert status == 2
    assert out == f"{good}: valid\n"
    assert err == f"{missing}: no such file\n"


def test_cli_non_utf8_file_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"version: v1 \xff\n")
    assert run([str(path)])[0] == 2


def test_cli_unknown_gpu_exits_2() -> None:
    status, out, err = run([str(FIXTURES / "h20-mixed.yaml")], "H21")
    assert (status, out) == (2, "")
    assert err.startswith("--gpu: unknown GPU model 'H21'")


def test_cli_without_files_exits_2() -> None:
    status, _, err = run([])
    assert status == 2
    assert "no mig-parted config files" in err


def test_cli_operator_default_config_is_valid() -> None:
    path = shared_file(OPERATOR_DEFAULT)
    assert run([str(path)]) == (0, f"{path}: valid\n", "")


# --- recorded upstream verdicts (`nvidia-mig-parted assert --valid-config`) -----------------------------

UPSTREAM_VALID_CONFIG = json.loads((FIXTURES / "upstream_valid_config.json").read_text())


@pytest.mark.parametrize(
    "recorded", UPSTREAM_VALID_CONFIG, ids=[f"m{i:02d}" for i in range(len(UPSTREAM_VALID_CONFIG))]
)
def test_cli_verdicts_agree_with_mig_parted(recorded: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(recorded["text"])
    status, out, err = run([str(path)])
    assert (status == 0) is recorded["valid"], (out, err, recorded["message"])
    if not recorded["valid"]:
        assert (status, err) == (1, "")


def test_broken_yaml_is_one_line_naming_line_and_column() -> None:
    # The flow list opened on line 3 is never closed: PyYAML stops at the end of the stream, line 4.
    with pytest.raises(MigPartedConfigError) as caught:
        parse("version: v1\nmig-configs:\n  a: [\n")
    assert str(caught.value) == (
        "not valid YAML: line 4, column 1: while parsing a flow node, expected the node content, "
        "but found '<stream end>'"
    )


def test_cli_gpu_checks_the_entries_after_one_with_mig_on_and_no_instances(tmp_path: Path) -> None:
    # Entry [0] turns MIG on with no instances (nothing to place); entry [1] asks for eight 1g.12gb on an
    # H20, which has 7 compute slices (one per 1g.12gb, MIG User Guide): the second entry is still checked.
    path = tmp_path / "config.yaml"
    path.write_text(
        entry_text("devices: [0]\nmig-enabled: true\nmig-devices: {}\n", name="h20-split")
        + "    - devices: [1]\n      mig-enabled: true\n      mig-devices:\n        1g.12gb: 8\n"
    )
    assert run([str(path)]) == (0, f"{path}: valid\n", "")  # well-formed for mig-parted
    assert run([str(path)], "H20") == (
        1,
        f"{path}: invalid: mig-configs.h20-split[1].mig-devices: does not fit H20: 1g.12gb x8: at most 7 per GPU\n",
        "",
    )


def test_only_the_first_plus_starts_the_attributes() -> None:
    """go-nvlib splits a profile name at its first `+` only (SplitN(name, "+", 2)): in `1g.12gb+me+x` the
    attribute text is `me+x`, one attribute with a `+` in it, refused as such; split at every `+`, the
    name would be read as having no attributes and fail on its `gb` field instead."""
    with pytest.raises(ValueError) as caught:
        parse_profile_name("1g.12gb+me+x")
    assert str(caught.value) == "attribute 'me+x' has characters other than letters, digits and dots"


def test_a_name_with_both_plus_and_minus_attributes_is_refused_for_that() -> None:
    """go-nvlib refuses a name that splits at both a `+` and a `-` before reading its fields; read as `+`
    attributes only, `1g.12gb+me-x` would be refused for the `-` in the attribute `me-x` instead."""
    with pytest.raises(ValueError) as caught:
        parse_profile_name("1g.12gb+me-x")
    assert str(caught.value) == "contains both '+' and '-' attributes"


def test_a_name_with_negative_attributes_keeps_its_minus_sorted() -> None:
    # Kept as written, spelt sorted (go-nvlib matches attributes as a set), behind the `-` they came with.
    name = parse_profile_name("1g.12gb-me,gfx")
    assert (name.attributes, name.negative_attributes) == ((), ("me", "gfx"))
    assert name.canonical() == "1g.12gb-gfx,me"
