"""`python -m gpushare render --stack NAME --out DIR`: run the real program offline and write what it
would create, for review.

The program (`__main__.py`) runs unchanged under `gpushare.offline.mock_run` with the stack file loaded as the
CLI loads it; `secure:` values reach it as `SECRET_PLACEHOLDER` and are never decrypted. The only
cloud call it makes, the TKE `getClusters` lookup of the kubeconfig, is answered by the mocks with a
placeholder kubeconfig that holds no credentials. The echo mocks run it as an update (not a preview),
so every value resolves. Provider settings the SDKs would pick up from the environment
(`TENCENTCLOUD_*`, `KUBECONFIG`, `PULUMI_K8S_*`) are hidden during the run: the render depends on the
project and the stack file only.

DIR gets `resources.json` (every registration), `outputs.json` and `capacity.json` (stack outputs),
`manifests/` (Kubernetes objects as `kubectl apply -f` takes them, each validated strictly against the
cluster version's schema; each Helm release as its values file and every object its chart creates,
rendered by Helm and validated by `gpushare.offline.chart_render`, the chart found by `gpushare.offline.chart_sources`)
and `tke/` (node-pool arguments, with any
pre-start script decoded next to them, and the files that script installs). Values at secret input
paths are written as `<secret>`, and a render in which a secret value shows up anywhere else is refused.
Everything is assembled and checked in memory, written to a temporary directory beside DIR and only
then renamed into place, so a failed render leaves DIR as it was. Ctrl-C and SIGTERM remove the
temporary directory on the way out; one left by a SIGKILLed render is swept by the next render of DIR
(renders into one parent directory take turns on a lock, so a live render's is never swept).

One concern at ~600 lines, kept whole: the secret checks, the files and the atomic replace all work on
the one in-memory render and share its error (`RenderError`) and its file names; the command's report is
`gpushare.cli.render`'s.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import fcntl
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

import pulumi

from gpushare import resource_types
from gpushare.errors import EXIT_USAGE, GpushareError
from gpushare.mig import setup as mig_setup
from gpushare.offline.chart_render import ChartObject, RenderedRelease, render_releases
from gpushare.offline.chart_sources import ChartSources
from gpushare.offline.manifests import (
    dump_yaml,
    extract_helm_releases,
    extract_manifests,
    schema_version,
    to_plain,
    validate_manifests,
)
from gpushare.offline.mock_run import run_program
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import ProgramRun, RecordedResource
from gpushare.offline.stack_files import SECRET_PLACEHOLDER, load_stack_config, read_project_file
from gpushare.stack.loading import load_stack
from gpushare.stack.model import StackConfig

__all__ = [
    "NODE_POOL_TYPE",
    "REDACTED",
    "RenderError",
    "RenderResult",
    "StackRun",
    "redacted_inputs",
    "redacted_resources",
    "render_files",
    "render_stack",
    "resource_tree",
    "run_stack",
    "validated_stack",
]

NODE_POOL_TYPE: Final = resource_types.NODE_POOL
# What `tke/` holds: node pools, native node pools (qGPU) and TKE add-ons, each as its arguments.
_TKE_FILE_TYPES: Final = frozenset({NODE_POOL_TYPE, resource_types.NATIVE_NODE_POOL, resource_types.ADDON})
REDACTED: Final = "<secret>"
RESOURCES_FILE: Final = "resources.json"
OUTPUTS_FILE: Final = "outputs.json"
CAPACITY_FILE: Final = "capacity.json"
MANIFESTS_DIR: Final = "manifests"
TKE_DIR: Final = "tke"
# What a previous render may contain; any other entry means DIR is not ours to replace.
_RENDER_ENTRIES: Final = frozenset({RESOURCES_FILE, OUTPUTS_FILE, CAPACITY_FILE, MANIFESTS_DIR, TKE_DIR})
# Provider SDKs fill unset arguments from these (TENCENTCLOUD_SECRET_ID is not even marked secret):
# hidden during the run so credentials never reach resources.json and two machines render the same.
_AMBIENT_PROVIDER_SETTINGS: Final = ("TENCENTCLOUD_", "KUBECONFIG", "PULUMI_K8S_")
# Shorter secret values are not searched for in the output: they would match ordinary text.
_MIN_LEAK_CHECK_LENGTH: Final = 6


class RenderError(GpushareError):
    """The program failed under the mocks, or the render cannot be written."""


class ProjectFileError(RenderError):
    """The directory is not this Pulumi project: no Pulumi.yaml, another runtime, or a `main:` naming
    another program (exit 2, as for any input that cannot be read as what it should be)."""

    exit_code = EXIT_USAGE


def check_project_file(project_dir: Path) -> None:
    """Refuse, one line, a directory whose Pulumi.yaml `pulumi up` would not run as this program: render
    and check run `project_dir/__main__.py` under Python, which is what `pulumi` runs only when the
    runtime is `python` and `main:` (if any) names the project directory itself."""
    try:
        document, path = read_project_file(project_dir)
    except (OSError, ValueError) as err:
        raise ProjectFileError(str(err)) from None
    runtime = document.get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if name != "python":
        raise ProjectFileError(
            f"runtime {str(name)[:40]!r} is not python: gpushare renders and checks only its own Python "
            "program",
            source=path.name,
        )
    main = document.get("main")
    if main is not None and (project_dir / str(main)).resolve() != project_dir.resolve():
        raise ProjectFileError(
            f"main: {str(main)[:80]!r} names another program than {project_dir}/__main__.py, which "
            "gpushare would run; remove main: or run gpushare in that program's directory",
            source=path.name,
        )


@dataclass(frozen=True)
class RenderResult:
    stack: str
    out_dir: Path
    kubernetes_schema: str
    """The schema set the manifests were validated against, e.g. "1.30.0"."""
    resources: tuple[RecordedResource, ...]
    outputs: dict[str, Any]
    files: tuple[str, ...]
    """Paths relative to `out_dir` (POSIX), sorted."""
    tree: str
    releases: tuple[RenderedRelease, ...] = ()
    """Every Helm release, rendered from its chart (the objects are among `files`)."""
    config: StackConfig | None = None

    @property
    def capacity(self) -> dict[str, Any]:
        capacity: dict[str, Any] = self.outputs["capacity"]
        return capacity


# --------------------------------------------------------------------------------------------------
# Running the program


@contextlib.contextmanager
def _without_ambient_provider_settings() -> Iterator[None]:
    hidden = {
        name: os.environ.pop(name) for name in list(os.environ) if name.startswith(_AMBIENT_PROVIDER_SETTINGS)
    }
    try:
        yield
    finally:
        os.environ.update(hidden)


@dataclass(frozen=True)
class StackRun:
    config: StackConfig
    run: ProgramRun
    secret_keys: tuple[str, ...]
    """Config keys that were `secure:` in the stack file (their values reached the program as placeholders)."""
    raw_config: dict[str, str]
    """The config as the CLI hands it to the program and to policy packs (`namespace:key` -> string)."""


def validated_stack(project_dir: Path, stack: str) -> StackConfig:
    """`Pulumi.<stack>.yaml` through gpushare's one loader (`load_stack`, as plan and check read it): a
    `ConfigError` with its message if missing or bad."""
    return load_stack(Path(project_dir), stack)


def run_stack(project_dir: Path, stack: str) -> StackRun:
    """Validate the stack file, then run the program under the offline mocks (`RenderError` if it fails)."""
    return _run_validated(Path(project_dir), stack, validated_stack(project_dir, stack))


def _run_validated(project_dir: Path, stack: str, stack_config: StackConfig) -> StackRun:
    check_project_file(project_dir)
    try:
        config, secret_keys = load_stack_config(project_dir, stack)
    except (OSError, ValueError) as err:  # no Pulumi.yaml, or YAML the CLI would reject
        raise RenderError(str(err)) from None
    if not (project_dir / "__main__.py").is_file():
        raise RenderError("no __main__.py: not the Pulumi program's directory", source=str(project_dir))
    try:
        with _without_ambient_provider_settings():
            run = run_program(
                project_dir, stack=stack, config=config, secret_keys=secret_keys, mocks=program_mocks()
            )
    except (pulumi.RunError, TimeoutError) as err:  # RunError: the program's own config validation
        raise RenderError(str(err)) from None
    return StackRun(config=stack_config, run=run, secret_keys=tuple(secret_keys), raw_config=dict(config))


# --------------------------------------------------------------------------------------------------
# Secrets


_PATH_PART: Final = re.compile(
    r'\.?(?P<key>[A-Za-z0-9_]+)|\[(?P<index>\d+)\]|\["(?P<quoted>(?:[^"\\]|\\.)*)"\]'
)


def _parse_property_path(path: str) -> list[str | int]:
    """Engine property paths as gpushare.offline.wire_codec records them: `a.b`, `data["x.y"]`, `items[0]`."""
    parts: list[str | int] = []
    position = 0
    while position < len(path):
        match = _PATH_PART.match(path, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot parse property path {path!r}")
        if match["key"] is not None:
            parts.append(match["key"])
        elif match["index"] is not None:
            parts.append(int(match["index"]))
        else:
            parts.append(re.sub(r"\\(.)", r"\1", match["quoted"]))
        position = match.end()
    return parts


def _redact_leaves(value: Any) -> Any:
    # Keep the shape (a Secret's `stringData` stays a map) so the object still validates.
    if isinstance(value, dict):
        return {key: _redact_leaves(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_leaves(item) for item in value]
    return REDACTED


def _secret_leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _secret_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _secret_leaves(item)
    elif isinstance(value, str):
        yield value


def at_secret_paths(
    inputs: dict[str, Any], secret_paths: Sequence[str]
) -> Iterator[tuple[Any, str | int, str]]:
    """(container, key, path) of every recorded secret input that is present in `inputs`."""
    for path in secret_paths:
        container: Any = inputs
        parts = _parse_property_path(path)
        for part in parts[:-1]:
            try:
                container = container[part]
            except (KeyError, IndexError, TypeError):
                break
        else:
            last = parts[-1]
            if (isinstance(container, dict) and last in container) or (
                isinstance(container, list) and isinstance(last, int) and last < len(container)
            ):
                yield container, last, path


def redacted_inputs(resource: RecordedResource) -> dict[str, Any]:
    """The resource's inputs as plain data with every value at a secret path replaced by `<secret>`."""
    redacted: dict[str, Any] = to_plain(resource.inputs)  # a copy: the recording stays as it was
    for container, key, _ in at_secret_paths(redacted, resource.secret_input_paths):
        container[key] = _redact_leaves(container[key])
    return redacted


