"""The workload rules of the pack (policies/gpushare_policies/workload_rules.py, gpushare/workload_fit.py)
over another team's program (tests/fixtures/foreign_program/workloads.yaml) and over gpushare's own.

The plan is what `gpushare plan --stack prod --policy-config` prints, with the T4 pool tainted
`dedicated=nlp:NoSchedule` in the stack file it reads. Expected numbers from the seed, not recomputed:
L20 4621 of 46068 MiB -> 8 slots a GPU, one node at nodes.max -> 8 slots; T4 4401 of 15360 MiB -> 3.
A slot's budget is floor(0.9 x memory / replicas): L20 floor(41461.2 / 8) = 5182 MiB, T4 13824 / 3 = 4608.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import typing
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from conftest import FIXTURES, PROJECT_DIR
from pulumi_policy import EnforcementLevel, StackValidationPolicy
from test_policies import Res, _isolated_environment, program, stack_messages, use_stack

from gpushare import workload_fit
from gpushare.cli import main as cli_main
from gpushare.plan import build_plan
from gpushare.pool_offers import (
    PLAN_PROPERTY,
    PLAN_SCHEMA,
    RESOURCE_OFFERS,
    WORKLOAD_POLICIES,
    PoolOffer,
    Taint,
    offers_from_json,
    plan_json,
    pool_offers,
)
from gpushare.stack.loading import from_config_values, load_stack
from gpushare.stack.model import PoolSharing, StackConfig
from gpushare_policies import rules

__all__ = ["_isolated_environment", "use_stack"]  # fixtures used by name

WORKLOADS = FIXTURES / "foreign_program" / "workloads.yaml"
T4_TAINT = {"key": "dedicated", "value": "nlp", "effect": "NoSchedule"}

# Each faulty workload's one finding with the plan: (policy, message). The healthy ones get none.
EXPECTED = {
    "two-gpus": (
        "workload-gpu-request",
        "Deployment team-a/two-gpus: container llm asks nvidia.com/gpu: 2 on pool l20, which shares it with "
        "failRequestsGreaterThanOne: the plugin refuses the pod at admission (UnexpectedAdmissionError). Ask "
        "for nvidia.com/gpu: 1 per container and run 2 times as many replicas.",
    ),
    "requests-only": (
        "workload-gpu-request",
        "Deployment team-a/requests-only: container asr asks nvidia.com/gpu requests 1, limits unset: "
        "Kubernetes admits an extended resource only with requests equal to limits. Set both to 1 (or set "
        "limits alone).",
    ),
    "mig-on-l20": (
        "workload-gpu-resource-offered",
        "Deployment team-a/mig-on-l20: asks nvidia.com/mig-1g.12gb, which pool l20 it reaches does not offer: "
        "l20 (time-slicing, migStrategy none) offers nvidia.com/gpu. Its pods stay Pending; ask for one of "
        "those names, or select a pool that offers nvidia.com/mig-1g.12gb.",
    ),
    "untolerated-t4": (
        "workload-tolerates-pool-taints",
        "Deployment team-a/untolerated-t4: pool t4 offering nvidia.com/gpu taints its nodes "
        "dedicated=nlp:NoSchedule, which its pods do not tolerate: they stay Pending. Add tolerations for "
        "dedicated=nlp:NoSchedule.",
    ),
    "no-pool": (
        "workload-fits-pool-advisory",
        "Pod team-a/no-pool: asks nvidia.com/gpu with no nodeSelector or affinity that keeps it on a gpushare "
        "pool: it lands on whichever node advertises the resource, pools sized for other services or GPU "
        "nodes of no pool. Select its pool: nodeSelector gpushare.io/pool: <l20|t4>.",
    ),
    # 12 replicas x 1 slot on L20's 8: 4 wait.
    "over-replicated": (
        "workload-fits-pool-advisory",
        "Deployment team-a/over-replicated: 12 replicas need 12 nvidia.com/gpu slots; pool l20 has 8 at "
        "nodes.max (l20: 1 node x 1 GPU x 8 slots): 4 pods stay Pending. At most 8 replicas fit (or raise "
        "nodes.max).",
    ),
    "autoscaled": (
        "workload-fits-pool-advisory",
        "Deployment team-a/autoscaled: HorizontalPodAutoscaler team-a/autoscaled may scale it to maxReplicas "
        "12 = 12 nvidia.com/gpu slots; pool l20 has 8 at nodes.max (l20: 1 node x 1 GPU x 8 slots). Set "
        "maxReplicas: 8.",
    ),
    # Kubernetes' defaults at 3 replicas: maxSurge ceil(0.75) = 1, maxUnavailable floor(0.75) = 0; T4 has 3.
    "full-t4": (
        "workload-fits-pool-advisory",
        "Deployment team-a/full-t4: a rolling update adds 1 surge pod (maxSurge 25%) and removes no old pod "
        "first (maxUnavailable 25% of 3 = 0), but 3 replicas leave 0 of 3 nvidia.com/gpu slots free: the "
        "surge pod waits for a slot and the rollout never finishes. Set maxSurge: 0 and maxUnavailable: 1 "
        "(one pod replaced at a time), or keep 1 slot free with at most 2 replicas.",
    ),
    "big-model": (
        "workload-fits-pool-advisory",
        "Deployment team-a/big-model: declares 6000 MiB of GPU memory (gpushare.io/measured-mib), above the "
        "5182 MiB a nvidia.com/gpu slot of pool l20 is budgeted (floor(0.9 x 46068 MiB L20 / 8)): on a shared "
        "GPU it crowds out its neighbours. Bring it to 5182 MiB or less, or re-tune the pool for it (gpushare "
        "tune --gpu L20 --measured-mib 6000).",
    ),
    "nightly": (
        "workload-fits-pool-advisory",
        "CronJob team-a/nightly: 9 parallel pods need 9 nvidia.com/gpu slots; pool l20 has 8 at nodes.max "
        "(l20: 1 node x 1 GPU x 8 slots): 1 pod stays Pending. At most 8 parallel pods fit (or raise "
        "nodes.max).",
    ),
}
NOT_JUDGED = (
    "the stack has no gpushare: config and the policy config no gpushare plan: GPU workloads judged only by "
    "what they carry (Deployment team-a/nlp-l20, StatefulSet team-a/embed-t4, ReplicaSet team-a/rerank-l20, "
    "Job team-a/eval-l20, DaemonSet team-a/gpu-probe, Deployment team-a/two-gpus, Deployment "
    "team-a/requests-only, Deployment team-a/mig-on-l20, Deployment team-a/untolerated-t4, Pod team-a/no-pool, "
    "Deployment team-a/over-replicated, Deployment team-a/autoscaled, Deployment team-a/full-t4, Deployment "
    "team-a/big-model, CronJob team-a/nightly). Not judged: the resource names their pools offer, the pools' "
    "taints, requests above one on shared pools, replicas, maxReplicas and the rollout's surge against the "
    "pools' slots, declared memory against the per-slot budget; pass the plan: gpushare plan --stack <stack> "
    "--policy-config > plan.json, then pulumi preview --policy-pack-config plan.json."
)


def foreign_resources() -> list[Res]:
    document = yaml.safe_load(WORKLOADS.read_text())
    return [Res(r["type"], r["name"], r["properties"], document["stack"]) for r in document["resources"]]


@pytest.fixture(scope="module")
def plan_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`gpushare plan --stack prod --policy-config` over prod's stack file with the T4 pool tainted."""
    project = tmp_path_factory.mktemp("tainted")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", project / "Pulumi.yaml")
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    t4 = next(p for p in document["config"]["gpushare:pools"] if p["name"] == "t4")
    t4["taints"] = [T4_TAINT]
    (project / "Pulumi.prod.yaml").write_text(yaml.safe_dump(document))
    out = io.StringIO()
    assert cli_main.main(["plan", "--stack", "prod", "--dir", str(project), "--policy-config"], out=out) == 0
    config: dict[str, Any] = json.loads(out.getvalue())
    return config


