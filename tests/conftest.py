from __future__ import annotations

import contextlib
import copy
import os
import signal
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.offline.chart_sources import ChartSourceError
from gpushare.offline.render import RenderResult, render_stack
from gpushare.stack import fields as stack_fields

PROJECT_DIR = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT_DIR / "tests" / "fixtures"
# The team's reference tree (../shared, or $GPUSHARE_SHARED_DIR): the pinned Helm charts, and NVIDIA's own
# files the parity tests compare against.
SHARED_DIR = Path(os.environ.get("GPUSHARE_SHARED_DIR") or PROJECT_DIR.parent / "shared")
# The pinned Helm charts in it (CI and this workplace); a checkout without them skips the tests that render
# charts (see `pinned_charts`).
PINNED_CHARTS = SHARED_DIR / "charts"
# Stacks that exist only for tests: HELM_MIG is the device-plugin chart with a time-sliced H20 MIG pool
# (pre-start script), the mode combination no repo stack uses since staging moved to the GPU Operator.
FIXTURE_STACKS = FIXTURES / "stacks"
HELM_MIG = "helm-mig"


def stack_file(stack: str) -> Path:
    """`Pulumi.<stack>.yaml` of the project, else of the test fixtures."""
    path = PROJECT_DIR / f"Pulumi.{stack}.yaml"
    return path if path.is_file() else FIXTURE_STACKS / f"Pulumi.{stack}.yaml"


# Every stack file of the project, by stack name (what `make ci-stacks` renders and checks).
STACKS = sorted(
    path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in PROJECT_DIR.glob("Pulumi.*.yaml")
)


def device_plugin_mode(stack: str) -> str | None:
    """`gpushare:sharing.devicePlugin.mode` as the stack file states it."""
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    mode = (((document.get("config") or {}).get("gpushare:sharing") or {}).get("devicePlugin") or {}).get(
        "mode"
    )
    return str(mode) if mode else None


@pytest.fixture(scope="session", autouse=True)
def chart_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every render in the tests (subprocesses included) finds charts in PINNED_CHARTS only: never the
    network (downloads off) and never the user's own cache (an empty one of its own)."""
    with pytest.MonkeyPatch.context() as patch:
        if PINNED_CHARTS.is_dir():
            patch.setenv("GPUSHARE_CHART_DIRS", str(PINNED_CHARTS))
        else:
            patch.delenv("GPUSHARE_CHART_DIRS", raising=False)
        patch.setenv("GPUSHARE_CHART_DOWNLOAD", "0")
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


def pinned_charts() -> Path:
    """PINNED_CHARTS, or skip: without them no Helm release can be rendered offline."""
    if not PINNED_CHARTS.is_dir():
        pytest.skip(f"pinned Helm charts not found at {PINNED_CHARTS} (shared/charts is absent)")
    return PINNED_CHARTS


def _skip_without_pinned_charts() -> Iterator[None]:
    try:
        yield
    except ChartSourceError as err:
        if PINNED_CHARTS.is_dir():
            raise
        pytest.skip(f"{err} (the pinned charts, {PINNED_CHARTS}, are absent)")


# A checkout without shared/charts beside it cannot render a Helm release offline (and the tests never
# download): a test or fixture that needs one is skipped, naming the chart, instead of failing.
pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_skip_without_pinned_charts)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_skip_without_pinned_charts)


class _Renders(dict[str, RenderResult]):
    """Stacks rendered on first use, once per session."""

    def __init__(self, out: Path) -> None:
        super().__init__()
        self.out = out

    def __missing__(self, stack: str) -> RenderResult:
        result = self[stack] = render_stack(PROJECT_DIR, stack, self.out / stack)
        return result


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory, chart_environment: None) -> dict[str, RenderResult]:
    """Every stack of the repo, rendered once for the session (charts from PINNED_CHARTS)."""
    return _Renders(tmp_path_factory.mktemp("renders"))


@pytest.fixture
def project_dir() -> Path:
    return PROJECT_DIR