def redacted_resources(run: ProgramRun) -> list[RecordedResource]:
    """Every recorded resource with its inputs redacted (a copy; the recording stays as it was)."""
    return [dataclasses.replace(r, inputs=redacted_inputs(r)) for r in run.resources]


def _secret_values(run: ProgramRun, secret_config: bool) -> dict[str, str]:
    """secret value -> where it was seen (for the error message; the value itself is never shown)."""
    found: dict[str, str] = {}
    if secret_config:
        found[SECRET_PLACEHOLDER] = "a `secure:` stack config value"
    for resource in run.resources:
        for container, key, path in at_secret_paths(resource.inputs, resource.secret_input_paths):
            for value in _secret_leaves(container[key]):
                if len(value) >= _MIN_LEAK_CHECK_LENGTH:
                    found.setdefault(value, f"{resource.type} {resource.name} input {path}")
    return found


def _check_no_secret_leaks(files: Mapping[str, str], secrets: Mapping[str, str]) -> None:
    # Redaction works by path; this catches a secret that reached a non-secret path (say, copied into
    # a ConfigMap) before anything is written. Multi-line values are also looked for JSON-escaped.
    for file, text in files.items():
        for value, origin in secrets.items():
            if value in text or json.dumps(value, ensure_ascii=False)[1:-1] in text:
                raise RenderError(
                    f"{file}: would contain a secret in clear text ({origin}); nothing was written"
                )


