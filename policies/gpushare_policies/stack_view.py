"""The whole stack as the stack policies see it: config sources, plugin workloads and node pools."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from gpushare.resource_types import is_chart_rendered
from gpushare_policies.config_files import ConfigSource, config_map_source
from gpushare_policies.props import Resource, resources_of
from gpushare_policies.settings import StackFacts, current_stack
from gpushare_policies.workloads import (
    TKE_DAEMON_SET,
    ConfigReference,
    DaemonSetPlugin,
    HelmPlugin,
    NodePoolView,
    Placement,
    Workload,
    apply_patch,
    daemon_set_plugin,
    helm_plugin,
    node_pool_view,
)


@dataclass(frozen=True)
class StackView:
    stack: StackFacts
    resources: tuple[Resource, ...]
    config_sources: tuple[ConfigSource, ...]
    daemon_sets: tuple[DaemonSetPlugin, ...]
    """Device-plugin DaemonSets with the stack's patches applied, TKE's (modelled) among them."""
    helm_plugins: tuple[HelmPlugin, ...]
    node_pools: tuple[NodePoolView, ...]

    @cached_property
    def workloads(self) -> tuple[Workload, ...]:
        return (*self.daemon_sets, *(h for h in self.helm_plugins if h.enabled))

    @cached_property
    def node_feature_discovery(self) -> bool:
        """NFD runs in the cluster: deployed by a device-plugin chart, or declared by the stack."""
        declared = self.stack.config is not None and self.stack.config.plugin.nfd_present
        return declared or any(h.deploys_nfd for h in self.helm_plugins)

    def config_map(self, namespace: str, name: str) -> ConfigSource | None:
        return next(
            (
                s
                for s in self.config_sources
                if s.kind == "ConfigMap" and (s.namespace, s.name) == (namespace, name)
            ),
            None,
        )

    def helm_config(self, plugin: HelmPlugin) -> ConfigSource | None:
        external = plugin.config_map_name()
        if external:
            return self.config_map(plugin.namespace, external)
        return plugin.config_source()

    def referenced_config(self, reference: ConfigReference | None) -> ConfigSource | None:
        """The ConfigMap a DaemonSet's `--config-file` reads from, if the stack holds it."""
        return self.config_map(reference.namespace, reference.config_map) if reference else None

    def config_of(self, workload: Workload) -> ConfigSource | None:
        """What a plugin reads its config files from: the chart's config, or its `--config-file`'s ConfigMap."""
        if isinstance(workload, HelmPlugin):
            return self.helm_config(workload)
        return self.referenced_config(workload.config_reference())

    def placement(self, workload: Workload) -> Placement | None:
        return workload.placement

    def lands_on(self, workload: Workload, pool: NodePoolView) -> bool | None:
        """None when either side is unknown."""
        placement = self.placement(workload)
        if placement is None or pool.labels is None:
            return None
        return placement.lands_on(pool.node_labels(self.node_feature_discovery))

    def workloads_on(self, pool: NodePoolView) -> list[Workload]:
        if pool.labels is None:
            return []
        labels = pool.node_labels(self.node_feature_discovery)
        by_item, unindexed = self._workloads_by_selector_item
        candidates = {id(w): w for w in unindexed}
        for item in labels.items():
            candidates.update((id(w), w) for w in by_item.get(item, ()))
        # Same answer, same order as testing every workload, without testing every workload per pool.
        return [w for w in self.workloads if id(w) in candidates and self.lands_on(w, pool)]

    @cached_property
    def _workloads_by_selector_item(self) -> tuple[dict[tuple[str, str], list[Workload]], list[Workload]]:
        """Each workload under the rarest item of its nodeSelector: a pool can only host it if the pool
        carries that item, so one lookup per pool label finds every candidate (per-pool DaemonSets make
        testing all workloads for every pool quadratic in pools)."""
        selectors = [w.placement.node_selector if w.placement else {} for w in self.workloads]
        counts = Counter(item for selector in selectors for item in selector.items())
        by_item: dict[tuple[str, str], list[Workload]] = defaultdict(list)
        unindexed: list[Workload] = []
        for workload, selector in zip(self.workloads, selectors, strict=True):
            if selector:
                by_item[min(selector.items(), key=lambda item: (counts[item], item))].append(workload)
            else:
                unindexed.append(workload)
        return dict(by_item), unindexed


def _rendered_from(resource: Resource, helm: Iterable[HelmPlugin]) -> bool:
    """A chart-rendered object (offline check) of one of these releases: a child URN extends its parent's
    qualified type with `$<type>`, and its name starts with the release resource's name."""
    if not is_chart_rendered(resource.urn):
        return False
    for plugin in helm:
        prefix, _, name = plugin.urn.rpartition("::")
        if resource.urn.startswith(f"{prefix}$") and resource.name.startswith(f"{name}:"):
            return True
    return False


def stack_view(resources: Iterable[Resource], stack: StackFacts) -> StackView:
    resources = tuple(resources)
    sources = [s for s in (config_map_source(r) for r in resources) if s is not None]
    helm = tuple(h for h in (helm_plugin(r) for r in resources) if h is not None)
    sources += [s for s in (h.config_source() for h in helm) if s is not None]
    # The device-plugin chart's own DaemonSet is the HelmPlugin already (modelled from the values); a
    # plugin DaemonSet rendered from any other chart is a workload of its own.
    daemon_sets = _patched_daemon_sets(
        [d for d in (daemon_set_plugin(r) for r in resources if not _rendered_from(r, helm)) if d is not None]
    )
    pools = tuple(p for p in (node_pool_view(r, stack) for r in resources) if p is not None)
    return StackView(stack, resources, tuple(sources), tuple(daemon_sets), helm, pools)


def _patched_daemon_sets(found: list[DaemonSetPlugin]) -> tuple[DaemonSetPlugin, ...]:
    """Full DaemonSets with the stack's patches applied. TKE's DaemonSet is on the cluster whether or not
    the stack names it; a patch on anything else the stack does not hold has an unknown base, so where it
    lands is unknown too."""
    targets = {(d.namespace, d.name): d for d in found if d.kind == "DaemonSet"}
    targets.setdefault((TKE_DAEMON_SET.namespace, TKE_DAEMON_SET.name), TKE_DAEMON_SET)
    unmatched = []
    for patch in (d for d in found if d.kind == "DaemonSetPatch"):
        target = (patch.namespace, patch.name)
        if target in targets:
            targets[target] = apply_patch(targets[target], patch)
        else:
            unmatched.append(replace(patch, placement=None))
    return (*targets.values(), *unmatched)


def view_of(args: Any) -> StackView:
    """The stack a `StackValidationArgs` describes, with the stack config from the environment."""
    return stack_view(resources_of(args), current_stack())
