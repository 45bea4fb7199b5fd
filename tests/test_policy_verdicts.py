"""Policy verdicts asserted whole: the policy, the resource it is reported on and the decisive words, each
beside the near miss that another rule (or another path of the same rule) would also flag.

The resources are the real program's for the device-plugin chart with a MIG pool
(tests/fixtures/stacks/Pulumi.helm-mig.yaml: pools h20 and l20, the chart's `config.map` holding keys
`any`, `h20` and `l20`, `config.default: any`), each case one change to them, through the same calls the
SDK makes (tests/test_policies.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from conftest import HELM_MIG
from test_policies import (
    Program,
    Res,
    _isolated_environment,
    prod,
    replicas_text,
    resource_messages,
    stack_messages,
    staging,
    use_stack,
    with_data,
)

from gpushare import kube_names
from gpushare_policies import rules

__all__ = ["_isolated_environment", "prod", "staging", "use_stack"]  # fixtures used by name below

RELEASE_URN = (
    f"urn:pulumi:{HELM_MIG}::gpushare::kubernetes:helm.sh/v3:Release::gpushare-device-plugin-release"
)
CHART = "Helm release nvidia-device-plugin/nvidia-device-plugin"
READER = f"{CHART} (chart nvidia-device-plugin 0.17.1)"
LIST_STRATEGY_REFUSED = (
    "flags.plugin.deviceListStrategy: invalid --device-list-strategy option: invalid strategy: bogus"
)


def verdicts(policy: str, resources: list[Res]) -> list[tuple[str, str | None]]:
    found = stack_messages(rules.POLICIES_BY_NAME[policy], resources)  # type: ignore[arg-type]
    return sorted(found)


def release_of(program: Program) -> Res:
    return copy.deepcopy(program.get("gpushare-device-plugin-release"))


@pytest.fixture
def chart(staging: Program, use_stack: Callable[..., None]) -> Program:
    use_stack(HELM_MIG)
    return staging


# --------------------------------------------------------------------------------------------------------
# device-plugin-config-valid: a Helm release is judged with its own top-level values


def test_a_release_value_that_breaks_every_key_is_reported_per_key_as_read_by_the_release(
    chart: Program,
) -> None:
    release = release_of(chart)
    release.props["values"]["deviceListStrategy"] = "bogus"  # the chart renders it as an env var
    expected = [
        (
            f'{CHART} config.map key "{key}": device plugin 0.17.1 refuses it as read by {READER}: '
            f"{LIST_STRATEGY_REFUSED} (value from a CLI/env override)",
            RELEASE_URN,
        )
        for key in ("any", "h20", "l20")
    ]
    assert verdicts("device-plugin-config-valid", chart.but(release)) == expected


def test_a_file_value_the_releases_own_override_replaces_is_not_refused(chart: Program) -> None:
    """Near miss: the same bogus strategy in the file alone is refused (without the override's note);
    with the release's valid top-level value it never reaches the plugin (env > file)."""
    release = release_of(chart)
    release.props["values"]["config"]["map"]["l20"] = (
        "version: v1\nflags:\n  migStrategy: none\n  plugin:\n    deviceListStrategy: bogus\n"
    )
    assert verdicts("device-plugin-config-valid", chart.but(release)) == [
        (
            f'{CHART} config.map key "l20": device plugin 0.17.1 refuses it as read by {READER}: '
            f"{LIST_STRATEGY_REFUSED}",
            RELEASE_URN,
        )
    ]
    release.props["values"]["deviceListStrategy"] = "envvar"
    assert verdicts("device-plugin-config-valid", chart.but(release)) == []


# --------------------------------------------------------------------------------------------------------
# config-key-exists: `config.fallbackStrategies` entries resolve only by their exact names


def _without_default(chart: Program, **config: Any) -> list[Res]:
    release = release_of(chart)
    del release.props["values"]["config"]["default"]
    release.props["values"]["config"].update(config)
    return chart.but(release)


def _unresolved(strategies: str) -> list[tuple[str, str | None]]:
    return [
        (
            f"{READER}: no config.default and no fallback strategy ({strategies}) resolves among keys any, h20, "
            f"l20 of {CHART} config.map; the chart refuses to render ('A default config must be provided ...'). "
            "Set config.default to a key (gpushare uses 'any').",
            RELEASE_URN,
        )
    ]


def test_a_misspelled_fallback_strategy_resolves_nothing(chart: Program) -> None:
    assert verdicts(
        "config-key-exists", _without_default(chart, fallbackStrategies=["nmaed"])
    ) == _unresolved("nmaed")
    # Even with a key `default` in the map, which `named` would take.
    resources = _without_default(chart, fallbackStrategies=["nmaed"])
    release = next(r for r in resources if r.name == "gpushare-device-plugin-release")
    release.props["values"]["config"]["map"]["default"] = "version: v1\nflags:\n  migStrategy: none\n"
    (message,) = [m for m, _ in verdicts("config-key-exists", resources)]
    assert "no fallback strategy (nmaed) resolves among keys any, default, h20, l20" in message


def test_the_spelled_strategies_resolve_by_their_rules(chart: Program) -> None:
    """Near misses: `named` without a `default` key and `single` among three keys are flagged the same way;
    `empty` always resolves; `named` with a `default` key does."""
    assert verdicts(
        "config-key-exists", _without_default(chart, fallbackStrategies=["named"])
    ) == _unresolved("named")
    assert verdicts(
        "config-key-exists", _without_default(chart, fallbackStrategies=["single"])
    ) == _unresolved("single")
    assert verdicts("config-key-exists", _without_default(chart, fallbackStrategies=["nmaed", "empty"])) == []
    resources = _without_default(chart, fallbackStrategies=["named"])
    release = next(r for r in resources if r.name == "gpushare-device-plugin-release")
    release.props["values"]["config"]["map"]["default"] = "version: v1\nflags:\n  migStrategy: none\n"
    assert verdicts("config-key-exists", resources) == []


# --------------------------------------------------------------------------------------------------------
# mig-only-on-mig-capable-gpus: the strategy a pool's plugin runs with is its own key's, not `any`'s


def _strategies(chart: Program, **keys: str) -> Res:
    release = release_of(chart)
    config_map = release.props["values"]["config"]["map"]
    for key, strategy in keys.items():
        config_map[key] = config_map[key].replace("migStrategy: none", f"migStrategy: {strategy}")
    return release


def test_the_l20_pools_own_key_decides_its_strategy(chart: Program) -> None:
    release = _strategies(chart, l20="single")
    assert verdicts("mig-only-on-mig-capable-gpus", chart.but(release)) == [
        # The file rule, the near miss: it flags the key whoever reads it.
        (
            f'{CHART} config.map key "l20": migStrategy single for L20, which does not support MIG.',
            RELEASE_URN,
        ),
        # The pool rule: the plugin on the L20 nodes (label nvidia.com/device-plugin.config=l20) reads `l20`.
        (
            f'node pool l20: {READER} runs with migStrategy single (from {CHART} config.map key "l20") on L20, '
            "which does not support MIG; use migStrategy none.",
            RELEASE_URN,
        ),
    ]


def test_the_fallback_keys_strategy_is_not_the_labelled_pools(chart: Program) -> None:
    """`any` says single; the L20 pool's label selects `l20` (none): nothing runs single on the L20."""
    release = _strategies(chart, any="single")
    assert verdicts("mig-only-on-mig-capable-gpus", chart.but(release)) == []
    # Without the label the config-manager falls back to config.default `any`: now the L20 runs single.
    pool = copy.deepcopy(chart.get("gpushare-l20-pool"))
    del pool.props["labels"][kube_names.LABEL_PLUGIN_CONFIG]
    assert verdicts("mig-only-on-mig-capable-gpus", chart.but(release, pool)) == [
        (
            f'node pool l20: {READER} runs with migStrategy single (from {CHART} config.map key "any") on L20, '
            "which does not support MIG; use migStrategy none.",
            RELEASE_URN,
        )
    ]


def test_a_label_naming_a_key_the_map_lacks_is_judged_on_the_default_key(chart: Program) -> None:
    """The L20 pool's label names `nope` (config-key-exists reports that the key is missing); its strategy is
    judged on what the chart would fall back to, `config.default` `any`, which says single."""
    release = _strategies(chart, any="single")
    pool = copy.deepcopy(chart.get("gpushare-l20-pool"))
    pool.props["labels"][kube_names.LABEL_PLUGIN_CONFIG] = "nope"
    assert verdicts("mig-only-on-mig-capable-gpus", chart.but(release, pool)) == [
        (
            f'node pool l20: {READER} runs with migStrategy single (from {CHART} config.map key "any") on L20, '
            "which does not support MIG; use migStrategy none.",
            RELEASE_URN,
        )
    ]


# --------------------------------------------------------------------------------------------------------
# plugin-restarts-on-config-change: a plugin whose key is missing is skipped, not the end of the check


def test_a_stale_checksum_is_found_whichever_plugin_has_its_key_missing(
    prod: Program, use_stack: Callable[..., None]
) -> None:
    """Prod's two plugins, TKE's patched DaemonSet (key t4) and the L20 DaemonSet (key l20): one reads a key
    the ConfigMap lacks (config-key-exists reports that), the other's key changed without its pods'
    checksum. The stale one is reported, on its own resource, whichever of the two is read first."""
    use_stack("prod")
    plugins = {"t4": "gpushare-managed-plugin-patch", "l20": "gpushare-plugins-l20"}
    urns = {
        "t4": "urn:pulumi:prod::gpushare::kubernetes:apps/v1:DaemonSetPatch::gpushare-managed-plugin-patch",
        "l20": "urn:pulumi:prod::gpushare::kubernetes:apps/v1:DaemonSet::gpushare-plugins-l20",
    }
    for missing, stale in (("t4", "l20"), ("l20", "t4")):
        broken = copy.deepcopy(prod.get(plugins[missing]))
        container = broken.props["spec"]["template"]["spec"]["containers"][0]
        container["args"] = [a.replace(f"config/{missing}", "config/gone") for a in container["args"]]
        config_map = with_data(prod.get("gpushare-config-configmap"), stale, replicas_text(2))
        found = verdicts("plugin-restarts-on-config-change", prod.but(broken, config_map))
        assert [urn for _, urn in found] == [urns[stale]], (missing, found)
        assert "a stale checksum does not roll the pods when the key changes." in found[0][0]


# --------------------------------------------------------------------------------------------------------
# The pack's own settings: values outside their schema fall back to the defaults


@pytest.mark.parametrize(("days", "advised"), [(0, 0), (0.5, 0), (-3, 0), (10, 3), (10.0, 3), (180, 0)])
def test_max_measurement_age_below_one_day_is_the_default(
    prod: Program,
    use_stack: Callable[..., None],
    fixed_today: Callable[[date], None],
    days: float,
    advised: int,
) -> None:
    """Measured 2025-06-01, today 2025-07-01: 29 + 1 = 30 days ago. A limit under 1 day (the schema's
    minimum) is the default 180: nothing advised; 10 days: l20, t4 and the fallback `any` advised."""
    fixed_today(date(2025, 7, 1))
    use_stack("prod")
    config_map = prod.get("gpushare-config-configmap")
    policy = rules.POLICIES_BY_NAME["time-slicing-measurement-fresh"]
    found = resource_messages(policy, config_map, {"maxMeasurementAgeDays": days})  # type: ignore[arg-type]
    assert len(found) == advised
    assert all("30 days ago, older than 10 days" in m for m in found)


@pytest.mark.parametrize(("ceiling", "maximum"), [(0, 8), (1.5, 8), (-0.5, 8), (1, 9), (0.5, 4)])
def test_a_ceiling_outside_0_to_1_is_the_default(
    prod: Program, use_stack: Callable[..., None], ceiling: float, maximum: int
) -> None:
    """L20 at 4621 MiB: floor(0.9 x 46068 / 4621) = 8 (the default ceiling), floor(1.0 x 46068 / 4621) =
    floor(9.97) = 9, floor(0.5 x 46068 / 4621) = floor(4.98) = 4. One replica above the maximum is refused."""
    use_stack("prod")
    policy = rules.POLICIES_BY_NAME["time-slicing-replicas-tuned"]
    for replicas, refused in ((maximum, False), (maximum + 1, True)):
        config_map = with_data(prod.get("gpushare-config-configmap"), "l20", replicas_text(replicas))
        found = resource_messages(policy, config_map, {"utilizationCeiling": ceiling})  # type: ignore[arg-type]
        l20 = [m for m in found if 'key "l20"' in m]
        assert bool(l20) is refused, (ceiling, replicas, found)
        if refused:
            assert f"replicas {maximum + 1} exceeds the tuned maximum {maximum}" in l20[0]