def findings(resources: list[Res], config: dict[str, Any] | None) -> dict[str, list[tuple[str, str]]]:
    """Workload resource name (or "stack") -> [(policy, message)] over every workload policy."""
    found: dict[str, list[tuple[str, str]]] = {}
    for name in WORKLOAD_POLICIES:
        policy = rules.POLICIES_BY_NAME[name]
        assert isinstance(policy, StackValidationPolicy)
        for message, urn in stack_messages(policy, resources, (config or {}).get(name)):
            found.setdefault(urn.rpartition("::")[2] if urn else "stack", []).append((name, message))
    return found


def test_plan_policy_config_holds_the_plan_for_every_workload_policy(plan_config: dict[str, Any]) -> None:
    assert sorted(plan_config) == sorted(WORKLOAD_POLICIES)
    plan = plan_config["workload-fits-pool"][PLAN_PROPERTY]
    assert all(entry == {PLAN_PROPERTY: plan} for entry in plan_config.values())
    jsonschema.validate(plan, PLAN_SCHEMA)  # what the CLI checks `--policy-pack-config` against
    by_pool = {p["name"]: p for p in plan["pools"]}
    assert by_pool["l20"]["resources"] == [
        {
            "name": "nvidia.com/gpu",
            "slotsPerGpu": 8,
            "budgetMiB": 5182,
            "budgetRule": "floor(0.9 x 46068 MiB L20 / 8)",
            "replicas": 8,  # a whole L20 time-sliced 8 ways
        }
    ]
    assert by_pool["t4"]["resources"][0]["slotsPerGpu"] == 3
    assert by_pool["t4"]["resources"][0]["budgetMiB"] == 4608
    assert by_pool["t4"]["taints"] == [T4_TAINT]
    assert by_pool["l20"]["nodeLabels"] == {
        "gpushare.io/gpu-model": "L20",
        "gpushare.io/pool": "l20",
        "nvidia-device-enable": "enable",
        "nvidia.com/device-plugin.config": "l20",
    }
    assert (by_pool["l20"]["maxNodes"], by_pool["l20"]["gpusPerNode"]) == (1, 1)


