"""The floor: a Pulumi program with no logic that registers what a render recorded, and nothing else.

It reads a render's `resources.json` (and `outputs.json` for the stack exports) and, in registration
order, constructs each resource with the core SDK's generic classes (`pulumi.ProviderResource`,
`pulumi.CustomResource`, `pulumi.ComponentResource`) with the recorded type, name, inputs, parent,
provider, protect and dependencies; inputs at the recorded secret paths are wrapped as secrets again.
It runs under the same recording monitor and mocks as `render` (`gpushare.offline.mock_run.run_function` with
`gpushare.offline.program_mocks.program_mocks()`), so what is left is what the Pulumi SDK itself spends per
resource: input serialization, the RegisterResource round trip, output resolution.

Not in the floor, and so counted against gpushare: validating the stack file, the sharing plan, the
typed provider classes (`pulumi_kubernetes`, `tencentcloud_iac_pulumi` Args and their translation, the
versions and aliases they add), the `getClusters` invoke, and everything `render` does after the
program (manifest validation, YAML, files). Secret values are the render's redacted `<secret>` strings, of no consequence to the cost.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pulumi

from gpushare.offline.mock_run import run_function
from gpushare.offline.program_mocks import program_mocks
from gpushare.offline.recorded import STACK_TYPE, ProgramRun
from gpushare.offline.render import OUTPUTS_FILE, RESOURCES_FILE, at_secret_paths

PROVIDER_TYPE_PREFIX: Final = "pulumi:providers:"


@dataclass(frozen=True)
class FloorInput:
    """What the floor program registers: the render's resources (registration order) and stack exports."""

    resources: tuple[dict[str, Any], ...]
    stack_outputs: dict[str, Any]

    @property
    def registered(self) -> tuple[dict[str, Any], ...]:
        """The records the floor registers itself (the root Stack comes from the runner)."""
        return tuple(r for r in self.resources if r["type"] != STACK_TYPE)


def load_floor_input(render_dir: Path) -> FloorInput:
    resources = json.loads((render_dir / RESOURCES_FILE).read_text(encoding="utf-8"))
    outputs = json.loads((render_dir / OUTPUTS_FILE).read_text(encoding="utf-8"))
    if not isinstance(resources, list) or not isinstance(outputs, dict):
        raise ValueError(f"{render_dir}: not a render (resources.json must be a list, outputs.json a map)")
    return FloorInput(resources=tuple(resources), stack_outputs=outputs)


def _with_secrets(inputs: dict[str, Any], secret_paths: Sequence[str]) -> dict[str, Any]:
    for container, key, _ in list(at_secret_paths(inputs, secret_paths)):
        container[key] = pulumi.Output.secret(container[key])
    return inputs


def _urn_of_reference(reference: str) -> str:
    # A provider reference is "<urn>::<id>"; URNs contain "::" themselves, the id does not.
    return reference.rsplit("::", 1)[0]


def floor_program(floor: FloorInput) -> Callable[[], None]:
    """The program body: register every recorded resource with no logic at all."""

    def body() -> None:
        by_urn: dict[str, pulumi.Resource] = {}
        components: list[pulumi.ComponentResource] = []
        for record in floor.registered:
            type_: str = record["type"]
            name: str = record["name"]
            parent = by_urn.get(record["parent"]) if record.get("parent") else None
            depends_on: list[pulumi.Resource] = [
                by_urn[urn] for urn in record["dependencies"] if urn in by_urn
            ]
            provider_ref = record.get("provider")
            provider = by_urn.get(_urn_of_reference(provider_ref)) if provider_ref else None
            opts = pulumi.ResourceOptions(
                parent=parent,
                depends_on=depends_on or None,
                protect=bool(record.get("protect")),
                provider=provider if isinstance(provider, pulumi.ProviderResource) else None,
            )
            inputs: dict[str, Any] = record["inputs"]
            secret_paths = record.get("secretInputs") or ()
            if secret_paths:  # copied: the same input may be registered again by another run
                inputs = _with_secrets(copy.deepcopy(inputs), secret_paths)
            resource: pulumi.Resource
            if type_.startswith(PROVIDER_TYPE_PREFIX):
                resource = pulumi.ProviderResource(
                    type_.removeprefix(PROVIDER_TYPE_PREFIX), name, inputs, opts
                )
            elif record["custom"]:
                resource = pulumi.CustomResource(type_, name, inputs, opts)
            else:
                component = pulumi.ComponentResource(type_, name, None, opts)
                components.append(component)
                resource = component
            by_urn[record["urn"]] = resource
        for component in components:  # the real components report outputs too; what they say is immaterial
            component.register_outputs({})
        for key, value in floor.stack_outputs.items():
            pulumi.export(key, value)

    return body


def run_floor(
    floor: FloorInput,
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
) -> ProgramRun:
    """Run the floor program under the recording monitor with the render's mocks."""
    return run_function(
        floor_program(floor),
        project=project,
        stack=stack,
        config=config,
        secret_keys=secret_keys,
        mocks=program_mocks(),
        timeout=600.0,
    )
