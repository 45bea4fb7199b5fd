"""The mutation runner's own decisions (`mutation/`): which tokens become mutants, how a mutant is written,
which equivalents.yaml entry excuses it, and which test files run first. Each expected value is read off
the tiny sources below by hand."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mutation import test_map as runner_map
from mutation.run import equivalence, load_equivalents
from mutation.sites import Site, find_sites, parses
from mutation.test_map import module_name, own_test_names

SOURCE = textwrap.dedent(
    '''\
    def pick(a, b):
        """a < b in a docstring is no site"""
        if a < 1 and not b:  # a comment: > is no site
            raise ValueError(f"{a > 2}")
        return max(a, 2)
    '''
)


def _keys(tmp_path: Path, source: str) -> list[str]:
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    return [site.key for site in find_sites(tmp_path, "m.py")]


def test_sites_are_code_tokens_only(tmp_path: Path) -> None:
    # Line 3: `<` (col 9) -> `<=` and `>`; `1` (col 11) -> `2` and `0`; `and` (col 13) -> `or`; `not`
    # (col 17) dropped. Line 4 is a raise: its f-string is a message. Line 5: `max` (col 11) -> `min`,
    # `2` (col 18) -> `3`. The docstring and the comment give nothing.
    assert _keys(tmp_path, SOURCE) == [
        "m.py:3:9: < -> <=",
        "m.py:3:9: < -> >",
        "m.py:3:11: 1 -> 0",
        "m.py:3:11: 1 -> 2",
        "m.py:3:13: and -> or",
        "m.py:3:17: not -> ",
        "m.py:5:11: max -> min",
        "m.py:5:18: 2 -> 3",
    ]


def test_type_checking_blocks_and_annotations_are_left_alone(tmp_path: Path) -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    X = 1 + 2\ndef f(n: int = 0) -> bool:\n    return True\n"
    # Only the default `0` (line 4, col 15: -> 1) and `True` (line 5, col 11) are sites.
    assert _keys(tmp_path, source) == ["m.py:4:15: 0 -> 1", "m.py:5:11: True -> False"]


def test_loops_and_augmented_assignments(tmp_path: Path) -> None:
    source = "for i in x:\n    n += i\n    if i:\n        break\n    continue\n"
    assert _keys(tmp_path, source) == [
        "m.py:2:6: += -> -=",
        "m.py:4:8: break -> continue",
        "m.py:5:4: continue -> break",
    ]


def test_a_mutant_replaces_exactly_its_token() -> None:
    site = Site("m.py", 3, 13, 3, 16, "and", "or", "boolean")
    mutated = site.apply(SOURCE)
    assert mutated.splitlines()[2] == "    if a < 1 or not b:  # a comment: > is no site"
    assert mutated.splitlines()[:2] == SOURCE.splitlines()[:2]
    assert mutated.splitlines()[3:] == SOURCE.splitlines()[3:]


def test_columns_count_utf8_bytes_as_the_ast_does() -> None:
    source = 'x = "é" if a < b else 0\n'
    # "é" is two bytes in UTF-8: the AST puts `<` at byte 14, which is character 13.
    site = Site("m.py", 1, 14, 1, 15, "<", "<=", "compare")
    assert site.apply(source) == 'x = "é" if a <= b else 0\n'


def test_a_mutant_that_no_longer_parses_is_not_drawn() -> None:
    assert parses(Site("m.py", 3, 17, 3, 20, "not", "", "negation"), SOURCE)
    assert not parses(Site("m.py", 3, 13, 3, 16, "and", "+ +", "boolean"), SOURCE)


LINE = "if key in target or after is None or after not in target:"


@pytest.fixture
def entries(tmp_path: Path) -> Path:
    path = tmp_path / "equivalents.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            - path: m.py
              line: "{LINE}"
              original: or
              replacement: and
              column: 38
              why: only the second or
            - path: m.py
              line: "@dataclass(frozen=True)"
              original: "True"
              replacement: "False"
              why: frozen everywhere in m.py
            """
        ),
        encoding="utf-8",
    )
    return path


