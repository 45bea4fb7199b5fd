"""gpushare/yaml_bounds.py's alias accounting against go-yaml v2's own verdicts at the ratio's edge, and the
flow-depth pre-scan behind an escaped quote.

The aliasing verdicts in tests/fixtures/device_plugin/go_recorded_verdicts.json were recorded by running
go-yaml v2 (go.yaml.in/yaml/v2 v2.4.3, as NVIDIA's plugin v0.20.0 vendors it) on the documents the
builders below write; each shape is recorded one alias below and at the count where go-yaml starts to
refuse it. Rough arithmetic for `seqs` (an anchored list of N scalars, then a list of M aliases to it):
about 6 + N + M x (N + 2) decode steps of which M x (N + 1) come from aliases, so for N = 400 the ratio
crosses 0.99 near M = 133; the exact step is go-yaml's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpushare.yaml_bounds import YamlBoundError, check_flow_depth, safe_load_bounded

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "device_plugin" / "go_recorded_verdicts.json").read_text()
)["aliasing"]


def _seqs(size: int, aliases: int) -> str:
    """An anchored list of `size` scalars, then a list of `aliases` aliases to it."""
    return "a: &a [" + ",".join(["x"] * size) + "]\nb: [" + ",".join(["*a"] * aliases) + "]\n"


def _maps(size: int, aliases: int) -> str:
    """The same anchor, its aliases as the values of a mapping (`k0: *a, k1: *a, ...`)."""
    return (
        "a: &a [" + ",".join(["x"] * size) + "]\nb: {" + ",".join(f"k{i}: *a" for i in range(aliases)) + "}\n"
    )


def _merges(size: int, aliases: int) -> str:
    """An anchored mapping of `size` keys, merged (`{<<: *a}`) into each of `aliases` mappings."""
    return (
        "a: &a {"
        + ",".join(f"x{i}: {i}" for i in range(size))
        + "}\nb: ["
        + ",".join(["{<<: *a}"] * aliases)
        + "]\n"
    )


def _nested(size: int, aliases: int) -> str:
    """An anchored list of `size` scalars, a list of four aliases to it anchored as `c`, then `aliases`
    aliases to `c`: the aliases inside `c` are decoded inside an alias, and count as alias steps."""
    return (
        "a: &a ["
        + ",".join(["x"] * size)
        + "]\nc: &c [*a,*a,*a,*a]\nb: ["
        + ",".join(["*c"] * aliases)
        + "]\n"
    )


def _keys(size: int, aliases: int) -> str:
    """An anchored scalar key and an anchored list of `size` scalars, then `aliases` one-entry mappings whose
    key is an alias to that scalar and whose value an alias to the list (`{*k: *a}`): the key alias is a
    decode step of its own and its target is decoded inside an alias, as a value alias's is."""
    return (
        "k: &k key\na: &a [" + ",".join(["x"] * size) + "]\nb: [" + ",".join(["{*k: *a}"] * aliases) + "]\n"
    )


def _plainseq(size: int, aliases: int) -> str:
    """`size` scalars in one list, no alias at all."""
    return "[" + ",".join(["x"] * size) + "]\n"


def _plainmap(size: int, aliases: int) -> str:
    """`size` keys in one mapping, no alias at all."""
    return "{" + ",".join(f"k{i}: v" for i in range(size)) + "}\n"


SHAPES: dict[str, Callable[[int, int], str]] = {
    "seqs": _seqs,
    "maps": _maps,
    "merges": _merges,
    "nested": _nested,
    "keys": _keys,
    "plainseq": _plainseq,
    "plainmap": _plainmap,
}


@pytest.mark.parametrize(
    "case", RECORDED, ids=lambda case: f"{case['shape']}-{case['size']}-{case.get('aliases', 0)}"
)
def test_aliasing_is_refused_where_go_yaml_refused_it(case: dict[str, Any]) -> None:
    # The pairs tell apart what go-yaml counts: a mapping key is a decode step of its own (`maps`: the
    # aliases sit in value slots, every key beside them dilutes the ratio), a merge key is not (`merges`), an alias met inside an alias is an alias step (`nested`),
    # an alias written as a mapping key is an alias step like one in a value slot (`keys`),
    # and the document's root is not inside any alias (`plain*`: 1001 and 1500 steps without an alias
    # pass). Below go-yaml's ratio a document with more than 100 alias steps and 1000 steps is accepted.
    text = SHAPES[case["shape"]](case["size"], case.get("aliases", 0))
    if case["ok"]:
        assert safe_load_bounded(text) is not None
    else:
        with pytest.raises(YamlBoundError) as refused:
            safe_load_bounded(text)
        assert f"yaml: {refused.value.reason}" == case["error"]


@pytest.mark.usefixtures("hang_guard")  # a scan that stops advancing fails instead of hanging
def test_an_escaped_quote_does_not_end_a_double_quoted_scalar_in_the_depth_scan() -> None:
    # `"a\"[[[..."` is one scalar: its 10 001 brackets are text, so nothing is nested and the scan passes
    # (ending the scalar at `\"` would count them and refuse the file as 10 001 deep).
    quoted = 'x: "a\\"' + "[" * 10_001 + '"\n'
    check_flow_depth(quoted)


@pytest.mark.usefixtures("hang_guard")
def test_nesting_after_a_scalar_with_an_escaped_quote_is_still_counted() -> None:
    # After `"a\"b"` closes, 10 001 real brackets follow: go-yaml stops at its 10 000 levels.
    deep = 'x: "a\\"b"\ny: ' + "[" * 10_001 + "]" * 10_001 + "\n"
    with pytest.raises(YamlBoundError) as refused:
        check_flow_depth(deep)
    assert refused.value.reason == "exceeded max depth of 10000"