# --------------------------------------------------------------------------------------------------
# Files


def _json_text(value: Any) -> str:
    return json.dumps(to_plain(value), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _resource_record(resource: RecordedResource) -> dict[str, Any]:
    """One entry of resources.json; `resource.inputs` are already redacted."""
    return {
        "type": resource.type,
        "name": resource.name,
        "urn": resource.urn,
        "parent": resource.parent,
        "custom": resource.custom,
        "provider": resource.provider,
        "version": resource.version or None,
        "pluginDownloadURL": resource.plugin_download_url or None,
        "aliases": resource.aliases,
        "protect": resource.protect,
        "replaceOnChanges": resource.replace_on_changes,
        "ignoreChanges": resource.ignore_changes,
        "deleteBeforeReplace": resource.delete_before_replace,
        # Only where set (the patches of TKE's DaemonSet), so the other records stay as they were.
        **({"retainOnDelete": True} if resource.retain_on_delete else {}),
        "dependencies": resource.dependencies,
        "inputs": resource.inputs,
        "secretInputs": resource.secret_input_paths,
    }


def _node_pool_files(resource: RecordedResource) -> dict[str, str]:
    """tke/<name>.yaml (and <name>.pre-start.sh) of a node pool, tke/addon-<addon>.yaml of an add-on;
    `resource.inputs` are already redacted."""
    inputs = resource.inputs
    name = str(inputs.get("name") or resource.name)
    if resource.type == resource_types.ADDON:
        name = f"addon-{inputs.get('addonName') or resource.name}"
    header = [f"# {resource.type} {resource.name} ({resource.urn})"]
    if resource.protect:
        header.append("# protect: true (Pulumi refuses to delete or replace it)")
    if resource.replace_on_changes:
        header.append(
            f"# replace_on_changes: {', '.join(resource.replace_on_changes)} (a change replaces the pool)"
        )
    if resource.ignore_changes:
        header.append(
            f"# ignore_changes: {', '.join(resource.ignore_changes)} (TKE's value kept after create)"
        )
    if resource.delete_before_replace:
        header.append("# delete_before_replace: true (a replacement deletes this pool and its nodes first)")
    files: dict[str, str] = {}
    script = (inputs.get("nodeConfig") or {}).get("preStartUserScript")
    if isinstance(script, str) and script != REDACTED:
        try:
            decoded = base64.b64decode(script, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            header.append("# nodeConfig.preStartUserScript is not base64-encoded UTF-8 text (TKE expects it)")
        else:
            script_file = f"{name}.pre-start.sh"
            header.append(f"# nodeConfig.preStartUserScript (base64) decoded for review: {script_file}")
            if (inputs.get("nodeConfig") or {}).get("userData") == script:
                header.append("# nodeConfig.userData is the same script (TKE runs it on scaled-out nodes)")
            files[f"{TKE_DIR}/{script_file}"] = decoded if decoded.endswith("\n") else decoded + "\n"
            for path, text in mig_setup.embedded_files(decoded).items():
                embedded = f"{name}.{PurePosixPath(path).name}"
                header.append(f"#   it installs {path}: {embedded}")
                files[f"{TKE_DIR}/{embedded}"] = text if text.endswith("\n") else text + "\n"
    files[f"{TKE_DIR}/{name}.yaml"] = "\n".join(header) + "\n" + dump_yaml(inputs)
    return files


def _add(files: dict[str, str], owners: dict[str, str], path: str, text: str, owner: str) -> None:
    if path in files:
        raise RenderError(f"{owners[path]} and {owner} both render to {path}")
    files[path] = text
    owners[path] = owner


def _chart_object_text(obj: ChartObject) -> str:
    document = obj.document
    ordered = {key: document[key] for key in ("apiVersion", "kind", "metadata")} | document
    return obj.header() + dump_yaml(ordered)


def render_files(
    run: ProgramRun,
    kubernetes_schema: str,
    *,
    secret_config: bool = False,
    chart_sources: ChartSources | None = None,
) -> dict[str, str]:
    """Every file of the render (relative path -> text); nothing is written. See `render_outputs`."""
    return render_outputs(run, kubernetes_schema, secret_config=secret_config, chart_sources=chart_sources)[0]


def render_outputs(
    run: ProgramRun,
    kubernetes_schema: str,
    *,
    secret_config: bool = False,
    chart_sources: ChartSources | None = None,
) -> tuple[dict[str, str], list[RenderedRelease]]:
    """Every file of the render (relative path -> text), and the Helm releases rendered from their charts.

    Raises `ManifestSchemaError` when a manifest does not validate against `kubernetes_schema` (e.g.
    "1.30.0"), `ChartSourceError`/`ChartRenderError`/`ChartObjectSchemaError` when a Helm release has no
    chart, does not render or renders invalid objects, and `RenderError` when a secret would be written
    in clear text. `secret_config`: the stack had `secure:` values, so their placeholder must not appear
    anywhere either. `chart_sources`: where charts are found (default: `ChartSources.from_environment()`).
    """
    files: dict[str, str] = {}
    owners: dict[str, str] = {}
    # Everything below works on redacted copies; the recording itself is left as it was.
    resources = redacted_resources(run)
    _add(files, owners, RESOURCES_FILE, _json_text([_resource_record(r) for r in resources]), "resources")
    _add(files, owners, OUTPUTS_FILE, _json_text(run.stack_outputs), "stack outputs")
    capacity = run.stack_outputs.get("capacity")
    if not isinstance(capacity, dict):
        raise RenderError("the program exported no `capacity` output (GpuSharingCluster.capacity)")
    _add(files, owners, CAPACITY_FILE, _json_text(capacity), "stack output capacity")

    manifests = extract_manifests(resources)
    validate_manifests(manifests, kubernetes_schema, directory=MANIFESTS_DIR)
    for manifest in manifests:
        text = manifest.header() + dump_yaml(manifest.document)
        _add(files, owners, f"{MANIFESTS_DIR}/{manifest.file_name}", text, manifest.resource.urn)
    for release in extract_helm_releases(resources):
        text = release.header() + dump_yaml(release.values)
        _add(files, owners, f"{MANIFESTS_DIR}/{release.file_name}", text, release.resource.urn)
    releases = render_releases(
        resources,
        chart_sources or ChartSources.from_environment(),
        kubernetes_schema,
        directory=MANIFESTS_DIR,
    )
    for rendered in releases:
        for obj in rendered.objects:
            owner = f"{obj.release.resource.urn} (chart {obj.chart} {obj.chart_version}: {obj.source})"
            _add(files, owners, f"{MANIFESTS_DIR}/{obj.file_name}", _chart_object_text(obj), owner)
    for resource in resources:
        if resource.type in _TKE_FILE_TYPES and not resource.external:
            for path, text in _node_pool_files(resource).items():
                _add(files, owners, path, text, resource.urn)
    _check_no_secret_leaks(files, _secret_values(run, secret_config))
    return dict(sorted(files.items())), releases


# --------------------------------------------------------------------------------------------------
# Writing


def _is_previous_render(directory: Path) -> bool:
    entries = {entry.name for entry in directory.iterdir()}
    return not entries or (RESOURCES_FILE in entries and entries <= _RENDER_ENTRIES)


def _check_replaceable(out_dir: Path) -> None:
    try:
        _check_replaceable_dir(out_dir)
    except OSError as err:
        raise RenderError(f"{out_dir}: cannot write the render: {err.strerror or err}") from None


def _probe_writable(out_dir: Path) -> None:
    """Before running the program: can a temporary directory be made where DIR (or its first existing
    ancestor) lives? Made and removed at once, so a refused render writes nothing."""
    try:
        existing = next(p for p in (out_dir.parent, *out_dir.parent.parents) if p.exists())
        os.rmdir(tempfile.mkdtemp(prefix=_staging_prefix(out_dir), dir=existing))
    except OSError as err:
        raise RenderError(f"{out_dir}: cannot write the render: {err.strerror or err}") from None


def _check_replaceable_dir(out_dir: Path) -> None:
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise RenderError(f"{out_dir}: exists and is not a directory")
    if out_dir.is_dir() and not _is_previous_render(out_dir):
        raise RenderError(
            f"{out_dir}: exists and is not a previous render (a render holds {RESOURCES_FILE} and nothing "
            f"but {', '.join(sorted(_RENDER_ENTRIES))}); refusing to replace it"
        )


def _publish(files: Mapping[str, str], out_dir: Path) -> None:
    """Write `files` into a temporary directory beside `out_dir`, then swap it in.

    The swap is two renames (old DIR aside, new one in) with SIGINT/SIGTERM held back until both are
    done; a failure or an interrupt before the swap leaves DIR untouched and removes the temporary
    directory. Renders into the same parent take turns (a lock on the parent directory), and each
    first sweeps what killed renders of DIR left behind (SIGKILL runs no cleanup).
    """
    _check_replaceable(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with _render_lock(out_dir.parent):
            _sweep_leftovers(out_dir)
            _write_and_swap(files, out_dir)
    except OSError as err:
        raise RenderError(f"{out_dir}: cannot write the render: {err.strerror or err}") from None


@contextlib.contextmanager
def _render_lock(directory: Path) -> Iterator[None]:
    """An exclusive flock on `directory` itself: no lock file to leave behind, released by the kernel
    when the process dies however it dies."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _leftover_pattern(out_dir: Path) -> re.Pattern[str]:
    # tempfile.mkdtemp's names: the prefix below and 8 characters of [a-z0-9_].
    return re.compile(rf"^{re.escape(_staging_prefix(out_dir))}[a-z0-9_]{{8}}(\.replaced)?$")


def _staging_prefix(out_dir: Path) -> str:
    return f".{out_dir.name}.render-"


def _sweep_leftovers(out_dir: Path) -> None:
    """Remove temporary directories of earlier renders of `out_dir` that were killed. Called with the
    render lock held: a render holds it from creating its temporary directory to removing it, so any
    that exists now belongs to a dead process."""
    pattern = _leftover_pattern(out_dir)
    for entry in out_dir.parent.iterdir():
        if pattern.match(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (the kernel keeps them pending) until the block is done."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _write_and_swap(files: Mapping[str, str], out_dir: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(out_dir), dir=out_dir.parent))
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))  # bytes: no platform newline translation
        staging.chmod(0o755)  # mkdtemp's 0700 would make the render private
        with _signals_held():
            if out_dir.exists():
                retired = staging.with_name(staging.name + ".replaced")
                out_dir.rename(retired)
                try:
                    staging.rename(out_dir)
                except OSError:
                    retired.rename(out_dir)
                    raise
                shutil.rmtree(retired, ignore_errors=True)
            else:
                staging.rename(out_dir)
    finally:
        if staging.exists():
            with _signals_held():
                shutil.rmtree(staging, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# Entry points


def resource_tree(resources: Sequence[RecordedResource]) -> str:
    """`type name` per resource, children under their parent (registration order)."""
    children: dict[str, list[RecordedResource]] = {}
    known = {resource.urn for resource in resources}
    roots = []
    for resource in resources:
        if resource.parent in known:
            children.setdefault(str(resource.parent), []).append(resource)
        else:
            roots.append(resource)
    lines: list[str] = []

    def walk(resource: RecordedResource, prefix: str, branch: str, child_prefix: str) -> None:
        flags = "".join(
            flag for flag, on in ((" [protect]", resource.protect), (" [read]", resource.external)) if on
        )
        lines.append(f"{prefix}{branch}{resource.type} {resource.name}{flags}")
        kids = children.get(resource.urn, [])
        for index, kid in enumerate(kids):
            last = index == len(kids) - 1
            walk(kid, child_prefix, "└─ " if last else "├─ ", child_prefix + ("   " if last else "│  "))

    for root in roots:
        walk(root, "", "", "")
    return "\n".join(lines)


def render_stack(
    project_dir: Path, stack: str, out_dir: Path, *, chart_sources: ChartSources | None = None
) -> RenderResult:
    """Run the program for `stack` offline and write the render to `out_dir` (replacing a previous one).

    `chart_sources`: where the charts of Helm releases are found (default: from the environment)."""
    project_dir = Path(project_dir)
    out_dir = Path(out_dir).absolute()
    stack_config = validated_stack(project_dir, stack)
    # Before running anything: without schemas for the cluster's version nothing can be checked.
    kubernetes_schema = schema_version(stack_config.cluster.kubernetes_version, source=stack_config.source)
    _check_replaceable(out_dir)  # again when publishing; this early one saves running the program
    _probe_writable(out_dir)
    stack_run = _run_validated(project_dir, stack, stack_config)
    run = stack_run.run
    files, releases = render_outputs(
        run, kubernetes_schema, secret_config=bool(stack_run.secret_keys), chart_sources=chart_sources
    )
    _publish(files, out_dir)
    return RenderResult(
        stack=stack,
        out_dir=out_dir,
        kubernetes_schema=kubernetes_schema,
        resources=tuple(run.resources),
        outputs=run.stack_outputs,
        files=tuple(files),
        tree=resource_tree(run.resources),
        releases=tuple(releases),
        config=stack_config,
    )


def release_summary(rendered: RenderedRelease) -> str:
    """One line per Helm release: which chart, from where, how many objects, which were not validated."""
    release = rendered.release
    count = len(rendered.objects)
    line = (
        f"Helm release {release.namespace or 'default'}/{release.name}: chart {release.chart} "
        f"{release.version} ({rendered.chart.origin}: {rendered.chart.path}) renders {count} "
        f"object{'' if count == 1 else 's'}"
    )
    unvalidated = rendered.unvalidated
    if not unvalidated:
        return line + ", each valid against the schema of its kind (Kubernetes or the chart's CRDs)"
    kinds = ", ".join(sorted({f"{o.api_version} {o.kind}" for o in unvalidated}))
    return line + f"; {len(unvalidated)} NOT validated (no schema at hand knows {kinds})"