def test_each_faulty_workload_gets_exactly_its_finding_and_the_healthy_none(
    plan_config: dict[str, Any],
) -> None:
    found = findings(foreign_resources(), plan_config)
    assert found == {name: [finding] for name, finding in EXPECTED.items()}


def test_the_fixtures_expectations_name_the_same_policies() -> None:
    document = yaml.safe_load(WORKLOADS.read_text())
    declared = {r["name"]: r["expect"][0] for r in document["resources"] if "expect" in r}
    assert declared == {name: policy for name, (policy, _) in EXPECTED.items()}


def test_without_the_plan_the_advisory_says_what_was_not_judged() -> None:
    found = findings(foreign_resources(), None)
    # What a workload carries is still judged: requests without limits cannot be admitted.
    assert found == {
        "requests-only": [EXPECTED["requests-only"]],
        "stack": [("workload-fits-pool-advisory", NOT_JUDGED)],
    }


def test_the_fixes_the_messages_name_make_the_findings_go(plan_config: dict[str, Any]) -> None:
    fixed = {r.name + r.type: r for r in foreign_resources()}

    def spec(name: str, kind: str = "apps/v1:Deployment") -> dict[str, Any]:
        props: dict[str, Any] = fixed[f"{name}kubernetes:{kind}"].props["spec"]
        return props

    spec("full-t4")["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    spec("over-replicated")["replicas"] = 8
    spec("autoscaled", "autoscaling/v2:HorizontalPodAutoscaler")["maxReplicas"] = 8
    spec("nightly", "batch/v1:CronJob")["jobTemplate"]["spec"]["parallelism"] = 8
    spec("two-gpus")["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    spec("big-model")["template"]["metadata"]["annotations"] = {"gpushare.io/measured-mib": "5182"}
    fixed_names = {"full-t4", "over-replicated", "autoscaled", "nightly", "two-gpus", "big-model"}
    assert findings([r for r in fixed.values() if r.name in fixed_names], plan_config) == {}


def test_gpushares_own_stacks_pass_the_workload_rules(use_stack: Any) -> None:
    for stack in ("prod", "staging", "dev"):
        use_stack(stack)
        assert findings(program(stack).resources, None) == {}, stack


def test_in_gpushares_own_program_what_may_wait_is_mandatory(use_stack: Any) -> None:
    use_stack("prod")
    over = next(r for r in foreign_resources() if r.name == "over-replicated")
    own = Res(over.type, over.name, over.props, "prod")
    found = findings([*program("prod").resources, own], None)
    assert found == {"over-replicated": [("workload-fits-pool", EXPECTED["over-replicated"][1])]}
    # Its own level, not the pack's (advisory on programs without gpushare: config): it speaks only in
    # gpushare's own program, where what may wait blocks.
    assert rules.POLICIES_BY_NAME["workload-fits-pool"].enforcement_level == EnforcementLevel.MANDATORY


def test_a_misspelt_plan_key_is_reported(plan_config: dict[str, Any]) -> None:
    config = {"gpushareplan": plan_config["workload-gpu-request"][PLAN_PROPERTY]}
    policy = rules.POLICIES_BY_NAME["workload-gpu-request"]
    assert isinstance(policy, StackValidationPolicy)
    messages = [m for m, _ in stack_messages(policy, [], config)]
    assert messages == [
        "policy config: unknown property 'gpushareplan'; this policy takes gpusharePlan (a misspelt key would "
        "leave the default in force). Fix the --policy-pack-config file."
    ]


# --------------------------------------------------------------------------------------------------------
# What each pool mode offers


def _edited_stack(stack: str, edit: Any = None) -> StackConfig:
    """The repository's stack `stack`, its config document changed by `edit` first, as the loader reads it."""
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    if edit is not None:
        edit(document)
    values = {k if ":" in k else f"gpushare:{k}": v for k, v in document.items()}
    return from_config_values(values, stack=stack, source=f"Pulumi.{stack}.yaml", secret_keys=set())


def _staging_h20(layout: dict[str, int], layout_name: str, measured_mib: int | None) -> StackConfig:
    """Staging with its H20 pool cut into `layout`, time-sliced at `measured_mib`, or not at all (None)."""

    def edit(document: dict[str, Any]) -> None:
        h20 = document["gpushare:pools"][0]["sharing"]
        h20.update(migLayout=layout, layoutName=layout_name)
        if measured_mib is None:
            del h20["timeSlicing"]
        else:
            h20["timeSlicing"]["measuredMiB"] = measured_mib

    return _edited_stack("staging", edit)


def _offers(stack: str, edit: Any = None) -> dict[str, list[tuple[str, int, int]]]:
    config = _edited_stack(stack, edit)
    return {
        o.pool: [(r.resource, r.slots_per_gpu, r.budget_mib) for r in o.resources]
        for o in pool_offers(build_plan(config))
    }


def test_time_slicing_offers_the_tuned_slots_and_budget() -> None:
    assert _offers("prod") == {"l20": [("nvidia.com/gpu", 8, 5182)], "t4": [("nvidia.com/gpu", 3, 4608)]}


def test_mixed_mig_offers_each_profile_time_sliced() -> None:
    # Staging's H20: 6 x 1g.12gb (11264 MiB) at 2 replicas, 1 x 1g.24gb (22138 MiB) at 4 (4621 MiB measured):
    # budgets floor(0.9 x 11264 / 2) = floor(5068.8) = 5068, floor(0.9 x 22138 / 4) = floor(4981.05) = 4981.
    assert _offers("staging")["h20"] == [
        ("nvidia.com/mig-1g.12gb", 12, 5068),
        ("nvidia.com/mig-1g.24gb", 4, 4981),
    ]


def test_single_mig_offers_every_instance_as_a_gpu() -> None:
    def single(config: dict[str, Any]) -> None:
        h20 = config["gpushare:pools"][0]
        h20["sharing"] = {"mode": "mig", "migLayout": {"1g.12gb": 7}}

    # 7 x 1g.12gb (11264 MiB) as nvidia.com/gpu, not time-sliced: floor(0.9 x 11264) = floor(10137.6) = 10137.
    assert _offers("staging", single)["h20"] == [("nvidia.com/gpu", 7, 10137)]


def test_mps_budget_is_the_client_limit_with_the_ceiling() -> None:
    def mps(config: dict[str, Any]) -> None:
        config["gpushare:pools"][0]["sharing"]["mode"] = "mps"

    # Dev's T4 under MPS: 3 replicas, client limit 15360 // 3 = 5120 MiB, budget floor(0.9 x 5120) = 4608.
    # Dev's own MPS pool l20: 8 clients, limit 46068 // 8 = 5758 MiB, budget floor(0.9 x 5758) = 5182.
    assert _offers("dev", mps) == {"t4": [("nvidia.com/gpu", 3, 4608)], "l20": [("nvidia.com/gpu", 8, 5182)]}


def test_exclusive_offers_one_slot_a_gpu() -> None:
    def exclusive(config: dict[str, Any]) -> None:
        config["gpushare:pools"][0]["sharing"] = {"mode": "exclusive"}

    # floor(0.9 x 15360) = 13824; dev's MPS pool l20 as above: 8 slots of floor(0.9 x 46068 // 8) = 5182.
    assert _offers("dev", exclusive) == {
        "t4": [("nvidia.com/gpu", 1, 13824)],
        "l20": [("nvidia.com/gpu", 8, 5182)],
    }


def test_plan_json_of_every_repo_stack_fits_the_schema() -> None:
    for stack in ("prod", "staging", "dev"):
        jsonschema.validate(plan_json(build_plan(load_stack(PROJECT_DIR, stack))), PLAN_SCHEMA)


# --------------------------------------------------------------------------------------------------------
# The judge on its own: other modes, degenerate workloads


def _deployment(pool: str, resources: dict[str, Any], **spec: Any) -> workload_fit.Workload:
    pod = {"nodeSelector": {"gpushare.io/pool": pool}, "containers": [{"name": "c", "resources": resources}]}
    obj = {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"template": {"spec": pod}, **spec},
    }
    workload = workload_fit.workload_of("Deployment", obj)
    assert workload is not None
    return workload


def _staging() -> tuple[PoolOffer, ...]:
    return pool_offers(build_plan(load_stack(PROJECT_DIR, "staging")))


def test_nvidia_gpu_on_a_mixed_mig_pool_is_not_offered() -> None:
    (found,) = workload_fit.judge(_deployment("h20", {"limits": {"nvidia.com/gpu": 1}}), _staging())
    assert (found.rule, found.message) == (
        "workload-gpu-resource-offered",
        "Deployment ns/svc: asks nvidia.com/gpu, which pool h20 it reaches does not offer: h20 (mig, "
        "migStrategy mixed) offers nvidia.com/mig-1g.12gb, nvidia.com/mig-1g.24gb. Its pods stay Pending; ask "
        "for one of those names, or select a pool that offers nvidia.com/gpu.",
    )


def test_multi_gpu_nodes_count_every_gpu() -> None:
    # H20: 4 GPUs a node x 6 instances x 2 replicas = 48 slots of 1g.12gb on its one node at nodes.max.
    fits = _deployment("h20", {"limits": {"nvidia.com/mig-1g.12gb": 1}}, replicas=48)
    assert workload_fit.judge(fits, _staging()) == []
    over = _deployment("h20", {"limits": {"nvidia.com/mig-1g.12gb": 1}}, replicas=49)
    assert [f.kind for f in workload_fit.judge(over, _staging())] == ["replicas"]


def test_zero_replicas_and_no_gpu_are_not_judged() -> None:
    assert (
        workload_fit.judge(_deployment("l20", {"limits": {"nvidia.com/gpu": 1}}, replicas=0), _staging())
        == []
    )
    assert workload_fit.judge(_deployment("l20", {"limits": {"cpu": "2"}}, replicas=99), _staging()) == []


def test_an_init_container_larger_than_the_containers_sets_the_pods_request() -> None:
    obj = {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                    "initContainers": [{"name": "warm", "resources": {"limits": {"nvidia.com/gpu": 3}}}],
                }
            }
        },
    }
    workload = workload_fit.workload_of("Deployment", obj)
    assert workload is not None and workload.slots_per_pod("nvidia.com/gpu") == 3


