"""The gpushare policy pack (policies/): every policy called directly, the way the SDK calls it.

Props go through the same path as in a pack (a protobuf Struct, `deserialize_properties`, the
unknown-checking proxy), so numbers are doubles, secrets arrive unwrapped and unknowns raise on access.
The stack config reaches the rules through `PULUMI_CONFIG`, as the CLI passes it. The resources are
the real program's, run offline once per stack file as `check` runs it (gpushare/offline/render.run_stack), and
each violating case is a change to them; resources are hand-built only where the program cannot make
them (a typed-in credential, other tools' objects, the seed cluster's mistakes in
tests/fixtures/policies/seed_mistakes.yaml), each saying so.
"""

from __future__ import annotations

import atexit
import copy
import functools
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, HELM_MIG, PROJECT_DIR, STACKS, stack_file
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]  # no stubs installed
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from gpushare import kube_names
from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.mock_run import run_program
from gpushare.offline.recorded import is_unknown
from gpushare.offline.render import run_stack
from gpushare.offline.stack_files import load_stack_config
from gpushare.resource_types import (
    CONFIG_MAP,
    DAEMON_SET,
    DAEMON_SET_PATCH,
    GET_CLUSTERS,
    HELM_RELEASE,
    TENCENTCLOUD_PROVIDER,
)
from gpushare.stack.loading import load_stack_file
from gpushare.stack.model import StackConfig
from gpushare_policies import rules
from gpushare_policies.config_files import modelled_plugin_version
from gpushare_policies.props import SECRET_SIGNATURE, SECRET_SIGNATURE_KEY, Resource
from gpushare_policies.workloads import NFD_NVIDIA_PCI_LABEL, helm_plugin

SEED_MISTAKES = FIXTURES / "policies" / "seed_mistakes.yaml"
OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)
UNKNOWN = UNKNOWN_STRING_VALUE
REQUIRED_NAMES = {
    "time-slicing-replicas-tuned",
    "time-slicing-replicas-underused",
    "time-slicing-replicas-minimum",
    "fail-requests-greater-than-one",
    "device-plugin-config-valid",
    "config-file-not-directory",
    "config-key-exists",
    "one-device-plugin-per-node",
    "plugin-restarts-on-config-change",
    "mig-only-on-mig-capable-gpus",
    "mig-driver-supported",
    "mig-time-slicing-needs-mixed",
    "helm-chart-pinned",
    "helm-plugin-schedulable",
    "cli-flag-overrides-config",
    "gpu-pool-labels",
    "no-plaintext-cloud-secrets",
    "mig-config-exists",
    "operator-driver-consistent",
}
ADVISORY_NAMES = {
    "time-slicing-replicas-underused",
    "mig-layout-underused",
    "cli-flag-overrides-config",
    "time-slicing-measurement-fresh",
    "qgpu-measurement-fresh",
    "plugin-image-pinned",
    "judged-without-stack-config",
    "workload-fits-pool-advisory",
}
# What the repo's stacks are expected to be advised about: placeholder measurement dates, and the tag-only
# image of TKE's plugin (its digest is the cluster's to read, not ours to invent).
EXPECTED_ADVISORIES = {"time-slicing-measurement-fresh", "qgpu-measurement-fresh", "plugin-image-pinned"}


# --------------------------------------------------------------------------------------------------------
# Resources as the engine shows them


@dataclass
class Res:
    type: str
    name: str
    props: dict[str, Any]
    stack: str = "prod"

    @property
    def urn(self) -> str:
        return f"urn:pulumi:{self.stack}::gpushare::{self.type}::{self.name}"


def engine_props(props: Mapping[str, Any]) -> Any:
    """What a validator gets: a Struct round trip (numbers become doubles), secrets unwrapped, the proxy."""
    struct = struct_pb2.Struct()
    struct.update(copy.deepcopy(dict(props)))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


def resource_messages(
    policy: ResourceValidationPolicy, res: Res, config: Mapping[str, Any] | None = None
) -> list[str]:
    messages: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        messages.append(message)

    args = ResourceValidationArgs(
        res.type, engine_props(res.props), res.urn, res.name, OPTIONS, None, dict(config or {})
    )
    policy.validate(args, report)
    return messages


