"""The README is a front page that holds: two screens at most, the two first-screen commands exactly as the
brief gives them, and every relative link in it and in docs/*.md resolving to a file (and heading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROJECT_DIR, STACKS

from gpushare.offline.render import RenderResult

PAGES = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
# Two terminal screens of ~50 lines each.
FRONT_PAGE_MAX_LINES = 100

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces -> `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {github_anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"^#{1,6} ", line)}


def relative_links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    return [target for target in _LINK.findall(text) if not re.match(r"^[a-z]+:", target)]


def test_github_anchor() -> None:
    assert github_anchor(" Helm releases, rendered") == "helm-releases-rendered"
    assert github_anchor("The fallback key `any`") == "the-fallback-key-any"
    assert github_anchor("TKE's own device plugin") == "tkes-own-device-plugin"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(PROJECT_DIR)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        assert resolved.exists(), f"{page.name}: {target}: no such file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name}: {target}: no such heading"


def test_the_front_page_fits_on_two_screens_and_links_every_docs_page() -> None:
    readme = PROJECT_DIR / "README.md"
    lines = readme.read_text().splitlines()
    assert len(lines) <= FRONT_PAGE_MAX_LINES
    linked = {(readme.parent / t.partition("#")[0]).resolve() for t in relative_links(readme)}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert unlinked == []


def test_the_first_screen_gives_exactly_the_two_commands() -> None:
    text = (PROJECT_DIR / "README.md").read_text()
    first_block = _FENCE.search(text)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(0).splitlines()[1:-1]]
    assert commands == ["make render STACK=prod", "make test"]
    assert text.index(first_block.group(0)) < len("\n".join(text.splitlines()[:25]))  # on the first screen


def test_the_front_pages_figures_are_what_the_render_prints() -> None:
    """The capacity figures on the first screen, against the plan `make render STACK=prod` prints."""
    from gpushare.plan import build_plan, capacity_json
    from gpushare.stack.loading import load_stack

    capacity = capacity_json(build_plan(load_stack(PROJECT_DIR, "prod")))
    pools = {p["name"]: p for p in capacity["pools"]}  # type: ignore[attr-defined]
    figures = (
        f"{capacity['slotsBefore']} whole-GPU slots become {capacity['totalSlots']}: L20 x "
        f"{pools['l20']['replicas']} at {pools['l20']['utilization'] * 100:.1f} % of its memory, T4 x "
        f"{pools['t4']['replicas']} at {pools['t4']['utilization'] * 100:.1f} %"
    )
    assert figures == "2 whole-GPU slots become 11: L20 x 8 at 80.2 % of its memory, T4 x 3 at 86.0 %"
    assert figures in " ".join((PROJECT_DIR / "README.md").read_text().split())


@pytest.mark.parametrize("stack", STACKS)
def test_every_manifests_first_line_says_how_to_apply_it(
    stack: str, rendered: dict[str, RenderResult]
) -> None:
    """What docs/apply-by-hand.md promises, on every file every stack's render writes to manifests/."""
    manifests = rendered[stack].out_dir / "manifests"
    values_files = sorted(p.name for p in manifests.glob("helmrelease_*.values.yaml"))
    for path in sorted(manifests.iterdir()):
        first = path.read_text().splitlines()[0]
        name = path.name
        if name in values_files:
            assert first.startswith("# apply: helm upgrade --install "), name
            assert first.endswith(f" -f {name} (chart values, not an object)"), name
        elif first.startswith("# chart-rendered: "):
            (release,) = [
                v for v in values_files if f"applied by its Helm release, {v}, not by hand)" in first
            ]
            assert release, name
        elif "patch_" in name:
            assert first == (
                "# server-side apply patch: kubectl apply --server-side --force-conflicts "
                f"--field-manager=gpushare-tke-device-plugin -f {name}"
            )
        else:
            assert first == f"# apply: kubectl apply --server-side -f {name}"