def test_an_entry_with_a_column_excuses_only_that_mutant(entries: Path) -> None:
    equivalents = load_equivalents(entries)
    indented = "    " + LINE  # the line is matched stripped; the column is the key's
    second = Site("m.py", 89, 38, 89, 40, "or", "and", "boolean")
    first = Site("m.py", 89, 21, 89, 23, "or", "and", "boolean")
    assert equivalence(equivalents, second, indented) == "only the second or"
    assert equivalence(equivalents, first, indented) is None


def test_an_entry_without_a_column_excuses_the_token_anywhere_on_the_line(entries: Path) -> None:
    equivalents = load_equivalents(entries)
    for col in (11, 27):
        site = Site("m.py", 7, col, 7, col + 4, "True", "False", "constant")
        assert equivalence(equivalents, site, "@dataclass(frozen=True)") == "frozen everywhere in m.py"
    other_file = Site("n.py", 7, 11, 7, 15, "True", "False", "constant")
    assert equivalence(equivalents, other_file, "@dataclass(frozen=True)") is None
    other_replacement = Site("m.py", 89, 38, 89, 40, "or", "or not", "boolean")
    assert equivalence(equivalents, other_replacement, LINE) is None


def test_module_names_and_own_test_files() -> None:
    assert module_name("gpushare/device_plugin/flags.py") == "gpushare.device_plugin.flags"
    assert module_name("policies/gpushare_policies/workloads.py") == "gpushare_policies.workloads"
    assert module_name("gpushare/verify/__init__.py") == "gpushare.verify"
    assert module_name("tests/test_plan.py") == "test_plan"
    assert own_test_names("gpushare.plan") == {"test_plan"}
    assert own_test_names("gpushare.stack.edit") == {"test_edit", "test_stack_edit", "test_edit_stack"}


def test_own_tests_first_then_direct_importers_then_by_distance_within_the_budget() -> None:
    # gpushare.a is imported by test_a (its own), by test_direct, and through gpushare.b by test_far.
    graph = {
        "test_a": frozenset({"gpushare.a"}),
        "test_direct": frozenset({"gpushare.a"}),
        "test_far": frozenset({"gpushare.b"}),
        "test_unrelated": frozenset({"gpushare.c"}),
        "gpushare.b": frozenset({"gpushare.a"}),
    }
    tests = {name: f"tests/{name}.py" for name in ("test_a", "test_direct", "test_far", "test_unrelated")}
    test_map = runner_map.TestMap(graph, tests, {})
    durations = {"tests/test_a.py": 30.0, "tests/test_direct.py": 10.0, "tests/test_far.py": 1.0}
    assert test_map.affected("gpushare.a", durations) == [
        "tests/test_a.py",
        "tests/test_direct.py",
        "tests/test_far.py",
    ]
    # A budget of 35 s: test_a (30) is always in; test_direct (10) would pass 35 and is skipped; test_far
    # (1) still fits.
    assert test_map.affected("gpushare.a", durations, budget=35) == ["tests/test_a.py", "tests/test_far.py"]


def test_engine_test_files_are_left_out_of_the_map(tmp_path: Path) -> None:
    """A copy of the project has no `.engine/bin`: files marked engine as a whole are not mapped (and the
    runs pass `-m "not engine"`), while a file marking one test only, or marked e2e, stays."""
    (tmp_path / "__main__.py").write_text("", encoding="utf-8")
    (tmp_path / "gpushare").mkdir()
    (tmp_path / "gpushare" / "a.py").write_text("X = 1\n", encoding="utf-8")
    tests = tmp_path / "tests"
    tests.mkdir()
    body = "from gpushare import a\n"
    (tests / "test_engine_a.py").write_text(f"import pytest\n{body}pytestmark = pytest.mark.engine\n")
    (tests / "test_e2e_a.py").write_text(f"import pytest\n{body}pytestmark = pytest.mark.e2e\n")
    (tests / "test_a.py").write_text(
        f"import pytest\n{body}\n@pytest.mark.engine\ndef test_one() -> None: ...\n", encoding="utf-8"
    )
    found = runner_map.build_test_map(tmp_path)
    assert sorted(found.tests.values()) == ["tests/test_a.py", "tests/test_e2e_a.py"]
