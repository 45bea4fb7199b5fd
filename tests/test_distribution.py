"""The `gpushare` distribution as installed (pyproject.toml; `make` installs it editable): its console
script, and a declared dependency for every third-party module its code imports. CI's `make dist-check`
builds the wheel itself and installs it in a fresh virtualenv (.ci/dist-check)."""

from __future__ import annotations

import ast
import re
import subprocess
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
    declared = {distribution_name(r) for r in requires}  # the core's and every extra's
    providers = metadata.packages_distributions()
    missing = {
        module: providers.get(module)
        for module in sorted(imported_top_level_modules())
        if not {d.lower().replace("_", "-") for d in providers.get(module, [])} & declared
    }
    # grpc and google.protobuf come with pulumi (its own pins), as the SDK's runtime: not declared twice.
    assert sorted(missing) == ["google", "grpc"], missing


def _requirement(requirement: str) -> str:
    return requirement.split(";", 1)[0].strip()


def test_dependencies_are_pinned() -> None:
    requires = [_requirement(r) for r in metadata.requires("gpushare") or []]
    own = [r for r in requires if distribution_name(r) == "gpushare"]  # `all`: the other extras
    assert own == ["gpushare[offline,program,verify]"] or own == ["gpushare[program,offline,verify]"]
    pins = [r for r in requires if r not in own]
    assert pins and [r for r in pins if not re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][0-9A-Za-z.]*", r)] == []


def test_the_core_is_what_the_policy_pack_imports() -> None:
    """`pip install gpushare` (the pack's requirements.txt) brings pydantic and PyYAML, nothing heavy;
    render/check, verify and the program are extras."""
    core = sorted(r for r in metadata.requires("gpushare") or [] if ";" not in r)
    assert core == ["PyYAML==6.0.3", "pydantic==2.14.3"]
    extras = metadata.metadata("gpushare").get_all("Provides-Extra")
    assert sorted(extras or []) == ["all", "offline", "program", "verify"]


# What the pack's own environment lacks (policies/requirements.txt: gpushare's core, pulumi, pulumi-policy,
# pydantic, PyYAML): importing the rules must reach none of them.
HEAVY = (
    "kubernetes",
    "pulumi_kubernetes",
    "tencentcloud_iac_pulumi",
    "kubernetes_validate",
    "jsonschema",
    "referencing",
    "helm",
    "ruamel",
    "prometheus_client",
    "urllib3",
)


def test_the_policy_rules_import_nothing_from_the_extras() -> None:
    blocker = (
        "import sys\n"
        f"HEAVY = {HEAVY!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in HEAVY:\n"
        "            raise ImportError(f'{name} is not in the pack environment')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import gpushare_policies.rules\n"
        "print(len(gpushare_policies.rules.POLICIES))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker],
        cwd=PROJECT_DIR / "policies",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_the_packs_pins_are_the_distributions() -> None:
    """requirements-dev.txt does not include policies/requirements.txt (its `gpushare==0.1.0` would be
    looked up on PyPI, where another project owns the name): the pack's other pins must then be the same
    versions the distribution pins, so the tests run the pack on what its own venv gets."""
    pack = [
        line.strip()
        for line in (PROJECT_DIR / "policies" / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    pinned = {distribution_name(r): r for r in (_requirement(r) for r in metadata.requires("gpushare") or [])}
    others = [r for r in pack if distribution_name(r) != "gpushare"]
    assert {distribution_name(r) for r in others} == {"pulumi", "pulumi-policy", "pydantic", "pyyaml"}
    assert [r for r in others if pinned.get(distribution_name(r), "").lower() != r.lower()] == []
    dev = (PROJECT_DIR / "requirements-dev.txt").read_text()
    assert "-r policies/requirements.txt" not in [line.strip() for line in dev.splitlines()]