@pytest.mark.parametrize(
    ("pool", "replicas", "strategy", "stuck"),
    [
        ("t4", 3, None, True),  # defaults: surge ceil(0.75) = 1, unavailable floor(0.75) = 0; T4 full at 3
        ("l20", 8, None, False),  # unavailable floor(2.0) = 2: old pods go first on L20's full 8
        ("l20", 8, {"rollingUpdate": {"maxUnavailable": "0%"}}, True),
        ("t4", 3, {"type": "Recreate"}, False),
        ("t4", 3, {"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 1}}, False),
        ("t4", 2, {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, False),  # one slot free on 3
    ],
)
def test_surge_on_full_pools(pool: str, replicas: int, strategy: dict[str, Any] | None, stuck: bool) -> None:
    prod = pool_offers(build_plan(load_stack(PROJECT_DIR, "prod")))
    spec: dict[str, Any] = {"replicas": replicas}
    if strategy is not None:
        spec["strategy"] = strategy
    found = workload_fit.judge(_deployment(pool, {"limits": {"nvidia.com/gpu": 1}}, **spec), prod)
    assert [f.kind for f in found] == (["surge"] if stuck else [])


def test_unknown_values_in_preview_are_not_judged() -> None:
    unknown = object()  # what the pack puts where the engine does not know a value yet
    prod = pool_offers(build_plan(load_stack(PROJECT_DIR, "prod")))
    workload = _deployment("l20", {"limits": {"nvidia.com/gpu": 1}}, replicas=unknown)
    assert workload.replicas is None and workload_fit.judge(workload, prod) == []
    obj = {"spec": {"template": {"spec": {"nodeSelector": unknown, "containers": []}}}}
    assert workload_fit.workload_of("Deployment", obj) is not None


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "dedicated", "operator": "Equal", "value": "nlp", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "value": "nlp"}, True),  # operator Equal by default, every effect
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # tolerates every taint
        ({"key": "dedicated", "operator": "Equal", "value": "asr", "effect": "NoSchedule"}, False),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "team", "operator": "Exists"}, False),
    ],
)
def test_tolerations_of_the_t4_pools_taint(toleration: dict[str, str], tolerated: bool) -> None:
    offers = [
        dataclasses.replace(o, taints=(Taint("dedicated", "nlp", "NoSchedule"),)) if o.pool == "t4" else o
        for o in pool_offers(build_plan(load_stack(PROJECT_DIR, "prod")))
    ]
    obj = {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"gpushare.io/pool": "t4"},
                    "tolerations": [toleration],
                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                }
            }
        },
    }
    workload = workload_fit.workload_of("Deployment", obj)
    assert workload is not None
    rules_found = [f.rule for f in workload_fit.judge(workload, offers)]
    assert rules_found == ([] if tolerated else ["workload-tolerates-pool-taints"])


