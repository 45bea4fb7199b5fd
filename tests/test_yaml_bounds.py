"""gpushare/yaml_bounds.py: YAML read the way go-yaml v2 (NVIDIA's plugin and mig-parted) bounds it.

go-yaml v2 decode.go `allowedAliasRatio`: 99 % of decode steps may come from aliases up to 400 000 steps,
10 % from 4 000 000, linear between: at 2 200 000, 0.99 - 0.89 x 0.5 = 0.545. scannerc.go: flow
collections nest at most 10 000 deep ("exceeded max depth of 10000")."""

from __future__ import annotations

import pytest

from gpushare import yaml_bounds
from gpushare.yaml_bounds import (
    YamlBoundError,
    YamlTooDeepError,
    check_flow_depth,
    iter_documents,
    safe_load_bounded,
)

# A scan that stops advancing (a mutated index step) fails in seconds instead of hanging the run.
pytestmark = pytest.mark.usefixtures("quick_hang_guard")


@pytest.mark.parametrize(
    ("decodes", "ratio"),
    [(0, 0.99), (400_000, 0.99), (2_200_000, 0.545), (4_000_000, 0.10), (9_000_000, 0.10)],
)
def test_the_alias_ratio_follows_go_yaml(decodes: int, ratio: float) -> None:
    assert yaml_bounds._allowed_alias_ratio(decodes) == pytest.approx(ratio)


def test_a_nine_level_alias_bomb_is_refused_unexpanded() -> None:
    bomb = "a0: &a0 [" + ",".join(['"x"'] * 9) + "]\n"
    bomb += "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    with pytest.raises(YamlBoundError, match="excessive aliasing"):
        safe_load_bounded(bomb)


def test_a_few_aliases_are_fine() -> None:
    assert safe_load_bounded("base: &b {x: 1}\nuse: [*b, *b]\n") == {
        "base": {"x": 1},
        "use": [{"x": 1}, {"x": 1}],
    }


def test_only_the_first_document_counts_for_load_and_each_for_iter() -> None:
    text = "a: 1\n---\nb: 2\n"
    assert safe_load_bounded(text) == {"a": 1}
    assert list(iter_documents(yaml_bounds._SafeBoundedLoader, text)) == [{"a": 1}, {"b": 2}]
    assert safe_load_bounded("") is None


@pytest.mark.parametrize(
    ("depth", "outcome"),
    [
        (200, None),  # MAX_FOLLOWED_FLOW_DEPTH: followed
        (201, YamlTooDeepError),  # deeper than followed here, not a verdict on the file
        (10_000, YamlTooDeepError),
        (10_001, YamlBoundError),  # go-yaml's own limit: refused as go-yaml refuses it
    ],
)
def test_flow_depth_limits(depth: int, outcome: type[Exception] | None) -> None:
    text = "key: " + "[" * depth + "]" * depth + "\n"
    if outcome is None:
        check_flow_depth(text)
    else:
        with pytest.raises(outcome):
            check_flow_depth(text)


def test_brackets_in_quotes_and_comments_are_not_nesting() -> None:
    check_flow_depth("a: '" + "[" * 300 + "'\nb: \"" + "{" * 300 + '"\n# ' + "[" * 300 + "\n")
    check_flow_depth("a: x[" * 300 + "\n")  # inside a plain scalar: no flow collection
    with pytest.raises(YamlTooDeepError):
        check_flow_depth("a: " + "[" * 201)


def test_an_escaped_backslash_before_the_closing_quote_ends_the_scalar() -> None:
    # "x\\" is the two characters x and a backslash: the second backslash is escaped, so the quote after it
    # closes the scalar, and the 201 brackets on the next line are nesting (one level past what is followed).
    # Skipping one character too many after an escape would swallow that quote and call them text.
    with pytest.raises(YamlTooDeepError):
        check_flow_depth('a: "x\\\\"\nb: ' + "[" * 201 + "]" * 201 + "\n")
    check_flow_depth('a: "x\\\\"\nb: ' + "[" * 200 + "]" * 200 + "\n")


def test_a_doubled_quote_keeps_a_single_quoted_scalar_open() -> None:
    # YAML writes a ' inside a single-quoted scalar as ''; the 300 brackets after it are still text. Were
    # the scalar taken as closed at the first ', the second could not reopen it (a quote opens a scalar
    # only after a space, ':', ',' ... at the top level), and the brackets would count as 300 levels.
    check_flow_depth("a: 'it''s " + "[" * 300 + "'\n")