@pytest.fixture
def stack_document() -> Callable[[str], dict[str, Any]]:
    """A deep copy of a stack file in the repo, to break on purpose."""

    def load(stack: str) -> dict[str, Any]:
        document: dict[str, Any] = yaml.safe_load(stack_file(stack).read_text())
        return copy.deepcopy(document)

    return load


# The least Pulumi.yaml a command accepts as a project (`pulumi` needs name and runtime): every command
# that takes --dir refuses a directory without one (exit 2), so a test's stack directory holds one.
MINIMAL_PROJECT_FILE = "name: gpushare\nruntime: python\n"


def write_project_file(directory: Path) -> Path:
    """A minimal Pulumi.yaml in `directory` (kept when one is there), so it is a project for --dir."""
    path = directory / "Pulumi.yaml"
    if not path.exists():
        path.write_text(MINIMAL_PROJECT_FILE)
    return path


@pytest.fixture
def write_stack(tmp_path: Path) -> Callable[[dict[str, Any], str], Path]:
    def write(document: dict[str, Any], stack: str = "test") -> Path:
        write_project_file(tmp_path)
        path = tmp_path / f"Pulumi.{stack}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    return write


@pytest.fixture
def fixed_today(monkeypatch: pytest.MonkeyPatch) -> Callable[[date], None]:
    """Fix "today" for the stack loader and the policy pack alike: both ask
    `gpushare.stack.fields.latest_date_on_earth` (the calendar day in UTC+14)."""

    def fix(day: date) -> None:
        monkeypatch.setattr(stack_fields, "latest_date_on_earth", lambda: day)

    return fix


# --------------------------------------------------------------------------------------------------------
# Parity tests: NVIDIA's own files in the reference tree (SHARED_DIR, above).

# Set where the reference tree is absent by design (the GitHub workflow: it is not part of the repo).
NO_SHARED_VARIABLE = "GPUSHARE_NO_SHARED"


def shared_file(relative: str) -> Path:
    """`relative` inside the reference tree ($GPUSHARE_SHARED_DIR, default ../shared), for a parity test.

    Missing: in CI (CI=true) the test fails, since a parity test that silently skips proves nothing,
    unless GPUSHARE_NO_SHARED=1 says the CI has no reference tree by design; outside CI it is skipped,
    naming the path."""
    path = SHARED_DIR / relative
    if path.exists():
        return path
    if os.environ.get(NO_SHARED_VARIABLE) == "1":
        pytest.skip(f"{path} is absent and {NO_SHARED_VARIABLE}=1 says so (no reference tree here)")
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(
            f"{path} is missing: this parity test needs the reference tree in CI (set GPUSHARE_SHARED_DIR "
            f"to where it is, or {NO_SHARED_VARIABLE}=1 where it is absent by design)",
            pytrace=False,
        )
    pytest.skip(f"{path} is missing (the reference tree; GPUSHARE_SHARED_DIR says where it is)")


HANG_GUARD_SECONDS = 120
# For files of pure computation whose tests each take milliseconds (the YAML bounds' scans): a loop that
# stops advancing fails in seconds, well inside the mutation runner's per-mutant timeout (60 s at least),
# so a hanging mutant is reported as the test that hung, not as a timeout.
QUICK_HANG_GUARD_SECONDS = 10


@contextlib.contextmanager
def fail_after(seconds: int) -> Iterator[None]:
    """Raise AssertionError in the main thread if the block is still running after `seconds` (SIGALRM:
    it interrupts a pure-Python loop between bytecodes)."""

    def fail(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """A test that stops making progress fails after HANG_GUARD_SECONDS instead of holding the suite (a
    guard against hangs, not a timing assertion)."""
    with fail_after(HANG_GUARD_SECONDS):
        yield


@pytest.fixture
def quick_hang_guard() -> Iterator[None]:
    """hang_guard with QUICK_HANG_GUARD_SECONDS, for tests of millisecond computations."""
    with fail_after(QUICK_HANG_GUARD_SECONDS):
        yield