def test_every_pool_mode_has_its_offers() -> None:
    """A new `sharing.mode` (qGPU, ...) plugs in by one `@offers_for` function; without it, this fails."""
    modes = {
        mode
        for sharing in typing.get_args(typing.get_args(PoolSharing)[0])
        for mode in typing.get_args(sharing.model_fields["mode"].annotation)
    }
    assert modes <= set(RESOURCE_OFFERS), sorted(modes - set(RESOURCE_OFFERS))


def test_plan_prints_the_policy_config_or_the_capacity_json_not_both() -> None:
    with pytest.raises(SystemExit) as refused:
        cli_main.main(["plan", "--stack", "prod", "--json", "--policy-config"], out=io.StringIO())
    assert refused.value.code == 2


def test_a_node_affinity_term_needs_every_expression_and_one_term_is_enough() -> None:
    """Kubernetes ANDs the matchExpressions of one nodeSelectorTerm and ORs the terms (core/v1
    NodeSelector): a term whose second expression the node fails does not land it."""

    def placement(*terms: list[tuple[str, str, list[str]]]) -> workload_fit.Placement:
        required = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": o, "values": v} for k, o, v in term]}
                for term in terms
            ]
        }
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
        found = workload_fit.placement_of({"affinity": affinity})
        assert found is not None
        return found

    t4_node = {"gpushare.io/pool": "t4"}
    t4_and_l20 = [("gpushare.io/pool", "In", ["t4"]), ("gpushare.io/pool", "In", ["l20"])]
    assert placement(t4_and_l20).lands_on(t4_node) is False
    assert placement(t4_and_l20, [("gpushare.io/pool", "In", ["t4"])]).lands_on(t4_node) is True