def stack_messages(
    policy: StackValidationPolicy, resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[tuple[str, str | None]]:
    reported: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        reported.append((message, urn))

    policy_resources = [
        PolicyResource(r.type, engine_props(r.props), r.urn, r.name, OPTIONS, None, None, [], {})
        for r in resources
    ]
    policy.validate(StackValidationArgs(policy_resources, dict(config or {})), report)
    return reported


def messages_of(name: str, resources: Sequence[Res], config: Mapping[str, Any] | None = None) -> list[str]:
    """Every message one policy reports over `resources` (each resource for a resource policy)."""
    policy = rules.POLICIES_BY_NAME[name]
    if isinstance(policy, StackValidationPolicy):
        return [message for message, _ in stack_messages(policy, resources, config)]
    assert isinstance(policy, ResourceValidationPolicy)
    return [m for res in resources for m in resource_messages(policy, res, config)]


def all_messages(resources: Sequence[Res]) -> dict[str, list[str]]:
    found = {policy.name: messages_of(policy.name, resources) for policy in rules.POLICIES}
    return {name: messages for name, messages in found.items() if messages}


def mandatory(found: Mapping[str, list[str]]) -> dict[str, list[str]]:
    return {name: messages for name, messages in found.items() if name not in ADVISORY_NAMES}


# --------------------------------------------------------------------------------------------------------
# The program's resources, as the real program registers them


@dataclass(frozen=True)
class Program:
    stack: StackConfig
    resources: list[Res] = field(default_factory=list)

    def get(self, name: str) -> Res:
        return next(r for r in self.resources if r.name == name)

    def but(self, *changed: Res) -> list[Res]:
        """The program's resources with `changed` in place of the same-named ones."""
        by_name = {r.name: r for r in changed}
        return [by_name.get(r.name, r) for r in self.resources]


def engine_value(value: Any) -> Any:
    """A recorded input as the engine hands it to a pack: unknowns as the SDK's unknown marker."""
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, dict):
        return {k: engine_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [engine_value(v) for v in value]
    return value


@functools.cache
def _registered(project: Path, stack_name: str) -> tuple[Res, ...]:
    run = run_stack(project, stack_name)  # what `check` runs: the real program under the offline mocks
    return tuple(
        Res(r.type, r.name, engine_value(r.inputs), stack_name)
        for r in run.run.resources
        if r.custom and r.type
    )


def provider(**props: Any) -> Res:
    """Hand-built on purpose: the program never types a credential into its provider, which is exactly
    what no-plaintext-cloud-secrets guards against, so only a hand-made provider can show the violation."""
    return Res(TENCENTCLOUD_PROVIDER, "tencentcloud", {"region": "ap-singapore", **props})


_PROGRAM_COPIES: dict[Path, Path] = {}


def _project_for(path: Path) -> Path:
    """A directory the program runs in with `path` as its stack file: the repo for the repo's stacks, else
    the program (Pulumi.yaml, __main__.py, components/) copied next to a copy of the file, once per file."""
    if path.parent == PROJECT_DIR:
        return PROJECT_DIR
    project = _PROGRAM_COPIES.get(path)
    if project is None:
        project = Path(tempfile.mkdtemp(prefix="gpushare-policies-"))
        atexit.register(shutil.rmtree, project, ignore_errors=True)
        for name in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(PROJECT_DIR / name, project / name)
        (project / "components").symlink_to(PROJECT_DIR / "components")
        shutil.copy(path, project / path.name)
        _PROGRAM_COPIES[path] = project
    return project


def program(stack_name: str, changed_file: Path | None = None) -> Program:
    """What GpuSharingCluster registers for a stack: the real program run offline, once per stack file.
    `changed_file`: a changed `Pulumi.<stack_name>.yaml` to run instead of the stack's own."""
    project = _project_for(changed_file or stack_file(stack_name))
    stack = load_stack_file(project / f"Pulumi.{stack_name}.yaml")
    return Program(stack, [copy.deepcopy(r) for r in _registered(project, stack_name)])


def with_data(res: Res, key: str, text: str) -> Res:
    changed = copy.deepcopy(res)
    target = changed.props["values"]["config"]["map"] if "values" in changed.props else changed.props["data"]
    target[key] = text
    return changed


def replicas_text(
    replicas: Any, resource: str = "nvidia.com/gpu", strategy: str = "none", fail: bool = True
) -> str:
    return (
        f"version: v1\nflags:\n  migStrategy: {strategy}\nsharing:\n  timeSlicing:\n"
        f"    failRequestsGreaterThanOne: {str(fail).lower()}\n"
        f"    resources:\n    - name: {resource}\n      replicas: {replicas}\n"
    )


# --------------------------------------------------------------------------------------------------------
# Environment: the stack config as the CLI passes it


def stack_config_env(stack_name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> str:
    """`PULUMI_CONFIG` for a stack file: `namespace:key` -> string, structured values as JSON."""
    document = yaml.safe_load(stack_file(stack_name).read_text())
    config = document["config"]
    if edit is not None:
        edit(config)
    values = {}
    for key, value in config.items():
        full = key if ":" in key else f"gpushare:{key}"
        values[full] = value if isinstance(value, str) else json.dumps(value)
    return json.dumps(values)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "PULUMI_CONFIG",
        "PULUMI_STACK",
        "PULUMI_CONFIG_SECRET_KEYS",
        "TENCENTCLOUD_SECRET_ID",
        "TENCENTCLOUD_SECRET_KEY",
        "TENCENTCLOUD_SECURITY_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def use_stack(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    def use(stack_name: str, edit: Callable[[dict[str, Any]], None] | None = None) -> None:
        monkeypatch.setenv("PULUMI_STACK", stack_name)
        monkeypatch.setenv("PULUMI_CONFIG", stack_config_env(stack_name, edit))

    return use


@pytest.fixture(scope="module")
def prod() -> Program:
    return program("prod")


@pytest.fixture(scope="module")
def staging() -> Program:
    """The device-plugin chart with a time-sliced MIG pool (the former staging stack)."""
    return program(HELM_MIG)


# --------------------------------------------------------------------------------------------------------
# The pack as a whole


def test_pack_has_every_required_policy_with_its_level() -> None:
    names = [policy.name for policy in rules.POLICIES]
    assert len(names) == len(set(names))
    assert set(names) >= REQUIRED_NAMES
    advisory = {p.name for p in rules.POLICIES if p.enforcement_level == EnforcementLevel.ADVISORY}
    assert advisory == ADVISORY_NAMES
    # The rest inherit the pack's level from policies/__main__.py (mandatory on gpushare stacks, advisory on
    # other programs); one only notes, in Remediate, which credentials arrived as secrets; the workload rules
    # of what cannot work stay mandatory on every program (issue 36), and workload-fits-pool speaks only in
    # gpushare's own program, where it is mandatory.
    levels = {
        p.name: p.enforcement_level
        for p in rules.POLICIES
        if p.enforcement_level not in (None, EnforcementLevel.ADVISORY)
    }
    assert levels == {
        "credential-secrecy-noted": EnforcementLevel.REMEDIATE,
        "workload-gpu-request": EnforcementLevel.MANDATORY,
        "workload-gpu-resource-offered": EnforcementLevel.MANDATORY,
        "workload-tolerates-pool-taints": EnforcementLevel.MANDATORY,
        "workload-fits-pool": EnforcementLevel.MANDATORY,
    }
    # Every mandatory policy says what to change (PolicyInfo.remediation_steps, shown by the service).
    mandatory = (None, EnforcementLevel.MANDATORY)
    assert [
        p.name for p in rules.POLICIES if p.enforcement_level in mandatory and not p.remediation_steps
    ] == []
    main = (PROJECT_DIR / "policies" / "__main__.py").read_text()
    assert (
        'PolicyPack(name="gpushare"' in main
        and "enforcement_level=pack_enforcement_level(os.environ)" in main
    )
    project = yaml.safe_load((PROJECT_DIR / "policies" / "PulumiPolicy.yaml").read_text())
    assert project["version"] == "0.1.0"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}


@pytest.mark.parametrize("stack_name", [*STACKS, HELM_MIG])
def test_the_programs_resources_pass_every_mandatory_policy(
    stack_name: str, use_stack: Callable[..., None]
) -> None:
    use_stack(stack_name)
    found = all_messages(program(stack_name).resources)
    assert mandatory(found) == {}
    # The seed's measurements date from 2025-06-01, and TKE's plugin image is known by tag only: only
    # those two advisories speak.
    assert set(found) <= EXPECTED_ADVISORIES


@pytest.mark.parametrize("stack_name", STACKS)
def test_the_programs_resources_during_preview_pass_every_mandatory_policy(
    stack_name: str, use_stack: Callable[..., None]
) -> None:
    """The same during a preview: values the engine cannot know yet arrive as unknowns."""
    config, secret_keys = load_stack_config(PROJECT_DIR, stack_name)
    # The kubeconfig lookup is the program's only invoke.
    mocks = Mocks(invoke_handlers={GET_CLUSTERS: lambda _: {"lists": [{"kubeConfig": "apiVersion: v1"}]}})
    run = run_program(
        PROJECT_DIR, stack=stack_name, config=config, secret_keys=secret_keys, preview=True, mocks=mocks
    )
    use_stack(stack_name)
    resources = [
        Res(r.type, r.name, engine_value(r.inputs), stack_name) for r in run.resources if r.custom and r.type
    ]
    assert {r.type for r in resources} >= {
        "tencentcloud:Kubernetes/nodePool:NodePool",
        "pulumi:providers:tencentcloud",
    }
    found = all_messages(resources)
    assert mandatory(found) == {}
    assert set(found) <= EXPECTED_ADVISORIES


def _seed_scenarios() -> list[Any]:
    document = yaml.safe_load(SEED_MISTAKES.read_text())
    return [pytest.param(scenario, id=name) for name, scenario in document["scenarios"].items()]


@pytest.mark.parametrize("scenario", _seed_scenarios())
def test_each_seed_mistake_is_caught_by_its_policy(
    scenario: dict[str, Any], use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    # Hand-built on purpose: the seed cluster's own objects, the mistakes the program exists to avoid.
    resources = [Res(r["type"], r["name"], r["props"]) for r in scenario["resources"]]
    messages = messages_of(scenario["caught_by"], resources)
    assert any(scenario["says"] in message for message in messages), messages


# --------------------------------------------------------------------------------------------------------
# 1-4: time-slicing entries against the tuning rule


def test_tuned_replicas_pass_and_replicas_above_the_maximum_fail(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    assert messages_of("time-slicing-replicas-tuned", [prod.get("gpushare-config-configmap")]) == []
    too_many = with_data(prod.get("gpushare-config-configmap"), "l20", replicas_text(9))
    (message,) = messages_of("time-slicing-replicas-tuned", [too_many])
    assert 'key "l20": nvidia.com/gpu replicas 9 exceeds the tuned maximum 8' in message
    assert "46068 MiB L20 / 4621 MiB measured, stack pool l20" in message


def test_the_policy_ceiling_is_configurable(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    cm = prod.get("gpushare-config-configmap")
    # floor(0.5 x 46068 / 4621) = 4 for L20, floor(0.5 x 15360 / 4401) = 1 for T4, so 8 and 3 are too many.
    messages = messages_of("time-slicing-replicas-tuned", [cm], {"utilizationCeiling": 0.5})
    assert any("replicas 8 exceeds the tuned maximum 4" in m for m in messages)
    assert any('key "t4"' in m and "maximum 1" in m for m in messages)


def test_a_misspelt_policy_config_key_is_refused_by_name(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    # The CLI's schema check refuses a wrong type but not an undeclared key (no additionalProperties).
    use_stack("prod")
    cm = prod.get("gpushare-config-configmap")
    (message,) = messages_of("time-slicing-replicas-tuned", [cm], {"utilisationCeiling": 0.5})
    assert message == (
        "policy config: unknown property 'utilisationCeiling'; this policy takes utilizationCeiling (a "
        "misspelt key would leave the default in force). Fix the --policy-pack-config file."
    )
    # Only on the resources the policy judges: a node pool holds no device-plugin config.
    assert (
        messages_of(
            "time-slicing-replicas-tuned", [prod.get("gpushare-l20-pool")], {"utilisationCeiling": 0.5}
        )
        == []
    )
    fresh = messages_of("time-slicing-measurement-fresh", [cm], {"maxAgeDays": 30})
    # The other messages are the seed's 2025-06-01 measurements, judged against the default age.
    assert [m for m in fresh if m.startswith("policy config:")] == [
        "policy config: unknown property 'maxAgeDays'; this policy takes maxMeasurementAgeDays (a misspelt "
        "key would leave the default in force). Fix the --policy-pack-config file."
    ]


def test_without_stack_config_the_provenance_annotation_supplies_gpu_and_measurement(prod: Program) -> None:
    cm = prod.get("gpushare-config-configmap")  # no PULUMI_CONFIG: only the annotations tell
    assert messages_of("time-slicing-replicas-tuned", [cm]) == []
    (message,) = messages_of("time-slicing-replicas-tuned", [with_data(cm, "l20", replicas_text(10))])
    assert "maximum 8" in message and "annotation gpushare.io/tuning-l20" in message


def test_memory_comes_from_the_catalog_never_from_the_annotation(prod: Program) -> None:
    cm = copy.deepcopy(prod.get("gpushare-config-configmap"))
    annotation = kube_names.tuning_annotation("l20")
    provenance = json.loads(cm.props["metadata"]["annotations"][annotation])
    provenance["memoryMiB"] = 10**6
    provenance["resources"][0]["memoryMiB"] = 10**6
    cm.props["metadata"]["annotations"][annotation] = json.dumps(provenance)
    (message,) = messages_of("time-slicing-replicas-tuned", [with_data(cm, "l20", replicas_text(20))])
    assert "maximum 8" in message


def test_a_key_without_pool_or_annotation_is_not_tuned(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    cm = with_data(prod.get("gpushare-config-configmap"), "a10", replicas_text(2))
    (message,) = messages_of("time-slicing-replicas-tuned", [cm])
    assert "no pool 'a10' in the stack config" in message and "replicas 2 is not tuned" in message


def test_the_fallback_key_is_tuned_for_the_gpu_the_stack_names(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    # Prod's sharing.fallback: T4 (15360 MiB) at 4621 MiB, floor(0.9 x 15360 / 4621) = floor(2.99) = 2.
    (message,) = messages_of(
        "time-slicing-replicas-tuned",
        [with_data(prod.get("gpushare-config-configmap"), "any", replicas_text(3))],
    )
    assert 'key "any"' in message and "exceeds the tuned maximum 2" in message
    assert "15360 MiB T4 / 4621 MiB measured, stack config gpushare:sharing.fallback" in message


def test_a_shared_fallback_without_a_named_gpu_is_untuned(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    release = staging.get("gpushare-device-plugin-release")
    (message,) = messages_of("time-slicing-replicas-tuned", [with_data(release, "any", replicas_text(2))])
    assert 'key "any"' in message and "replicas 2 is not tuned" in message
    assert "names no GPU and measurement for the fallback key (gpushare:sharing.fallback)" in message
    assert "name the GPU in gpushare:sharing.fallback" in message
    # Without a stack config the provenance annotation decides, and staging's names no GPU.
    use_stack(HELM_MIG, lambda config: config.clear())
    assert messages_of("time-slicing-replicas-tuned", [with_data(release, "any", replicas_text(2))]) != []


@pytest.mark.parametrize(
    ("gpu", "measured", "tuned"),
    [
        ("T4", 4401, 3),  # floor(0.9 x 15360 / 4401) = floor(3.14) = 3
        ("L20", 4621, 8),  # floor(0.9 x 46068 / 4621) = floor(8.97) = 8
    ],
)
def test_an_opted_in_fallback_may_share_up_to_its_tuned_replicas(
    use_stack: Callable[..., None], fixed_today: Callable[[date], None], gpu: str, measured: int, tuned: int
) -> None:
    fixed_today(date(2026, 1, 15))
    use_stack(
        HELM_MIG,
        lambda config: config["gpushare:sharing"].update(
            fallback={"gpu": gpu, "measuredMiB": measured, "measuredAt": "2026-01-15"}
        ),
    )
    release = program(HELM_MIG).get("gpushare-device-plugin-release")
    assert messages_of("time-slicing-replicas-tuned", [with_data(release, "any", replicas_text(tuned))]) == []
    (over,) = messages_of(
        "time-slicing-replicas-tuned", [with_data(release, "any", replicas_text(tuned + 1))]
    )
    assert f"exceeds the tuned maximum {tuned}" in over
    (under,) = messages_of("time-slicing-replicas-underused", [with_data(release, "any", replicas_text(2))])
    assert f"below the tuned {tuned}" in under


def test_mig_resources_are_tuned_for_the_mig_instance(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    release = staging.get("gpushare-device-plugin-release")
    assert messages_of("time-slicing-replicas-tuned", [release]) == []
    # H20 1g.12gb holds 11264 MiB: floor(0.9 x 11264 / 4621) = 2.
    too_many = with_data(release, "h20", replicas_text(3, "nvidia.com/mig-1g.12gb", "mixed"))
    (message,) = messages_of("time-slicing-replicas-tuned", [too_many])
    assert "replicas 3 exceeds the tuned maximum 2" in message and "H20 MIG 1g.12gb" in message


def _whole_h20(config: dict[str, Any]) -> None:
    config["gpushare:pools"][0]["sharing"] = {"mode": "time-slicing", "measuredMiB": 4621}


@pytest.mark.parametrize(
    ("stack_name", "edit", "key", "resource", "strategy", "tuned"),
    [
        # The pack's own numbers, written down by hand (catalog memory, ceiling 0.9), so that a change to
        # the one tuning rule cannot move the program's replicas and this guard together unnoticed.
        ("prod", None, "l20", "nvidia.com/gpu", "none", 8),  # floor(41461.2 / 4621) = floor(8.97)
        ("prod", None, "t4", "nvidia.com/gpu", "none", 3),  # floor(13824 / 4401) = floor(3.14)
        ("prod", None, "any", "nvidia.com/gpu", "none", 2),  # fallback T4: floor(13824 / 4621) = floor(2.99)
        (HELM_MIG, None, "h20", "nvidia.com/mig-1g.12gb", "mixed", 2),  # floor(0.9 x 11264 / 4621) = 2
        (HELM_MIG, None, "h20", "nvidia.com/mig-1g.24gb", "mixed", 4),  # floor(0.9 x 22138 / 4621) = 4
        (HELM_MIG, _whole_h20, "h20", "nvidia.com/gpu", "none", 19),  # floor(0.9 x 97871 / 4621) = 19
    ],
)
def test_the_packs_tuned_maximum_is_written_down_per_gpu(
    use_stack: Callable[..., None],
    stack_name: str,
    edit: Callable[[dict[str, Any]], None] | None,
    key: str,
    resource: str,
    strategy: str,
    tuned: int,
) -> None:
    use_stack(stack_name, edit)
    made = program(stack_name)
    holder = made.get(
        "gpushare-config-configmap" if stack_name == "prod" else "gpushare-device-plugin-release"
    )
    at_most = with_data(holder, key, replicas_text(tuned, resource, strategy))
    assert messages_of("time-slicing-replicas-tuned", [at_most]) == []
    over = with_data(holder, key, replicas_text(tuned + 1, resource, strategy))
    (message,) = messages_of("time-slicing-replicas-tuned", [over])
    assert f"{resource} replicas {tuned + 1} exceeds the tuned maximum {tuned} = floor(0.9 x" in message


def test_underused_replicas_are_advised(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    cm = prod.get("gpushare-config-configmap")
    assert messages_of("time-slicing-replicas-underused", [cm]) == []
    (message,) = messages_of("time-slicing-replicas-underused", [with_data(cm, "l20", replicas_text(6))])
    assert "replicas 6 is below the tuned 8" in message


def test_a_stack_that_tunes_below_the_pack_ceiling_is_not_underused(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod", lambda config: config["gpushare:sharing"].update(utilizationCeiling=0.7))
    # floor(0.7 x 46068 / 4621) = 6: what the stack derives, so not under-used.
    cm = with_data(prod.get("gpushare-config-configmap"), "l20", replicas_text(6))
    assert messages_of("time-slicing-replicas-underused", [cm]) == []


def test_replicas_below_two_are_refused(prod: Program) -> None:
    cm = prod.get("gpushare-config-configmap")
    assert messages_of("time-slicing-replicas-minimum", [cm]) == []
    (message,) = messages_of("time-slicing-replicas-minimum", [with_data(cm, "l20", replicas_text(1))])
    assert 'key "l20": nvidia.com/gpu replicas 1 is below 2' in message


def test_shared_resources_must_fail_requests_greater_than_one(prod: Program) -> None:
    cm = prod.get("gpushare-config-configmap")
    assert messages_of("fail-requests-greater-than-one", [cm]) == []
    (message,) = messages_of(
        "fail-requests-greater-than-one", [with_data(cm, "t4", replicas_text(3, fail=False))]
    )
    assert 'key "t4"' in message and "failRequestsGreaterThanOne: true" in message


def test_old_or_undated_measurements_are_advised(
    prod: Program, use_stack: Callable[..., None], fixed_today: Callable[[date], None]
) -> None:
    fixed_today(date(2026, 1, 15))  # 228 days after the stacks' 2025-06-01
    recent = "2025-12-16"  # 30 days before

    def dated(config: dict[str, Any]) -> None:
        config["gpushare:pools"][0]["sharing"]["measuredAt"] = recent
        del config["gpushare:pools"][1]["sharing"]["measuredAt"]
        config["gpushare:sharing"]["fallback"]["measuredAt"] = recent

    use_stack("prod", dated)
    cm = prod.get("gpushare-config-configmap")
    (undated,) = messages_of("time-slicing-measurement-fresh", [cm])
    assert 'key "t4"' in undated and "no measuredAt" in undated
    use_stack("prod")
    old = messages_of("time-slicing-measurement-fresh", [cm], {"maxMeasurementAgeDays": 10_000})
    assert old == []
    stale = messages_of("time-slicing-measurement-fresh", [cm])
    # l20, t4 and the opted-in fallback `any` all rest on the placeholder 2025-06-01.
    assert len(stale) == 3 and all("older than 180 days" in m for m in stale)
    assert any('key "any"' in m and "stack config gpushare:sharing.fallback" in m for m in stale)
    use_stack("prod", lambda config: config["gpushare:sharing"].update(maxMeasurementAgeDays=30))
    tightened = messages_of("time-slicing-measurement-fresh", [cm], {"maxMeasurementAgeDays": 10_000})
    assert len(tightened) == 3 and "older than 30 days" in tightened[0]


@pytest.mark.parametrize(
    ("today", "advised"),
    [
        # 2025-06-01 + 180 days: June 30 - 1 + July 31 + August 31 + September 30 + October 31 = 152 days
        # to 2025-10-31, + 28 = 180 on 2025-11-28; the limit is "older than", so day 180 is still fresh.
        (date(2025, 11, 28), []),
        (date(2025, 11, 29), ["181 days ago, older than 180 days"] * 3),
        (date(2025, 6, 1), []),  # measured today (the loader's today, UTC+14)
    ],
)
def test_measurement_age_boundary(
    prod: Program,
    use_stack: Callable[..., None],
    fixed_today: Callable[[date], None],
    today: date,
    advised: list[str],
) -> None:
    fixed_today(today)
    use_stack("prod")
    stale = messages_of("time-slicing-measurement-fresh", [prod.get("gpushare-config-configmap")])
    assert [m.split("(")[1].split("), ")[1].split(". ")[0] for m in stale] == advised


def test_config_data_unknown_during_preview_is_skipped(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    cm = copy.deepcopy(prod.get("gpushare-config-configmap"))
    cm.props["data"]["l20"] = UNKNOWN
    assert messages_of("time-slicing-replicas-tuned", [cm]) == []
    cm.props["data"] = UNKNOWN
    for name in ("time-slicing-replicas-tuned", "device-plugin-config-valid", "config-key-exists"):
        assert messages_of(name, prod.but(cm)) == []


# --------------------------------------------------------------------------------------------------------
# 5-7, 9, 12, 14: plugin workloads and their configs


def test_invalid_configs_are_refused_for_the_version_deployed(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    assert messages_of("device-plugin-config-valid", prod.resources) == []
    broken = with_data(prod.get("gpushare-config-configmap"), "l20", replicas_text('"4"'))
    (message,) = messages_of("device-plugin-config-valid", prod.but(broken))
    assert 'key "l20": device plugin 0.14.5 refuses it' in message and "replicas" in message


def test_validation_follows_the_image_tag(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    newer_only = "version: v1\nflags:\n  migStrategy: none\n  deviceDiscoveryStrategy: bogus\n"
    cm = with_data(prod.get("gpushare-config-configmap"), "l20", newer_only)
    plugin = prod.get("gpushare-plugins-l20")
    assert messages_of("device-plugin-config-valid", [cm, plugin]) == []  # 0.14.5 ignores the key
    newer = copy.deepcopy(plugin)
    newer.props["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    )
    (message,) = messages_of("device-plugin-config-valid", [cm, newer])
    assert "device plugin 0.17.1 refuses it" in message and "device-discovery-strategy" in message


def test_helm_configs_are_validated_with_the_chart_version_and_its_values(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert messages_of("device-plugin-config-valid", staging.resources) == []
    release = copy.deepcopy(staging.get("gpushare-device-plugin-release"))
    release.props["values"]["deviceListStrategy"] = "bogus"
    messages = messages_of("device-plugin-config-valid", [release])
    assert messages and all("(value from a CLI/env override)" in m for m in messages)


def test_hostile_config_values_are_refused_not_expanded(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    # A 9x9 alias bomb and 50 000 nested brackets: go-yaml (the plugin's reader) refuses both, and so
    # does the pack, without expanding them (an expansion would not finish).
    use_stack("prod")
    bomb = "flags: {}\nl0: &l0 [" + ",".join(['"lol"'] * 9) + "]\n"
    bomb += "".join(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
    for text, reason in (
        (bomb, "document contains excessive aliasing"),
        ("flags: " + "[" * 50_000 + "]" * 50_000, "exceeded max depth of 10000"),
    ):
        cm = with_data(prod.get("gpushare-config-configmap"), "l20", text)
        messages = messages_of("device-plugin-config-valid", prod.but(cm))
        assert any('key "l20"' in m and reason in m for m in messages), messages


MPS_CONFIG = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 3\n"


def test_helm_configs_are_judged_with_the_charts_mps_root(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    # The 0.15+ chart sets MPS_ROOT={{ .Values.mps.root }} (default /run/nvidia/mps) in every plugin pod, so an
    # MPS config without `flags.mpsRoot` starts there, and only there.
    use_stack(HELM_MIG)
    release = copy.deepcopy(staging.get("gpushare-device-plugin-release"))
    release.props["values"]["config"]["map"]["mps"] = MPS_CONFIG
    assert messages_of("device-plugin-config-valid", [release]) == []
    release.props["values"]["mps"] = {"root": ""}
    (message,) = messages_of("device-plugin-config-valid", [release])
    assert 'key "mps"' in message and "using MPS requires --mps-root to be specified" in message


@pytest.mark.parametrize(("chart_version", "refused"), [("0.17.1", False), ("0.20.0", True)])
def test_helm_configs_follow_the_chart_version_to_0_20_0(
    staging: Program, use_stack: Callable[..., None], chart_version: str, refused: bool
) -> None:
    use_stack(HELM_MIG)
    release = copy.deepcopy(staging.get("gpushare-device-plugin-release"))
    release.props["version"] = chart_version
    policy = "version: v1\nflags:\n  plugin:\n    sharedDevicesAllocationPolicy: spread\n"
    release.props["values"]["config"]["map"]["policy"] = policy
    messages = messages_of("device-plugin-config-valid", [release])
    assert bool(messages) is refused
    if refused:
        assert "device plugin 0.20.0 refuses it" in messages[0] and "allocation-policy" in messages[0]


@pytest.mark.parametrize(
    ("version", "modelled"),
    [
        ((0, 14, 5), "0.14.5"),
        ((0, 13, 0), "0.14.5"),
        ((0, 15, 0), "0.17.1"),  # restructured, and no modelled release before it on that side
        ((0, 17, 1), "0.17.1"),
        ((0, 18, 2), "0.17.1"),
        ((0, 20, 0), "0.20.0"),
        ((0, 21, 0), "0.20.0"),
    ],
)
def test_plugin_versions_are_checked_with_the_nearest_earlier_modelled_release(
    version: tuple[int, int, int], modelled: str
) -> None:
    assert modelled_plugin_version(version, "0.14.5") == modelled


def test_a_directory_config_file_is_refused(prod: Program) -> None:
    assert messages_of("config-file-not-directory", prod.resources) == []
    plugin = copy.deepcopy(prod.get("gpushare-plugins-l20"))
    container = plugin.props["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--config-file", kube_names.CONFIG_MOUNT_DIR + "/"]
    (message,) = messages_of("config-file-not-directory", [plugin])
    assert f"is mounted at {kube_names.CONFIG_MOUNT_DIR}" in message
    container["args"] = []
    container["env"] = [{"name": "CONFIG_FILE", "value": kube_names.CONFIG_MOUNT_DIR}]
    assert len(messages_of("config-file-not-directory", [plugin])) == 1


def test_the_key_a_config_file_reads_must_exist(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    assert messages_of("config-key-exists", prod.resources) == []
    cm = copy.deepcopy(prod.get("gpushare-config-configmap"))
    del cm.props["data"]["l20"]
    messages = messages_of("config-key-exists", prod.but(cm))
    assert any("reads key 'l20'" in m for m in messages)
    assert any("node pool l20: label nvidia.com/device-plugin.config=l20" in m for m in messages)


def test_the_key_a_pool_label_selects_must_exist_in_the_chart_map(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert messages_of("config-key-exists", staging.resources) == []
    pool = copy.deepcopy(staging.get("gpushare-l20-pool"))
    pool.props["labels"][kube_names.LABEL_PLUGIN_CONFIG] = "l40s"
    (message,) = messages_of("config-key-exists", staging.but(pool))
    assert (
        "label nvidia.com/device-plugin.config=l40s" in message
        and "specified config l40s does not exist" in message
    )


def test_a_plugin_without_or_with_a_stale_checksum_does_not_restart(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    assert messages_of("plugin-restarts-on-config-change", prod.resources) == []
    changed = with_data(prod.get("gpushare-config-configmap"), "t4", replicas_text(2))
    (stale,) = messages_of("plugin-restarts-on-config-change", prod.but(changed))
    assert (
        stale.startswith("TKE DaemonSet (patched) kube-system/nvidia-device-plugin-daemonset")
        and "stale" in stale
    )
    plugin = copy.deepcopy(prod.get("gpushare-plugins-l20"))
    del plugin.props["spec"]["template"]["metadata"]["annotations"]
    (missing,) = messages_of(
        "plugin-restarts-on-config-change", [plugin, prod.get("gpushare-config-configmap")]
    )
    assert "has no gpushare.io/config-sha256 annotation" in missing


def test_the_chart_version_must_be_pinned(staging: Program) -> None:
    release = staging.get("gpushare-device-plugin-release")
    assert messages_of("helm-chart-pinned", [release]) == []
    for version in (None, "^0.17", "0.17.x", ">=0.15.0", "0.17", "0", "0.17.1.2"):
        unpinned = copy.deepcopy(release)
        if version is None:
            del unpinned.props["version"]
        else:
            unpinned.props["version"] = version
        (message,) = messages_of("helm-chart-pinned", [unpinned])
        assert "not an exact chart version" in message
    for version in ("0.17.1", "v0.17.1", "0.20.0-rc.1"):
        pinned = copy.deepcopy(release)
        pinned.props["version"] = version
        assert messages_of("helm-chart-pinned", [pinned]) == [], version


def test_top_level_chart_values_that_override_the_files_are_advised(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert messages_of("cli-flag-overrides-config", staging.resources) == []
    release = copy.deepcopy(staging.get("gpushare-device-plugin-release"))
    release.props["values"]["migStrategy"] = "mixed"
    messages = messages_of("cli-flag-overrides-config", [release])
    assert {m.split("config.map key ")[1] for m in messages} == {
        '"any". Leave the top-level value unset.',
        '"l20". Leave the top-level value unset.',
    }


# --------------------------------------------------------------------------------------------------------
# 8, 10, 11, 13, 15: placement and MIG


def test_tke_daemon_set_must_be_parked_or_adopted(
    prod: Program, staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    assert messages_of("one-device-plugin-per-node", prod.resources) == []
    unpatched = [r for r in prod.resources if r.type != DAEMON_SET_PATCH]
    messages = messages_of("one-device-plugin-per-node", unpatched)
    assert (
        len(messages) == 1
        and "node pool l20: 2 device plugins" in messages[0]
        and "no DaemonSetPatch parks it" in messages[0]
        and "managedPlugin.action optOut" in messages[0]
    )


def labelled(program_made: Program, pool: str, value: str | None) -> Res:
    """The program's node pool with TKE's switch label set to `value` (None: removed)."""
    res = copy.deepcopy(program_made.get(f"gpushare-{pool}-pool"))
    res.props["labels"].pop(kube_names.LABEL_DEVICE_ENABLE)
    if value is not None:
        res.props["labels"][kube_names.LABEL_DEVICE_ENABLE] = value
    return res


def test_opt_out_keeps_tke_plugin_off_without_a_patch(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert not [r for r in staging.resources if r.type == DAEMON_SET_PATCH]
    assert messages_of("one-device-plugin-per-node", staging.resources) == []
    assert messages_of("gpu-pool-labels", staging.resources) == []
    # One pool labelled `enable` by hand: TKE's plugin lands there beside the chart's, and the label
    # contradicts the opt-out.
    turned_on = staging.but(labelled(staging, "l20", "enable"))
    (beside,) = messages_of("one-device-plugin-per-node", turned_on)
    assert beside.startswith("node pool l20: 2 device plugins") and "TKE DaemonSet" in beside
    (refused,) = messages_of("gpu-pool-labels", turned_on)
    assert refused == (
        "node pool l20 (L20) is labelled nvidia-device-enable=enable, but the stack opts out of TKE's device "
        "plugin (managedPlugin.action optOut): TKE's DaemonSet runs on its nodes beside gpushare's plugin. "
        "Label it nvidia-device-enable=disable."
    )
    # No label at all: TKE labels its GPU nodes `enable` itself.
    unlabelled = staging.but(labelled(staging, "h20", None))
    assert len(messages_of("one-device-plugin-per-node", unlabelled)) == 1
    (lacks,) = messages_of("gpu-pool-labels", unlabelled)
    assert "node pool h20 (H20) lacks" in lacks and "nvidia-device-enable=disable" in lacks
    assert "TKE labels the nodes `enable`" in lacks


def test_opt_out_in_daemonsets_mode_selects_pools_without_tke_switch(
    use_stack: Callable[..., None], stack_document: Callable[[str], Any], write_stack: Callable[..., Any]
) -> None:
    def opt_out(config: dict[str, Any]) -> None:
        config["gpushare:sharing"]["devicePlugin"]["managedPlugin"] = {"action": "optOut"}

    document = stack_document("prod")
    opt_out(document["config"])
    made = program("prod", write_stack(document, "prod"))
    use_stack("prod", opt_out)
    assert not [r for r in made.resources if r.type == DAEMON_SET_PATCH]
    selectors = [
        r.props["spec"]["template"]["spec"]["nodeSelector"] for r in made.resources if r.type == DAEMON_SET
    ]
    # Both pools get their own DaemonSet now (nothing adopted), selected by the pool's own labels.
    assert selectors == [
        {"nvidia.com/device-plugin.config": "l20", "gpushare.io/pool": "l20"},
        {"nvidia.com/device-plugin.config": "t4", "gpushare.io/pool": "t4"},
    ]
    assert mandatory(all_messages(made.resources)) == {}
    # The DaemonSets still land when a pool is labelled `enable` by hand: TKE's beside them on t4.
    (beside,) = messages_of("one-device-plugin-per-node", made.but(labelled(made, "t4", "enable")))
    assert beside.startswith("node pool t4: 2 device plugins")


def test_mig_only_where_the_gpu_supports_it(staging: Program, use_stack: Callable[..., None]) -> None:
    use_stack(HELM_MIG)
    assert messages_of("mig-only-on-mig-capable-gpus", staging.resources) == []
    pool = copy.deepcopy(staging.get("gpushare-l20-pool"))
    pool.props["nodeConfig"]["gpuArgs"]["migEnable"] = True
    pool.props["labels"][kube_names.LABEL_MIG_CONFIG] = "all-1g.12gb"
    messages = messages_of("mig-only-on-mig-capable-gpus", [pool])
    assert len(messages) == 2 and all("L20 (Ada Lovelace) does not support MIG" in m for m in messages)


def test_a_mig_strategy_flag_on_a_gpu_without_mig_is_refused(use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    seed = yaml.safe_load(SEED_MISTAKES.read_text())["scenarios"]["mig_strategy_flag_override"]
    resources = [Res(r["type"], r["name"], r["props"]) for r in seed["resources"]]  # the seed's, see above
    messages = messages_of("mig-only-on-mig-capable-gpus", resources)
    assert any("runs with migStrategy single" in m and "L20" in m for m in messages), messages


def test_mig_layouts_must_fit_the_gpu(use_stack: Callable[..., None]) -> None:
    def eight_instances(config: dict[str, Any]) -> None:
        config["gpushare:pools"][0]["sharing"]["migLayout"] = {"1g.12gb": 8}

    use_stack("staging", eight_instances)
    (message,) = messages_of("mig-only-on-mig-capable-gpus", [])
    assert "gpushare:pools[0] (h20)" in message and "does not fit H20" in message


def test_mig_layout_underused_names_the_better_layout(use_stack: Callable[..., None]) -> None:
    use_stack("staging")
    assert messages_of("mig-layout-underused", []) == []  # staging runs what advise recommends

    def seven_small(config: dict[str, Any]) -> None:
        config["gpushare:pools"][0]["sharing"]["migLayout"] = {"1g.12gb": 7}

    use_stack("staging", seven_small)
    (message,) = messages_of("mig-layout-underused", [])
    # 7 x floor(0.9 x 11264 / 4621) = 7 x 2 = 14; 6 x 2 + floor(0.9 x 22138 / 4621) = 12 + 4 = 16
    assert message.startswith(
        "stack config gpushare:pools[0] (h20): MIG layout 7x 1g.12gb yields 14 slot(s) in 7"
    )
    assert 'migLayout {"1g.12gb": 6, "1g.24gb": 1}, layoutName h20-6x1g.12gb-1x1g.24gb' in message

    def unshared(config: dict[str, Any]) -> None:
        seven_small(config)
        del config["gpushare:pools"][0]["sharing"]["timeSlicing"]

    use_stack("staging", unshared)  # one slot per instance: fewer, larger instances are a choice, not waste
    assert messages_of("mig-layout-underused", []) == []


def test_mig_layout_underused_reads_a_hand_edited_mig_parted_config(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    edited = copy.deepcopy(staging.get("gpushare-h20-mig-mig-parted"))
    assert messages_of("mig-layout-underused", [edited]) == []  # the program writes what advise recommends
    edited.props["data"]["config.yaml"] = (
        "version: v1\nmig-configs:\n  all-1g.12gb:\n  - devices: all\n"
        '    mig-enabled: true\n    mig-devices:\n      "1g.12gb": 7\n'
    )
    (message,) = messages_of("mig-layout-underused", [edited])
    assert 'ConfigMap kube-system/gpushare-mig-parted-config-h20 key "config.yaml"' in message
    assert "mig-configs.all-1g.12gb[0] (pool h20): MIG layout 7x 1g.12gb yields 14" in message


def test_a_mig_pool_must_not_ask_for_a_driver_too_old_for_mig(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    h20, l20 = staging.get("gpushare-h20-pool"), staging.get("gpushare-l20-pool")
    assert messages_of("mig-driver-supported", staging.resources) == []  # no driver chosen: TKE's default

    def with_driver(pool: Res, version: str) -> Res:
        changed = copy.deepcopy(pool)
        changed.props["nodeConfig"]["gpuArgs"]["driver"] = {"version": version, "name": f"NVIDIA-{version}"}
        return changed

    # NVIDIA's floor for H20 MIG is 535.161.07: an earlier 535 release and an older branch are refused.
    for too_old in ("535.104.05", "470.82.01", "525"):
        (message,) = messages_of("mig-driver-supported", [with_driver(h20, too_old)])
        assert f"driver {too_old} is too old for MIG on H20" in message and "535.161.07" in message
    # The floor itself, newer ones, and a bare branch that may hold a good release pass.
    for fine in ("535.161.07", "535.183.01", "550.54.15", "535"):
        assert messages_of("mig-driver-supported", [with_driver(h20, fine)]) == []
    # Without MIG the rule does not apply (L20 time-slicing on an old driver).
    assert messages_of("mig-driver-supported", [with_driver(l20, "470.82.01")]) == []


def test_mig_time_slicing_needs_the_mixed_strategy(staging: Program) -> None:
    release = staging.get("gpushare-device-plugin-release")
    assert messages_of("mig-time-slicing-needs-mixed", [release]) == []
    single = with_data(release, "h20", replicas_text(2, "nvidia.com/mig-1g.12gb", "single"))
    (message,) = messages_of("mig-time-slicing-needs-mixed", [single])
    assert 'key "h20": time-slices nvidia.com/mig-1g.12gb with migStrategy single' in message


def test_the_chart_needs_nfd_or_the_gpu_present_label(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    assert messages_of("helm-plugin-schedulable", staging.resources) == []
    assert messages_of("gpu-pool-labels", staging.resources) == []
    unlabelled = copy.deepcopy(staging.resources)
    for res in unlabelled:
        res.props.get("labels", {}).pop(kube_names.LABEL_GPU_PRESENT, None)
    (message,) = messages_of("helm-plugin-schedulable", unlabelled)
    assert "schedules on no node of pool(s) h20, l20 (on no GPU pool at all)" in message
    assert len(messages_of("gpu-pool-labels", unlabelled)) == 2
    with_gfd = [copy.deepcopy(r) for r in unlabelled]
    next(r for r in with_gfd if r.name == "gpushare-device-plugin-release").props["values"]["gfd"][
        "enabled"
    ] = True
    assert messages_of("helm-plugin-schedulable", with_gfd) == []
    assert messages_of("gpu-pool-labels", with_gfd) == []


def test_gpu_pools_carry_the_plugin_labels(prod: Program, use_stack: Callable[..., None]) -> None:
    use_stack("prod")
    assert messages_of("gpu-pool-labels", prod.resources) == []
    pool = copy.deepcopy(prod.get("gpushare-t4-pool"))
    del pool.props["labels"][kube_names.LABEL_DEVICE_ENABLE]
    del pool.props["labels"][kube_names.LABEL_GPU_MODEL]  # still a GPU pool: GN7.2XLARGE32 is in the catalog
    (message,) = messages_of("gpu-pool-labels", [pool])
    assert message.startswith("node pool t4 (T4) lacks") and "nvidia-device-enable=enable" in message


def test_unknown_labels_and_args_during_preview_are_skipped(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    use_stack("prod")
    resources = copy.deepcopy(prod.resources)
    for res in resources:
        if "labels" in res.props:
            res.props["labels"] = UNKNOWN
        if res.name == "gpushare-plugins-l20":
            res.props["spec"]["template"]["spec"]["containers"][0]["args"] = UNKNOWN
    assert mandatory(all_messages(resources)) == {}


# --------------------------------------------------------------------------------------------------------
# 16: credentials


def test_a_credential_typed_into_the_program_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": "typed-in-key"}
    (message, urn) = stack_messages(rules.NO_PLAINTEXT_CLOUD_SECRETS, [provider(secretKey=secret)])[0]
    assert "`secretKey` is set in the program" in message and "TENCENTCLOUD_SECRET_KEY" in message
    assert "typed-in-key" not in message and urn == provider().urn
    # A driver that leaves provider resources out still shows each resource's provider.
    config_map = PolicyResource(CONFIG_MAP, {}, "urn:cm", "cm", OPTIONS, None, None, [], {})
    config_map.provider = PolicyProviderResource(
        TENCENTCLOUD_PROVIDER, engine_props({"secretKey": secret}), provider().urn, "tencentcloud"
    )
    reported: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        reported.append(message)

    rules.NO_PLAINTEXT_CLOUD_SECRETS.validate(StackValidationArgs([config_map]), report)
    assert len(reported) == 1
    # The provider SDK copies the variable into its inputs: the same value from the environment is fine.
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "typed-in-key")
    assert stack_messages(rules.NO_PLAINTEXT_CLOUD_SECRETS, [provider(secretKey=secret)]) == []


def test_credentials_in_the_stack_config_must_be_secrets(
    monkeypatch: pytest.MonkeyPatch, use_stack: Callable[..., None]
) -> None:
    use_stack("prod", lambda config: config.update({"tencentcloud:secretKey": "from-config"}))
    resources = [provider(secretKey="from-config")]
    # Which keys are secrets reaches the pack only through a driver's PULUMI_CONFIG_SECRET_KEYS; the pack
    # never reads the stack file (it is published alone), so without the variable it cannot tell.
    monkeypatch.delenv("PULUMI_CONFIG_SECRET_KEYS", raising=False)
    assert messages_of("no-plaintext-cloud-secrets", resources) == []
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["gpushare:kubeconfig"]))
    (message,) = messages_of("no-plaintext-cloud-secrets", resources)
    assert message.endswith(
        "stack config tencentcloud:secretKey is stored in plain text in Pulumi.prod.yaml; set it with "
        "`pulumi config set --secret tencentcloud:secretKey ...`, or drop it and use the environment."
    )
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["tencentcloud:secretKey"]))
    assert messages_of("no-plaintext-cloud-secrets", resources) == []


# --------------------------------------------------------------------------------------------------------
# Finding configs and plugins by content


def test_only_device_plugin_configs_and_plugins_are_considered(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    # Hand-built on purpose: objects the program does not make (another tool's mig-parted file, an app's
    # ConfigMap, another chart), which the policies must leave alone.
    mig_parted = Res(
        CONFIG_MAP,
        "mig-parted",
        {
            "metadata": {"name": "gpushare-mig-parted-config-h20", "labels": {kube_names.LABEL_POOL: "h20"}},
            "data": {
                "config.yaml": "version: v1\nmig-configs:\n  h20-6x1g.12gb-1x1g.24gb:\n  - devices: all\n"
                "    mig-enabled: true\n    mig-devices: {1g.12gb: 7}\n"
            },
        },
        "staging",
    )
    unrelated = Res(CONFIG_MAP, "app", {"data": {"replicas": "1", "a": "b: [1"}}, "staging")
    other_chart = copy.deepcopy(staging.get("gpushare-device-plugin-release"))
    other_chart.name, other_chart.props["chart"] = "other", "ingress-nginx"
    other_chart.props["values"]["config"]["map"]["l20"] = replicas_text(99)
    found = all_messages([*staging.resources, mig_parted, unrelated, other_chart])
    assert mandatory(found) == {}
    # A mig-parted layout that does not fit its pool's GPU is caught, though.
    too_big = copy.deepcopy(mig_parted)
    too_big.props["data"]["config.yaml"] = too_big.props["data"]["config.yaml"].replace("7}", "8}")
    (message,) = messages_of("mig-only-on-mig-capable-gpus", [*staging.resources, too_big])
    assert "(pool h20, H20)" in message


def test_chart_before_0_15_has_no_default_affinity(staging: Program, use_stack: Callable[..., None]) -> None:
    use_stack(HELM_MIG)
    resources = copy.deepcopy(staging.resources)
    for res in resources:
        res.props.get("labels", {}).pop(kube_names.LABEL_GPU_PRESENT, None)
        if res.name == "gpushare-device-plugin-release":
            res.props["version"] = "0.14.5"
    assert messages_of("helm-plugin-schedulable", resources) == []
    assert messages_of("gpu-pool-labels", resources) == []
    assert messages_of("device-plugin-config-valid", resources) == []  # checked as 0.14.5


def test_without_an_operator_the_pools_own_mig_parted_config_must_hold_its_label(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    use_stack(HELM_MIG)
    mig_parted = staging.get("gpushare-h20-mig-mig-parted")  # the pool's own, for its boot-time unit
    assert messages_of("mig-config-exists", staging.resources) == []
    renamed = copy.deepcopy(staging.get("gpushare-h20-pool"))
    renamed.props["labels"][kube_names.LABEL_MIG_CONFIG] = "all-1g.24gb"
    (message,) = messages_of("mig-config-exists", [renamed, mig_parted])
    assert "label nvidia.com/mig.config=all-1g.24gb names no config in ConfigMap" in message
    assert "(configs: h20-6x1g.12gb-1x1g.24gb)" in message
    # No MIG manager config in the stack at all: nothing to hold the label against.
    assert messages_of("mig-config-exists", [renamed]) == []


def test_the_charts_default_key_must_exist(staging: Program, use_stack: Callable[..., None]) -> None:
    use_stack(HELM_MIG)
    release = staging.get("gpushare-device-plugin-release")
    assert messages_of("config-key-exists", staging.resources) == []

    def with_config(**config: Any) -> list[Res]:
        changed = copy.deepcopy(release)
        changed.props["values"]["config"].update(config)
        for key in [k for k, v in config.items() if v is None]:
            del changed.props["values"]["config"][key]
        return staging.but(changed)

    (missing,) = messages_of("config-key-exists", with_config(default="t4"))
    assert "config.default 't4' is not a key of" in missing and "keys: any, h20, l20" in missing
    # No default: the chart's fallbacks (named: key `default`; single: the only key) cannot resolve 3 keys.
    (unresolved,) = messages_of("config-key-exists", with_config(default=None))
    assert "no config.default and no fallback strategy (named, single) resolves" in unresolved
    assert messages_of("config-key-exists", with_config(default=None, fallbackStrategies=["empty"])) == []


def test_tag_only_plugin_images_are_advised_and_digests_pass(prod: Program) -> None:
    plugin = prod.get("gpushare-plugins-l20")
    (message,) = messages_of("plugin-image-pinned", [plugin])
    assert "sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5 is named by tag only" in message
    digest = "sha256:" + "0123456789abcdef" * 4  # 64 hex digits, as an OCI sha256 digest has
    for image in (
        f"sgccr.ccs.tencentyun.com/tkeimages/nvidia-device-plugin:v0.14.5@{digest}",
        f"nvcr.io/nvidia/k8s-device-plugin@{digest}",
    ):
        pinned = copy.deepcopy(plugin)
        pinned.props["spec"]["template"]["spec"]["containers"][0]["image"] = image
        assert messages_of("plugin-image-pinned", [pinned]) == []
    # TKE's DaemonSet patch sets no image: nothing of ours to pin.
    assert messages_of("plugin-image-pinned", [prod.get("gpushare-managed-plugin-patch")]) == []


def test_the_device_plugin_charts_image_is_judged_on_its_release(staging: Program) -> None:
    # The engine hands the pack the Release alone, so the image its DaemonSet will run is read from the
    # values: chart 0.17.1's `fullimage` is image.repository:image.tag, an empty tag being v<appVersion>,
    # and its values.yaml repository nvcr.io/nvidia/k8s-device-plugin. The program sets no image here.
    release = staging.get("gpushare-device-plugin-release")
    assert "image" not in release.props["values"]
    (message,) = messages_of("plugin-image-pinned", [release])
    assert message == (
        "Helm release nvidia-device-plugin/nvidia-device-plugin (chart nvidia-device-plugin 0.17.1): image "
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1 is named by tag only; a tag can be moved to other bytes "
        "underneath the stack. Pin it: devicePlugin.image: <repo>:<tag>@sha256:<digest> (the digest a node "
        "runs: `kubectl get pods -n <ns> -o jsonpath='{..imageID}'`)."
    )
    digest = "sha256:" + "0123456789abcdef" * 4

    def with_image(image: dict[str, Any], version: Any = "0.17.1") -> Res:
        changed = copy.deepcopy(release)
        changed.props["values"]["image"] = image
        changed.props["version"] = version
        return changed

    (mirrored,) = messages_of(
        "plugin-image-pinned", [with_image({"repository": "mirror/dp", "tag": "v0.17.1"})]
    )
    assert "image mirror/dp:v0.17.1 is named by tag only" in mirrored
    (own_tag,) = messages_of("plugin-image-pinned", [with_image({"tag": "v0.17.0"})])
    assert "image nvcr.io/nvidia/k8s-device-plugin:v0.17.0 is named" in own_tag
    (v_version,) = messages_of("plugin-image-pinned", [with_image({}, version="v0.16.2")])
    assert "image nvcr.io/nvidia/k8s-device-plugin:v0.16.2 is named" in v_version  # one v, not two
    # Pinned: a digest after the tag (the chart joins repository and tag with one colon).
    assert messages_of("plugin-image-pinned", [with_image({"tag": f"v0.17.1@{digest}"})]) == []
    # Not judged: an unknown tag (preview), an empty tag on a chart of no exact version (its appVersion is
    # not known), and the operator's release, whose operator names the plugin's image at run time.
    assert messages_of("plugin-image-pinned", [with_image({"tag": UNKNOWN})]) == []
    assert messages_of("plugin-image-pinned", [with_image({"repository": UNKNOWN, "tag": "v1"})]) == []
    assert messages_of("plugin-image-pinned", [with_image({"tag": ""}, version=None)]) == []
    assert messages_of("plugin-image-pinned", [with_image({}, version="~0.17")]) == []
    operator = Res(
        HELM_RELEASE,
        "op",
        {"chart": "gpu-operator", "version": "v26.7.0", "namespace": "gpu-operator", "values": {}},
    )
    assert messages_of("plugin-image-pinned", [operator]) == []


def test_the_operator_release_is_modelled_as_plugin_0_20_0_on_nfd_gpu_nodes() -> None:
    # Hand-built on purpose: the chart's defaults alone (empty values), which the program never sends.
    release = Resource(
        HELM_RELEASE,
        "urn:pulumi:staging::gpushare::kubernetes:helm.sh/v3:Release::op",
        "op",
        {"chart": "gpu-operator", "version": "v26.7.0", "namespace": "gpu-operator", "values": {}},
    )
    plugin = helm_plugin(release)
    assert plugin is not None and plugin.is_operator
    assert plugin.plugin_version == "0.20.0"  # the chart's values.yaml devicePlugin.version
    # Chart defaults: NFD on, mig.strategy `single` handed to the plugin as MIG_STRATEGY.
    assert plugin.deploys_nfd and plugin.overrides() == {"migStrategy": "single"}
    assert plugin.placement is not None
    assert plugin.placement.lands_on({NFD_NVIDIA_PCI_LABEL: "true"})
    assert not plugin.placement.lands_on(
        {NFD_NVIDIA_PCI_LABEL: "true", "nvidia.com/gpu.deploy.device-plugin": "false"}
    )
    assert not plugin.placement.lands_on({})
