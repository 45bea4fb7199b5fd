"""`python -m gpushare check`: render a stack offline, then run the policy pack over it as the CLI does.

What `pulumi preview --policy-pack policies` would report, without an engine: the resources are the
offline render's (inputs for `Analyze`, outputs for `AnalyzeStack`), the pack is started with
`python -m pulumi.policy <engine> policies` and driven over gRPC.

By default the pack gets exactly what the engine hands it, so `check` and `pulumi preview --policy-pack`
give the same verdicts (test-engine holds them equal on every stack). One addition is opt-in
(`inside_charts`, `check --inside-charts`): every object a Helm release's chart creates, rendered as
`render` renders it (`gpushare.offline.chart_render`), is passed to the pack as a resource of its own, a child
of its Release (URN `...kubernetes:helm.sh/v3:Release$<type>::<release resource>:<namespace>/<name>`, which
`gpushare.resource_types.is_chart_rendered` recognises). With `pulumi preview` a Release is one resource
holding its values; the pack sees what a chart creates (a vendor chart's second device plugin, say) only
there, and its verdicts can then exceed preview's. The charts are rendered either way: a chart that does not
render fails `render`, `check` and the engine's preview alike.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpushare.errors import GpushareError
from gpushare.offline import pack_process, policy_driver
from gpushare.offline.chart_render import ChartObject, RenderedRelease, render_releases
from gpushare.offline.chart_sources import ChartSources
from gpushare.offline.manifests import schema_version
from gpushare.offline.policy_model import (
    AnalyzedResource,
    PackReport,
    PolicyDriverError,
    PolicyPackStartError,
    ProviderInfo,
)
from gpushare.offline.recorded import RecordedResource, engine_urn, is_unknown
from gpushare.offline.render import StackRun, at_secret_paths, redacted_resources, run_stack, validated_stack
from gpushare.stack.loading import CONFIG_ENV_LIMIT_BYTES
from gpushare.stack.model import PROJECT, StackConfig

POLICY_PACK_DIR = "policies"


class CheckError(GpushareError):
    """The pack could not run (did not start, bad policy config): not a verdict on the stack."""


@dataclass(frozen=True)
class CheckResult:
    stack: str
    report: PackReport
    chart_warnings: tuple[str, ...] = ()
    """What Helm warned about while rendering the stack's charts (one line each)."""

    @property
    def passed(self) -> bool:
        return not self.report.mandatory


def _wire(value: Any) -> Any:
    # A copy (new dicts and lists) in which the recorder's UNKNOWN marker is the engine's sentinel again.
    if is_unknown(value):
        return policy_driver.UNKNOWN
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


def _engine_properties(values: Mapping[str, Any], secret_paths: Sequence[str]) -> dict[str, Any]:
    """Properties as the engine sends them: unknowns as the sentinel, secrets wrapped again."""
    properties: dict[str, Any] = _wire(dict(values))  # a copy: secrets are wrapped in place below
    for container, key, _ in at_secret_paths(properties, secret_paths):
        container[key] = policy_driver.secret(container[key])
    return properties


def chart_object_name(obj: ChartObject) -> str:
    """`<release resource>:<namespace>/<name>` (no namespace part for cluster-scoped objects)."""
    where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
    return f"{obj.release.resource.name}:{where}"


def _chart_object(obj: ChartObject, by_urn: Mapping[str, RecordedResource]) -> AnalyzedResource:
    release = obj.release.resource
    stack, project = release.urn.removeprefix("urn:pulumi:").split("::")[:2]
    name = chart_object_name(obj)
    properties = _wire(obj.document)
    return AnalyzedResource(
        type=obj.type_token,
        name=name,
        urn=engine_urn(stack, project, release.urn, obj.type_token, name),
        properties=properties,
        outputs=properties,
        parent=release.urn,
        provider=_provider(release, by_urn),
    )


