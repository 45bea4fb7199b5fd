"""gpushare/stack/yaml.py: a stack file's scalars as the Pulumi CLI (gopkg.in/yaml.v3, YAML 1.2's core
schema) reads them, not as PyYAML's YAML 1.1 would. Expected values from the YAML 1.2 core schema
(yaml.org/spec/1.2.2, 10.3.2) and Go's strconv.ParseInt(s, 0, 64), which yaml.v3 uses for ints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURE_STACKS

from gpushare.stack.loading import load_stack_file
from gpushare.stack.yaml import load_cli_yaml


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Booleans: only true/false in three spellings; YAML 1.1's yes/no/on/off stay strings.
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        # Dates stay strings (yaml.v3 decodes a timestamp into a string for an untyped value).
        ("2025-06-01", "2025-06-01"),
        ("2025-06-01 08:30:00", "2025-06-01 08:30:00"),
        # Integers: decimal, 0x, 0o, 0b; a leading 0 is octal for Go (017 = 15); underscores allowed.
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("0", 0),
        # 019 is no octal number: Go refuses it as an int, yaml.v3 then reads it as a float, 19.
        ("019", 19.0),
        # Floats, and YAML's spellings of infinity and NaN.
        ("1.30", 1.3),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("-.inf", float("-inf")),
        (".Inf", float("inf")),
        # Null: empty, ~ and null; "None" is a string.
        ("~", None),
        ("null", None),
        ("NULL", None),
        ("None", "None"),
        # YAML 1.1 sexagesimal numbers are strings in 1.2.
        ("1:30", "1:30"),
    ],
)
def test_scalars_are_read_as_yaml_1_2(text: str, value: Any) -> None:
    assert load_cli_yaml(f"key: {text}\n") == {"key": value}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # strconv.ParseInt(s, 0, 64): a leading "0" means base 8, however short the number: 01..07 are the
        # ints 1..7, 010 is 8, and 00 is 0. 08 is no octal number: ParseInt fails, yaml.v3 reads the float 8
        # (as 019 above). Types asserted too: 7 == 7.0 in Python, but the stack model's ints are strict.
        ("00", 0),
        ("01", 1),
        ("07", 7),
        ("010", 8),
        ("08", 8.0),
    ],
)
def test_a_short_number_with_a_leading_zero_is_the_octal_int_go_reads(text: str, value: Any) -> None:
    loaded = load_cli_yaml(f"key: {text}\n")["key"]
    assert (type(loaded), loaded) == (type(value), value)


def test_a_node_count_with_a_leading_zero_loads_as_the_int_pulumi_reads(tmp_path: Path) -> None:
    # `desired: 01` is the int 1 for the Pulumi CLI (octal 01 = 1), so the stack loads with one node; read
    # as the float 1.0 it would be refused as "must be an integer".
    text = (FIXTURE_STACKS / "Pulumi.yaml-types.yaml").read_text()
    edited = text.replace("nodes: {min: 0, max: 2000, desired: 1}", "nodes: {min: 0, max: 2000, desired: 01}")
    assert edited != text
    path = tmp_path / "Pulumi.yaml-types.yaml"
    path.write_text(edited)
    nodes = load_stack_file(path).pools[0].nodes
    assert (type(nodes.desired), nodes.desired, nodes.min, nodes.max) == (int, 1, 0, 2000)


def test_nan_is_a_float() -> None:
    loaded = load_cli_yaml("key: .nan\n")["key"]
    assert isinstance(loaded, float) and loaded != loaded


def test_an_empty_value_is_null_and_quotes_keep_strings() -> None:
    assert load_cli_yaml("a:\nb: '1.30'\nc: \"true\"\n") == {"a": None, "b": "1.30", "c": "true"}


def test_duplicate_keys_are_refused_where_pyyaml_keeps_the_last() -> None:
    text = "config:\n  gpushare:pools: []\n  gpushare:pools: [{name: a}]\n"
    assert yaml.safe_load(text) == {
        "config": {"gpushare:pools": [{"name": "a"}]}
    }  # PyYAML: silently the last
    with pytest.raises(yaml.YAMLError, match="mapping key 'gpushare:pools' already defined"):
        load_cli_yaml(text)


def test_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n"
    assert load_cli_yaml(text)["derived"] == {"x": 1, "y": 2}