def test_only_a_time_sliced_profile_refuses_two_in_a_container() -> None:
    """The plugin refuses a request above 1 only for replicated devices (failRequestsGreaterThanOne and
    annotated, i.e. replica, device IDs). Staging's H20 as 1 x 1g.12gb + 3 x 2g.24gb at 6000 MiB measured:
    1g.12gb floor(0.9 x 11264 / 6000) = floor(1.69) = 1 replica of 1 instance, so 1 slot a GPU and not
    time-sliced; 2g.24gb (22138 MiB) floor(0.9 x 22138 / 6000) = floor(3.32) = 3 replicas x 3 instances =
    9. Two 1g.12gb in one container are allowed; two 2g.24gb are refused at admission."""
    config = _staging_h20({"1g.12gb": 1, "2g.24gb": 3}, "h20-1x1g.12gb-3x2g.24gb", 6000)
    offers = pool_offers(build_plan(config))
    assert [(r.resource, r.slots_per_gpu) for r in next(o for o in offers if o.pool == "h20").resources] == [
        ("nvidia.com/mig-1g.12gb", 1),
        ("nvidia.com/mig-2g.24gb", 9),
    ]
    unshared = _deployment("h20", {"limits": {"nvidia.com/mig-1g.12gb": 2}})
    assert workload_fit.judge(unshared, offers) == []
    shared = _deployment("h20", {"limits": {"nvidia.com/mig-2g.24gb": 2}})
    assert [(f.rule, f.message) for f in workload_fit.judge(shared, offers)] == [
        (
            "workload-gpu-request",
            "Deployment ns/svc: container c asks nvidia.com/mig-2g.24gb: 2 on pool h20, which shares it with "
            "failRequestsGreaterThanOne: the plugin refuses the pod at admission (UnexpectedAdmissionError). "
            "Ask for nvidia.com/mig-2g.24gb: 1 per container and run 2 times as many replicas.",
        )
    ]


