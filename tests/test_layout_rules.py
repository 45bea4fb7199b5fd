"""policies/gpushare_policies/layout_rules.py: mig-layout-underused on the mig-parted ConfigMaps of a stack,
each read only when a pool label says whose it is.

The resources are the real program's for the device-plugin chart with a MIG pool
(tests/fixtures/stacks/Pulumi.helm-mig.yaml: pool h20, measured 4621 MiB, layout 6x 1g.12gb + 1x 1g.24gb,
ConfigMap kube-system/gpushare-mig-parted-config-h20 labelled gpushare.io/pool=h20).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from conftest import HELM_MIG
from test_policies import Program, Res, _isolated_environment, stack_messages, staging, use_stack

from gpushare import kube_names
from gpushare_policies import rules

__all__ = ["_isolated_environment", "staging", "use_stack"]  # fixtures used by name below

MIG_PARTED = "gpushare-h20-mig-mig-parted"
# The hand edit: all seven instances 1g.12gb, the layout the program's 6x 1g.12gb + 1x 1g.24gb replaced.
ALL_1G_12GB = 'version: v1\nmig-configs:\n  all-1g.12gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      "1g.12gb": 7\n'


def underused(resources: list[Res]) -> list[tuple[str, str | None]]:
    return stack_messages(rules.POLICIES_BY_NAME["mig-layout-underused"], resources)  # type: ignore[arg-type]


def _edited(staging: Program) -> Res:
    edited = copy.deepcopy(staging.get(MIG_PARTED))
    edited.props["data"]["config.yaml"] = ALL_1G_12GB
    return edited


def test_a_pools_hand_edited_layout_is_judged_after_a_mig_parted_config_map_no_pool_names(
    staging: Program, use_stack: Callable[..., None]
) -> None:
    """Another team's mig-parted ConfigMap, without the pool label and listed first, is nobody's pool's
    layout (skipped); the h20 pool's hand-edited one after it is still reported."""
    use_stack(HELM_MIG)
    edited = _edited(staging)
    unlabelled = copy.deepcopy(edited)
    unlabelled.name = "team-mig-parted"
    unlabelled.props["metadata"]["name"] = "team-mig-parted-config"
    del unlabelled.props["metadata"]["labels"][kube_names.LABEL_POOL]
    assert underused([unlabelled]) == []
    # H20 under the 0.9 ceiling, 4621 MiB a process: 1g.12gb (11008 MiB) holds floor(9907.2 / 4621) = 2,
    # 1g.24gb (22138 MiB) floor(19924.2 / 4621) = 4; 7 x 2 = 14 slots, 6 x 2 + 4 = 16, both in 7 instances.
    assert underused([unlabelled, *staging.but(edited)]) == [
        (
            'ConfigMap kube-system/gpushare-mig-parted-config-h20 key "config.yaml" mig-configs.all-1g.12gb[0] '
            "(pool h20): MIG layout 7x 1g.12gb yields 14 slot(s) in 7 instance(s) for 4621 MiB (ceiling 0.9); "
            '6x 1g.12gb + 1x 1g.24gb yields 16 in 7: migLayout {"1g.12gb": 6, "1g.24gb": 1}, layoutName '
            "h20-6x1g.12gb-1x1g.24gb (python -m gpushare advise --gpu H20 --measured-mib 4621).",
            f"urn:pulumi:{HELM_MIG}::gpushare::kubernetes:core/v1:ConfigMap::{MIG_PARTED}",
        )
    ]
