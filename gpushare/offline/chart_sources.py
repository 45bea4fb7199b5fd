"""Where the offline render finds the Helm chart of a release: pinned chart directories, the user's cache,
then the chart's repository.

A release names a chart, an exact version and a repository. The chart is looked for, in this order:

1. Pinned chart directories: each `--chart-dir DIR` given on the command line, then each directory of
   `GPUSHARE_CHART_DIRS` (`os.pathsep`-separated). A DIR is a chart itself or holds chart directories one
   level down (`../shared/charts/nvidia-device-plugin-0.17.1/`, as the Makefile passes it in CI).
2. The user's cache: `$XDG_CACHE_HOME/gpushare/charts/<chart>-<version>/` (`~/.cache` when unset).
3. The chart's repository, unless downloads are off (`--no-download`, or `GPUSHARE_CHART_DOWNLOAD=0`):
   Helm's own `pull` (helm_python) fetches `<chart>` at `<version>` from the repository's index (or an
   `oci://` reference) and unpacks it into the cache, so the next render is offline.

A directory counts only if its `Chart.yaml` names the release's chart and exactly its version: a chart
directory of another version never stands in for the pinned one. With no source, `ChartSourceError`
says in one line which release, chart and version, and every place that was looked in.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

from gpushare.errors import EXIT_USAGE, GpushareError

__all__ = [
    "CHART_DIRS_ENV",
    "CHART_DOWNLOAD_ENV",
    "ChartRequest",
    "ChartSourceError",
    "ChartSources",
    "FoundChart",
    "chart_identity",
]

CHART_DIRS_ENV: Final = "GPUSHARE_CHART_DIRS"
CHART_DOWNLOAD_ENV: Final = "GPUSHARE_CHART_DOWNLOAD"
_DOWNLOAD_OFF: Final = frozenset({"0", "false", "no", "off"})
# What a chart name or version may look like to become a cache directory name (`..` or `/` never do).
_CACHE_SAFE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
CHART_FILE: Final = "Chart.yaml"


class ChartSourceError(GpushareError):
    """No pinned directory, cache entry or repository gave the release's chart at its version: an input
    that cannot be read, exit 2 (errors.py's convention), not a finding about the stack."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class ChartRequest:
    """What a Helm release asks for."""

    release: str
    """How the release is named in messages: `<namespace>/<name>`."""
    chart: str
    """As the Release gives it: a name, or an `oci://` reference."""
    version: str | None
    repository: str | None

    @property
    def chart_name(self) -> str:
        # `oci://registry/nvidia/gpu-operator` and `nvidia/gpu-operator` name the chart `gpu-operator`;
        # an archive `.../nvidia-device-plugin-0.17.1.tgz` names `nvidia-device-plugin`.
        name = self.chart.rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(".tgz"):
            name = name.removesuffix(".tgz").removesuffix(f"-{self.version}")
        return name

    def describe(self) -> str:
        return f"Helm release {self.release}: chart {self.chart_name} {self.version or '(no version)'}"


@dataclass(frozen=True)
class FoundChart:
    path: Path
    origin: str
    """`pinned`, `cache` or `downloaded`."""


def chart_identity(directory: Path) -> tuple[str, str] | None:
    """(name, version) from a chart directory's `Chart.yaml`; None if it has none or it is unreadable."""
    try:
        metadata = yaml.safe_load((directory / CHART_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(metadata, dict) or "name" not in metadata or "version" not in metadata:
        return None
    return str(metadata["name"]), str(metadata["version"])


def _candidates(directory: Path) -> Iterable[Path]:
    if (directory / CHART_FILE).is_file():
        yield directory
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return
    for child in children:
        if (child / CHART_FILE).is_file():
            yield child


def _default_cache(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpushare" / "charts"


@dataclass(frozen=True)
class ChartSources:
    pinned_dirs: tuple[Path, ...] = ()
    cache_dir: Path | None = None
    download: bool = True

    @classmethod
    def from_environment(
        cls,
        chart_dirs: Sequence[str | Path] = (),
        *,
        download: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> ChartSources:
        """`chart_dirs` (the command line's `--chart-dir`) first, then `GPUSHARE_CHART_DIRS`; the cache
        under `XDG_CACHE_HOME`; downloads unless `download` is False or `GPUSHARE_CHART_DOWNLOAD=0`."""
        environ = os.environ if environ is None else environ
        from_env = [part for part in environ.get(CHART_DIRS_ENV, "").split(os.pathsep) if part]
        download_setting = environ.get(CHART_DOWNLOAD_ENV, "").strip().lower()
        return cls(
            pinned_dirs=tuple(Path(d) for d in (*chart_dirs, *from_env)),
            cache_dir=_default_cache(environ),
            download=download and download_setting not in _DOWNLOAD_OFF,
        )

    def cache_entry(self, request: ChartRequest) -> Path | None:
        """`<cache>/<chart>-<version>`; None without a cache, or for a name or version that is no plain
        file name (it would point outside the cache)."""
        if self.cache_dir is None or not request.version:
            return None
        name = f"{request.chart_name}-{request.version}"
        if not _CACHE_SAFE.match(name) or ".." in name:
            return None
        return self.cache_dir / name

    def locate(self, request: ChartRequest) -> FoundChart:
        """The chart directory for `request` (see the module docstring for the order)."""
        if not request.version:
            raise ChartSourceError(
                f"{request.describe()}: the release pins no chart version, so there is no chart to render "
                "(pin `version`)"
            )
        wanted = (request.chart_name, request.version)
        for directory in self.pinned_dirs:
            for candidate in _candidates(directory):
                if chart_identity(candidate) == wanted:
                    return FoundChart(candidate, "pinned")
        entry = self.cache_entry(request)
        if entry is not None and chart_identity(entry) == wanted:
            return FoundChart(entry, "cache")
        looked = [f"chart directories {', '.join(map(str, self.pinned_dirs))}" if self.pinned_dirs else None]
        looked.append(f"cache {entry}" if entry is not None else None)
        if not self.download:
            looked.append("downloads off")
            raise _no_source(request, looked, entry)
        if entry is None:
            looked.append("no cache entry to download into")
            raise _no_source(request, looked, entry)
        if not (request.repository or request.chart.startswith("oci://")):
            looked.append("no repository to download from")
            raise _no_source(request, looked, entry)
        try:
            return FoundChart(_download(request, entry), "downloaded")
        except ChartSourceError as err:
            looked.append(f"download from {request.repository or request.chart} failed: {err.message}")
            raise _no_source(request, looked, entry) from None


def _looked(places: Sequence[str | None]) -> str:
    return "looked in: " + "; ".join(p for p in places if p)


def _no_source(request: ChartRequest, looked: Sequence[str | None], entry: Path | None) -> ChartSourceError:
    """Where it looked, then the ways to give the chart (the line a user without the pinned charts meets)."""
    where = f"{request.chart_name}-{request.version}/"
    cache = f"unpack it as {entry}" if entry is not None else f"set XDG_CACHE_HOME and unpack it as {where}"
    origin = request.repository or (request.chart if request.chart.startswith("oci://") else None)
    download = (
        f"allow the download from {origin} (network; not with --no-download or GPUSHARE_CHART_DOWNLOAD=0)"
        if origin
        else "name the release's chart repository so that it can be downloaded"
    )
    return ChartSourceError(
        f"{request.describe()}: no chart source ({_looked(looked)}). Give it with --chart-dir DIR "
        f"(make: CHART_DIRS=DIR; or GPUSHARE_CHART_DIRS), {cache}, or {download}"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _download(request: ChartRequest, entry: Path) -> Path:
    """Helm's `pull --untar` into a temporary directory beside the cache entry, then renamed into place."""
    import helm_python  # the Go library is large: loaded only when a chart is actually fetched

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{entry.name}.download-", dir=entry.parent))
    except OSError as err:
        raise ChartSourceError(f"cannot write the cache: {err.strerror}") from None
    try:
        is_oci = request.chart.startswith("oci://")
        try:
            helm_python.pull(
                request.chart if is_oci else request.chart_name,
                destination=work,
                version=request.version,
                repo_url=None if is_oci else request.repository,
                untar=True,
                untar_dir=work / "chart",
            )
        except helm_python.HelmError as err:
            raise ChartSourceError(_one_line(str(err))) from None
        unpacked = work / "chart" / request.chart_name
        identity = chart_identity(unpacked)
        if identity != (request.chart_name, request.version):
            raise ChartSourceError(f"the repository gave {identity or 'no chart'} instead")
        if entry.exists():  # another render filled the cache meanwhile: keep the entry it wrote
            if chart_identity(entry) == identity:
                return entry
            shutil.rmtree(entry)
        unpacked.rename(entry)
        return entry
    except OSError as err:
        raise ChartSourceError(f"cannot write the cache: {err.strerror}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
