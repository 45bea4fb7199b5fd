"""Which test files can notice a change to a module, nearest first: the import graph of the project.

A test file is affected by module M when M is reachable from it through imports (`import`/`from ... import`
of the project's own modules, test helpers such as `test_policies` included) or through the two ways the
tests run code without importing it: the Pulumi program (`gpushare.offline.mock_run` runs `__main__.py`,
which imports `components`) and the policy pack's process (`gpushare.offline.pack_process` starts
`policies`), and
`python -m gpushare` subprocesses. Order: the module's own test file (`tests/test_<name>.py`, or for a
module of a wing `tests/test_<wing>_<name>.py` / `tests/test_<name>_<wing>.py`: `gpushare/mig/parted.py` ->
`test_mig_parted`, `gpushare/cli/advise.py` -> `test_advise_cli`), then the files that import M directly,
then the rest, each group fastest first (the baseline's durations).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("gpushare", "components", "policies", "bench")
PROGRAM = "__main__"  # the Pulumi program, __main__.py at the project's root
# Code that the tests start without importing it: (module, what it runs).
RUNS = (("gpushare.offline.mock_run", PROGRAM), ("gpushare.offline.pack_process", "policies.__main__"))
# A test file the baseline did not time (new since): assumed this many seconds.
UNTIMED = 5.0
# Modules a test reaches only through `gpushare.cli.main` (which imports every command module): a test that
# runs the command (its name as a string, `main(["verify", ...])`) ranks with the direct importers.
COMMAND_OF = {
    "gpushare.cli.catalog": "catalog",
    "gpushare.cli.tune": "tune",
    "gpushare.cli.plan": "plan",
    "gpushare.cli.render": "render",
    "gpushare.cli.check": "check",
    "gpushare.cli.measure": "measure",
    "gpushare.cli.verify": "verify",
    "gpushare.verify.reader": "verify",
    "gpushare.verify.expectations": "verify",
    "gpushare.verify.checks": "verify",
    "gpushare.verify.report": "verify",
    "gpushare.verify.objects": "verify",
    "gpushare.verify.node_checks": "verify",
    "gpushare.verify.plugin_checks": "verify",
    "gpushare.verify.workload_checks": "verify",
    "gpushare.cli.advise": "advise",
    "gpushare.advise.fleet": "advise",
    "gpushare.advise.pool_snippet": "advise",
    "gpushare.advise.layout_options": "advise",
    "gpushare.cli.validate": "validate",
    "gpushare.cli.config_manifests": "validate",
    "gpushare.input_files": "validate",
    "gpushare.tuning": "tune",
    "gpushare.plan": "plan",
}
CLI_SUBPROCESS = ('"-m", "gpushare"', "'-m', 'gpushare'")


def module_name(relative: str) -> str:
    """`gpushare/device_plugin/flags.py` -> `gpushare.device_plugin.flags`; tests are named by their stem."""
    parts = relative.removesuffix(".py").split("/")
    if parts[0] == "tests":
        return parts[-1]
    if parts[:2] == ["policies", "gpushare_policies"]:
        parts = parts[1:]  # the pack's rules are imported from the pack directory: `gpushare_policies.x`
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def own_test_names(module: str) -> set[str]:
    """The names a module's own test file may have: `test_<name>`, and inside a wing (a package below
    gpushare) `test_<wing>_<name>` and `test_<name>_<wing>`."""
    parts = module.split(".")
    names = {f"test_{parts[-1]}"}
    if len(parts) >= 3 and parts[0] == "gpushare":
        wing = parts[-2]
        names |= {f"test_{wing}_{parts[-1]}", f"test_{parts[-1]}_{wing}"}
    return names


def _project_files(project: Path) -> dict[str, Path]:
    files = {PROGRAM: project / "__main__.py"}
    for package in (*PACKAGES, "tests"):
        for path in sorted((project / package).rglob("*.py")):
            if "venv" in path.parts or "fixtures" in path.parts:
                continue
            files[module_name(path.relative_to(project).as_posix())] = path
    return files


def _imports(name: str, path: Path, modules: Iterable[str]) -> set[str]:
    known = set(modules)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            # `import gpushare.plan` imports the package too.
            parts = target.split(".")
            found.update(
                ".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known
            )
    if any(marker in source for marker in CLI_SUBPROCESS):
        found.add("gpushare.__main__")
    found.update(run for runner, run in RUNS if runner == name)
    found.discard(name)
    return found


@dataclass(frozen=True)
class TestMap:
    graph: Mapping[str, frozenset[str]]  # module -> the project modules it imports
    tests: Mapping[str, str]  # test module name -> its path relative to the project
    strings: Mapping[str, frozenset[str]]  # test module name -> the string literals it holds

    def affected(self, module: str, durations: Mapping[str, float], budget: float | None = None) -> list[str]:
        """The test files that reach `module`: its own test file, then the files importing it directly, then
        the rest by import distance; fastest first within each. `budget`: stop adding files once their
        baseline seconds reach it (the first file is always in)."""
        own = own_test_names(module)
        ranked = []
        for test, relative in self.tests.items():
            distance = self._distance(test, module)
            if distance is None:
                continue
            runs_command = COMMAND_OF.get(module) in self.strings.get(test, frozenset())
            group = 0 if test in own else 1 if distance == 1 or runs_command else 2
            ranked.append((group, distance if group == 2 else 0, durations.get(relative, UNTIMED), relative))
        chosen: list[str] = []
        spent = 0.0
        for _, _, seconds, relative in sorted(ranked):
            if chosen and budget is not None and spent + seconds > budget:
                continue  # a cheaper one further down may still fit
            chosen.append(relative)
            spent += seconds
        return chosen

    def _distance(self, start: str, target: str) -> int | None:
        """Import hops from `start` to `target`, None when it does not reach it."""
        seen = {start: 0}
        queue = deque([start])
        while queue:
            current = queue.popleft()
            if current == target:
                return seen[current]
            for following in self.graph.get(current, ()):
                if following not in seen:
                    seen[following] = seen[current] + 1
                    queue.append(following)
        return None


ENGINE_MARK = "engine"


def needs_the_engine(path: Path) -> bool:
    """A test file marked `pytestmark = pytest.mark.engine` as a whole: it needs `make engine`'s tools
    (the Pulumi CLI, kube-apiserver), which a copy of the project does not have; the runner leaves it out
    of the map as `make test` does (`-m "not e2e and not engine"` there; e2e tests it keeps)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == ENGINE_MARK
        ):
            return True
    return False


def build_test_map(project: Path) -> TestMap:
    files = _project_files(project)
    graph = {name: frozenset(_imports(name, path, files)) for name, path in files.items()}
    tests = {
        name: path.relative_to(project).as_posix()
        for name, path in files.items()
        if path.parent.name == "tests" and path.name.startswith("test_") and not needs_the_engine(path)
    }
    strings = {
        name: frozenset(
            node.value
            for node in ast.walk(ast.parse(files[name].read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )
        for name in tests
    }
    return TestMap(graph, tests, strings)
