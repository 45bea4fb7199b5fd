"""The layers of the tool (BRIEF: each imports only those below; docs/architecture.md draws them):

- the domain: the core modules at `gpushare/`'s top level and the domain wings `gpushare.stack`,
  `gpushare.mig` and `gpushare.device_plugin` (no Pulumi); they import no feature wing and no CLI;
- the feature wings `gpushare.advise`, `gpushare.verify` and `gpushare.offline`: each imports the domain
  (and itself), never another feature wing, never the CLI;
- the command line `gpushare.cli` (and `gpushare.__main__`) on top: it may import anything; nothing else
  imports it.

"Imports" means an import statement or a module name in a string (what importlib or __import__ would
load); and no module of the tool loads a module of the project through importlib at all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import PROJECT_DIR

PACKAGE = PROJECT_DIR / "gpushare"
CLI = ("gpushare.cli", "gpushare.__main__")
DOMAIN_WINGS = ("gpushare.stack", "gpushare.mig", "gpushare.device_plugin")
FEATURE_WINGS = ("gpushare.advise", "gpushare.verify", "gpushare.offline")


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


def layer_of(module: str) -> str:
    """`cli`, a feature wing's name (`gpushare.verify`), or `domain`."""
    if any(is_under(module, cli) for cli in CLI):
        return "cli"
    return next((wing for wing in FEATURE_WINGS if is_under(module, wing)), "domain")


MODULES = sorted(PACKAGE.rglob("*.py"))
BELOW_THE_CLI = [path for path in MODULES if layer_of(module_name(path)) != "cli"]


@pytest.mark.parametrize("path", BELOW_THE_CLI, ids=module_name)
def test_nothing_below_the_cli_imports_it(path: Path) -> None:
    upward = {name for name in referenced_modules(path) if layer_of(name) == "cli"}
    assert upward == set(), f"{module_name(path)} reaches up to {sorted(upward)}"


@pytest.mark.parametrize("path", BELOW_THE_CLI, ids=module_name)
def test_the_domain_imports_no_feature_wing_and_a_wing_no_other(path: Path) -> None:
    own = layer_of(module_name(path))
    # Only project modules count (`gpushare.x`), and a module's own wing is its own business.
    referenced = {name for name in referenced_modules(path) if is_under(name, "gpushare")}
    sideways = {name for name in referenced if layer_of(name) not in ("domain", own)}
    assert sideways == set(), f"{module_name(path)} ({own}) reaches into {sorted(sideways)}"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_loads_a_project_module_through_importlib(path: Path) -> None:
    # find_spec of a third-party package (the schemas kubernetes-validate ships) and importlib.resources
    # (the MIG wing's node files) read; they load no project module by name.
    calls = [
        node
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
        in ("import_module", "__import__", "find_spec", "spec_from_file_location", "module_from_spec")
    ]
    named = [ast.unparse(call) for call in calls]
    assert all(
        isinstance(call.args[0], ast.Constant) and not str(call.args[0].value).startswith("gpushare")
        for call in calls
        if call.args
    ), named
    assert all(call.args for call in calls), named


def test_every_wing_is_a_known_layer() -> None:
    # A new folder under gpushare/ has to be placed in one of the lists above (and in docs/architecture.md).
    wings = {module_name(p.parent) for p in PACKAGE.glob("*/__init__.py")}
    assert wings == {"gpushare.cli", *DOMAIN_WINGS, *FEATURE_WINGS}


def test_the_checks_see_an_upward_import_and_one_by_name(tmp_path: Path) -> None:
    # The detector itself: both of the shapes issue #25 removed are caught, and a wing reaching into
    # another.
    by_import = tmp_path / "a.py"
    by_import.write_text("from gpushare.cli.config_size import warn_config_size\n")
    by_name = tmp_path / "b.py"
    by_name.write_text('import importlib\nimportlib.import_module("gpushare.offline.render")\n')
    assert layer_of(next(n for n in referenced_modules(by_import) if n.startswith("gpushare.cli"))) == "cli"
    assert "gpushare.offline.render" in referenced_modules(by_name)
    assert layer_of("gpushare.verify.checks") == "gpushare.verify"
    assert layer_of("gpushare.stack.model") == layer_of("gpushare.mig.setup") == "domain"