def test_unreplicated_mig_instances_are_many_slots_and_none_shared() -> None:
    """Staging's H20 as 7 x 1g.12gb at 6000 MiB measured: floor(0.9 x 11264 / 6000) = floor(1.69) = 1 replica
    of each instance, so 7 slots a GPU and none of them a replica: the plugin writes no
    failRequestsGreaterThanOne for them and takes two in one container. Counting slots per GPU as sharing
    (before `ResourceOffer.replicas`) refused that pod."""
    config = _staging_h20({"1g.12gb": 7}, "h20-7x1g.12gb", 6000)
    offers = pool_offers(build_plan(config))
    h20_offer = next(o for o in offers if o.pool == "h20")
    assert [(r.resource, r.slots_per_gpu, r.replicas) for r in h20_offer.resources] == [
        ("nvidia.com/mig-1g.12gb", 7, 1)
    ]
    assert h20_offer.shared("nvidia.com/mig-1g.12gb") is False
    two = _deployment("h20", {"limits": {"nvidia.com/mig-1g.12gb": 2}})
    assert workload_fit.judge(two, offers) == []
    # The plan as the pack's policy config carries the replicas, and a plan written before them reads as
    # before (every slot counted as shared).
    (read,) = [o for o in offers_from_json(plan_json(build_plan(config))) or () if o.pool == "h20"]
    assert read.resources == h20_offer.resources
    legacy = plan_json(build_plan(config))
    for pool in legacy["pools"]:
        for resource in pool["resources"]:
            del resource["replicas"]
    (old,) = [o for o in offers_from_json(legacy) or () if o.pool == "h20"]
    assert [r.replicas for r in old.resources] == [7]


def test_single_strategy_mig_instances_are_whole_slots_none_shared() -> None:
    """Staging's H20 as 7 x 1g.12gb, not time-sliced: one profile, so the single strategy advertises the 7
    instances as nvidia.com/gpu, 7 slots a GPU and each a whole instance (1 replica); the plugin takes two
    in one container, so no workload rule refuses that pod."""
    config = _staging_h20({"1g.12gb": 7}, "h20-7x1g.12gb", None)
    offers = pool_offers(build_plan(config))
    h20_offer = next(o for o in offers if o.pool == "h20")
    assert [(r.resource, r.slots_per_gpu, r.replicas) for r in h20_offer.resources] == [
        ("nvidia.com/gpu", 7, 1)
    ]
    assert h20_offer.shared("nvidia.com/gpu") is False
    assert workload_fit.judge(_deployment("h20", {"limits": {"nvidia.com/gpu": 2}}), offers) == []


@pytest.mark.parametrize(
    ("expression", "known"),
    [
        ({"key": "gpushare.io/pool", "operator": "In", "values": ["l20"]}, True),
        ({"key": 7, "operator": "In", "values": ["l20"]}, False),  # a key that is no label name
        ({"key": "gpushare.io/pool", "operator": 7, "values": ["l20"]}, False),
        ({"key": "gpushare.io/pool", "operator": "In", "values": "l20"}, False),  # values not a list
    ],
    ids=["well-formed", "key-not-a-string", "operator-not-a-string", "values-not-a-list"],
)
def test_a_node_affinity_expression_of_the_wrong_shape_leaves_the_placement_unknown(
    expression: dict[str, Any], known: bool
) -> None:
    """A requirement the API server would refuse is not guessed at: the workload's placement is unknown
    (not judged), never a requirement built from whatever the fields hold."""
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    }
    placement = workload_fit.placement_of(spec)
    if known:
        assert placement is not None
        assert placement.terms == ((("gpushare.io/pool", "In", ("l20",)),),)
    else:
        assert placement is None
