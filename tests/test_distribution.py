"""The `gpushare` distribution as installed (pyproject.toml; `make` installs it editable): its console
script, and a declared dependency for every third-party module its code imports. CI's `make dist-check`
builds the wheel itself and installs it in a fresh virtualenv (.ci/dist-check)."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata

from conftest import PROJECT_DIR

PACKAGE = PROJECT_DIR / "gpushare"


def test_the_console_script_is_the_module_entry_point() -> None:
    (script,) = [e for e in metadata.entry_points(group="console_scripts") if e.name == "gpushare"]
    assert script.value == "gpushare.__main__:run"
    assert metadata.distribution("gpushare").version == "0.1.0"


def imported_top_level_modules() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"gpushare", "__future__"}


def distribution_name(requirement: str) -> str:
    return re.split(r"[=<>!~ ;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_third_party_import_is_a_declared_dependency() -> None:
    requires = metadata.requires("gpushare") or []
    declared = {distribution_name(r) for r in requires}
    providers = metadata.packages_distributions()
    missing = {
        module: providers.get(module)
        for module in sorted(imported_top_level_modules())
        if not {d.lower().replace("_", "-") for d in providers.get(module, [])} & declared
    }
    # grpc and google.protobuf come with pulumi (its own pins), as the SDK's runtime: not declared twice.
    assert sorted(missing) == ["google", "grpc"], missing


def test_dependencies_are_pinned() -> None:
    requires = metadata.requires("gpushare") or []
    assert (
        requires
        and [r for r in requires if not re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][0-9A-Za-z.]*", r)] == []
    )
