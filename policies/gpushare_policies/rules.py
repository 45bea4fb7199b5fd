"""Every policy of the gpushare pack, importable without starting the pack's gRPC server.

`policies/__main__.py` builds the `PolicyPack` from `POLICIES`; tests call each policy's `validate`.
Mandatory unless marked advisory (the policy's own `enforcement_level`).
"""

from __future__ import annotations

from typing import Final

from pulumi_policy import Policy

from gpushare_policies.coverage_rules import COVERAGE_POLICIES, JUDGED_WITHOUT_STACK_CONFIG
from gpushare_policies.credential_rules import CREDENTIAL_POLICIES, NO_PLAINTEXT_CLOUD_SECRETS
from gpushare_policies.layout_rules import LAYOUT_POLICIES, MIG_LAYOUT_UNDERUSED
from gpushare_policies.operator_rules import MIG_CONFIG_EXISTS, OPERATOR_DRIVER_CONSISTENT, OPERATOR_POLICIES
from gpushare_policies.placement_rules import (
    GPU_POOL_LABELS,
    HELM_PLUGIN_SCHEDULABLE,
    MIG_DRIVER_SUPPORTED,
    MIG_ONLY_ON_MIG_CAPABLE_GPUS,
    ONE_DEVICE_PLUGIN_PER_NODE,
    PLACEMENT_POLICIES,
)
from gpushare_policies.plugin_rules import (
    CLI_FLAG_OVERRIDES_CONFIG,
    CONFIG_FILE_NOT_DIRECTORY,
    CONFIG_KEY_EXISTS,
    DEVICE_PLUGIN_CONFIG_VALID,
    HELM_CHART_PINNED,
    PLUGIN_IMAGE_PINNED,
    PLUGIN_POLICIES,
    PLUGIN_RESTARTS_ON_CONFIG_CHANGE,
)
from gpushare_policies.tuning_rules import (
    FAIL_REQUESTS_GREATER_THAN_ONE,
    MIG_TIME_SLICING_NEEDS_MIXED,
    TIME_SLICING_MEASUREMENT_FRESH,
    TIME_SLICING_REPLICAS_MINIMUM,
    TIME_SLICING_REPLICAS_TUNED,
    TIME_SLICING_REPLICAS_UNDERUSED,
    TUNING_POLICIES,
)

POLICIES: Final[tuple[Policy, ...]] = (
    *TUNING_POLICIES,
    *PLUGIN_POLICIES,
    *PLACEMENT_POLICIES,
    *CREDENTIAL_POLICIES,
    *OPERATOR_POLICIES,
    *LAYOUT_POLICIES,
    *COVERAGE_POLICIES,
)
POLICIES_BY_NAME: Final = {policy.name: policy for policy in POLICIES}

__all__ = [
    "CLI_FLAG_OVERRIDES_CONFIG",
    "CONFIG_FILE_NOT_DIRECTORY",
    "CONFIG_KEY_EXISTS",
    "DEVICE_PLUGIN_CONFIG_VALID",
    "FAIL_REQUESTS_GREATER_THAN_ONE",
    "GPU_POOL_LABELS",
    "HELM_CHART_PINNED",
    "HELM_PLUGIN_SCHEDULABLE",
    "JUDGED_WITHOUT_STACK_CONFIG",
    "MIG_CONFIG_EXISTS",
    "MIG_DRIVER_SUPPORTED",
    "MIG_LAYOUT_UNDERUSED",
    "MIG_ONLY_ON_MIG_CAPABLE_GPUS",
    "MIG_TIME_SLICING_NEEDS_MIXED",
    "NO_PLAINTEXT_CLOUD_SECRETS",
    "ONE_DEVICE_PLUGIN_PER_NODE",
    "OPERATOR_DRIVER_CONSISTENT",
    "PLUGIN_IMAGE_PINNED",
    "PLUGIN_RESTARTS_ON_CONFIG_CHANGE",
    "POLICIES",
    "POLICIES_BY_NAME",
    "TIME_SLICING_MEASUREMENT_FRESH",
    "TIME_SLICING_REPLICAS_MINIMUM",
    "TIME_SLICING_REPLICAS_TUNED",
    "TIME_SLICING_REPLICAS_UNDERUSED",
]