def analyzed_resources(
    stack_run: StackRun, releases: Sequence[RenderedRelease] = ()
) -> list[AnalyzedResource]:
    """Every registered resource but the root stack and providers, as the engine hands it to a pack, and
    after them every object rendered from the charts of `releases`, each a child of its Release."""
    by_urn = {r.urn: r for r in stack_run.run.resources}
    analyzed = []
    for resource in stack_run.run.resources:
        if resource.type.startswith("pulumi:"):
            continue
        analyzed.append(
            AnalyzedResource(
                type=resource.type,
                name=resource.name,
                urn=resource.urn,
                properties=_engine_properties(resource.inputs, resource.secret_input_paths),
                outputs=_engine_properties(resource.outputs, resource.secret_input_paths),
                parent=resource.parent,
                protect=resource.protect,
                dependencies=tuple(resource.dependencies),
                provider=_provider(resource, by_urn),
            )
        )
    analyzed += [_chart_object(obj, by_urn) for release in releases for obj in release.objects]
    return analyzed


def _provider(resource: RecordedResource, by_urn: Mapping[str, RecordedResource]) -> ProviderInfo | None:
    if not resource.provider:
        return None
    provider_urn = resource.provider.rsplit("::", 1)[0]
    provider = by_urn.get(provider_urn)
    if provider is None:
        return None
    return ProviderInfo(
        type=provider.type,
        urn=provider.urn,
        name=provider.name,
        properties=_engine_properties(provider.inputs, provider.secret_input_paths),
    )


def _pack_interpreter(pack: Path) -> str:
    """The pack's own virtualenv when it exists (as the CLI would use it), else this interpreter: the
    repo's venv installs the pack's requirements too (requirements-dev.txt includes them)."""
    try:
        return pack_process.pack_python(pack)
    except PolicyPackStartError:
        return sys.executable


def _check_config_fits_environment(stack: StackConfig) -> None:
    """The CLI hands a policy pack the whole stack config in one environment variable (PULUMI_CONFIG),
    and Linux refuses to start a process with one above MAX_ARG_STRLEN ("Argument list too long")."""
    if stack.config_env_bytes > CONFIG_ENV_LIMIT_BYTES:
        raise CheckError(
            f"the stack config is {stack.config_env_bytes // 1024} KiB as PULUMI_CONFIG, the environment "
            f"variable the policy pack gets it in; Linux caps one at {CONFIG_ENV_LIMIT_BYTES // 1024} KiB "
            "(MAX_ARG_STRLEN), so neither this check nor `pulumi preview --policy-pack` can start the pack: "
            "split the stack",
            source=stack.source,
        )


def check_stack(
    project_dir: Path,
    stack: str,
    *,
    policy_config: Mapping[str, Any] | None = None,
    pack_dir: Path | None = None,
    chart_sources: ChartSources | None = None,
    inside_charts: bool = False,
) -> CheckResult:
    """Render `stack` (charts included, found through `chart_sources`, default from the environment) and
    run the pack over what the engine would hand it, and with `inside_charts` over the charts' objects too;
    the chart errors are `render`'s, so both commands give the same verdict."""
    project_dir = Path(project_dir)
    pack = pack_dir or project_dir / POLICY_PACK_DIR
    _check_config_fits_environment(validated_stack(project_dir, stack))
    stack_run = run_stack(project_dir, stack)
    config = stack_run.config
    releases = render_releases(
        redacted_resources(stack_run.run),
        chart_sources or ChartSources.from_environment(),
        schema_version(config.cluster.kubernetes_version, source=config.source),
    )
    try:
        report = policy_driver.run_policy_pack(
            pack,
            analyzed_resources(stack_run, releases if inside_charts else ()),
            stack=stack,
            project=PROJECT,
            config=stack_run.raw_config,
            secret_keys=stack_run.secret_keys,
            policy_config=policy_config,
            python=_pack_interpreter(pack),
        )
    except PolicyDriverError as err:
        raise CheckError(str(err)) from None
    warnings = tuple(line for release in releases for line in release.warning_lines())
    return CheckResult(stack=stack, report=report, chart_warnings=warnings)
