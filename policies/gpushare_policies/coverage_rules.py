"""What the pack could not judge on a stack gpushare did not write: one advisory that names it.

A platform team applies the pack to every stack of an organisation, most of them programs gpushare did
not write (another team's device-plugin ConfigMap and DaemonSet, a Helm release, node pools), with no
`gpushare:` stack config. The other rules judge those by what the resources carry: a config's own
validity, `failRequestsGreaterThanOne`, a plugin's `--config-file`, its restart annotation, pinned
charts and images, and replicas that rest on no measurement (mandatory: untuned). What needs a fact only
a gpushare stack config (or a `gpushare.io/tuning-<key>` annotation) gives cannot be judged; instead of
passing it silently, this advisory lists it, so a green preview is not read as "all checked".
"""

from __future__ import annotations

from typing import Final

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from gpushare.stack.model import PROJECT
from gpushare_policies.config_files import read_plugin_config
from gpushare_policies.stack_view import StackView, view_of
from gpushare_policies.workloads import TKE_DAEMON_SET


def unjudged(view: StackView) -> list[str]:
    """What the rules could not decide on a stack without a gpushare config, one phrase each."""
    items = []
    for source in view.config_sources:
        for key, content in sorted(source.plugin_configs().items()):
            shared = [e for e in read_plugin_config(content, source.plugin_version).shared if e.replicas]
            if shared and source.provenance(key) is None:
                resources = ", ".join(sorted({e.resource_name for e in shared}))
                items.append(
                    f"the tuned maximum of {source.where(key)} ({resources}): which GPU it serves and the "
                    "largest process measured on it are unknown"
                )
    own_workloads = [w for w in view.workloads if w is not TKE_DAEMON_SET]
    if own_workloads and not view.node_pools:
        items.append(
            "where the device plugins land: the stack declares no node pools, so one plugin per node, the "
            "pools' labels and MIG placement were checked against none"
        )
    return items


def _check_coverage(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = view_of(args)
    if view.stack.config is not None:
        return
    items = unjudged(view)
    if items:
        report_violation(
            f"{_sentence(view.stack.problem or '')}: judged by what its resources carry. Not judged: {'; '.join(items)}. "
            f"A stack with {PROJECT}: config (pools with measurements), or a gpushare.io/tuning-<key> "
            "annotation on the config, lets the pack judge these too.",
            None,
        )


JUDGED_WITHOUT_STACK_CONFIG: Final = StackValidationPolicy(
    name="judged-without-stack-config",
    description="On a stack with no gpushare: config, what the pack could not judge is named, not passed "
    "silently.",
    validate=_check_coverage,
    enforcement_level=EnforcementLevel.ADVISORY,
)

COVERAGE_POLICIES: Final = (JUDGED_WITHOUT_STACK_CONFIG,)


def _sentence(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]
