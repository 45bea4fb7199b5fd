"""gpushare.offline.chart_sources on its own: what a `ChartSources` built without `download` does.

`from_environment` (what `render` and `check` use) downloads unless told not to; the dataclass's own
default must agree, so that a caller building `ChartSources(cache_dir=...)` gets the same order of
sources (pinned, cache, repository). No network: the release names no repository, so the download step
is reached and refused before anything is fetched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare.offline.chart_sources import ChartRequest, ChartSourceError, ChartSources, FoundChart


def test_sources_built_without_download_go_on_to_the_repository(tmp_path: Path) -> None:
    request = ChartRequest("kube-system/plugin", "nvidia-device-plugin", "0.17.1", None)
    entry = tmp_path / "nvidia-device-plugin-0.17.1"  # `<cache>/<chart>-<version>`
    with pytest.raises(ChartSourceError) as caught:
        ChartSources(cache_dir=tmp_path).locate(request)
    # Downloads on: the step after the cache is the repository, which this release does not name
    # (downloads off would say `downloads off` instead of `no repository to download from`).
    assert str(caught.value) == (
        "Helm release kube-system/plugin: chart nvidia-device-plugin 0.17.1: no chart source "
        f"(looked in: cache {entry}; no repository to download from). Give it with --chart-dir DIR "
        f"(make: CHART_DIRS=DIR; or GPUSHARE_CHART_DIRS), unpack it as {entry}, or name the release's "
        "chart repository so that it can be downloaded"
    )


def chart_dir(path: Path, version: str) -> Path:
    path.mkdir(parents=True)
    (path / "Chart.yaml").write_text(f"apiVersion: v2\nname: nvidia-device-plugin\nversion: {version}\n")
    return path


def test_a_pinned_directory_is_a_chart_itself_or_holds_charts_one_level_down(tmp_path: Path) -> None:
    request = ChartRequest("kube-system/plugin", "nvidia-device-plugin", "0.17.1", None)
    itself = chart_dir(tmp_path / "itself", "0.17.1")
    assert ChartSources((itself,), None, download=False).locate(request) == FoundChart(itself, "pinned")
    holder = tmp_path / "charts"
    chart_dir(holder / "nvidia-device-plugin-0.17.0", "0.17.0")  # another version never stands in
    wanted = chart_dir(holder / "nvidia-device-plugin-0.17.1", "0.17.1")
    assert ChartSources((holder,), None, download=False).locate(request) == FoundChart(wanted, "pinned")
