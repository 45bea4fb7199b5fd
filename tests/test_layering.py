"""The layers of the tool (BRIEF: each imports only those below): the domain modules of `gpushare` import
neither the offline runner (`gpushare.offline`) nor the command line (`gpushare.cli`, `gpushare/*_cli.py`,
`gpushare.__main__`), by an import statement or by a module name in a string (importlib, __import__); the
offline runner does not import the command line either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

PACKAGE = PROJECT_DIR / "gpushare"
CLI_MODULES = {"gpushare.__main__", "gpushare.cli"} | {f"gpushare.{p.stem}" for p in PACKAGE.glob("*_cli.py")}
OFFLINE = "gpushare.offline"


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_DIR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def referenced_modules(path: Path) -> set[str]:
    """Modules `path` imports, and every string in it that spells a gpushare module."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.strip()
            if value.startswith("gpushare.") and " " not in value:
                found.add(value)
    return found


def is_under(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def _modules(predicate: str) -> list[Path]:
    paths = sorted(PACKAGE.rglob("*.py"))
    if predicate == "domain":
        return [p for p in paths if not any(is_under(module_name(p), m) for m in (*CLI_MODULES, OFFLINE))]
    return [p for p in paths if is_under(module_name(p), OFFLINE)]


@pytest.mark.parametrize("path", _modules("domain"), ids=module_name)
def test_domain_modules_import_neither_the_cli_nor_the_offline_runner(path: Path) -> None:
    upward = {
        name for name in referenced_modules(path) if any(is_under(name, m) for m in (*CLI_MODULES, OFFLINE))
    }
    assert upward == set(), f"{module_name(path)} reaches up to {sorted(upward)}"


@pytest.mark.parametrize("path", _modules("offline"), ids=module_name)
def test_the_offline_runner_does_not_import_the_cli(path: Path) -> None:
    upward = {name for name in referenced_modules(path) if any(is_under(name, m) for m in CLI_MODULES)}
    assert upward == set(), f"{module_name(path)} reaches up to {sorted(upward)}"


def test_the_checks_see_an_upward_import_and_one_by_name(tmp_path: Path) -> None:
    # The detector itself: both of the shapes this issue removed are caught.
    by_import = tmp_path / "a.py"
    by_import.write_text("from gpushare.cli import warn_config_size\n")
    by_name = tmp_path / "b.py"
    by_name.write_text('import importlib\nimportlib.import_module("gpushare.offline.render")\n')
    assert "gpushare.cli" in referenced_modules(by_import)
    assert "gpushare.offline.render" in referenced_modules(by_name)
