"""The stack config from the engine's `ConfigureStack`, where the CLI gives the pack no PULUMI_CONFIG.

`settings.current_stack()` reads the stack config from PULUMI_CONFIG. The CLI sets that variable only on
its old way of starting a Python pack (a `pulumi-analyzer-policy-python` plugin). A current CLI that has
the Python language host starts the pack through the host's RunPlugin with the CLI's own environment, and
sends the stack (name, project, organization, dry run, config) in the Analyzer's `ConfigureStack` call
only; pulumi-policy 1.21 keeps that call's tags and drops the rest (make test-engine shows both: the
engine's gRPC log carries the config, and without this module every verdict read the tuning annotations
as if the stack had no config).

So the pack copies `ConfigureStack`'s stack into the variables `current_stack()` reads, when the CLI has
not set PULUMI_CONFIG itself. The secret keys are left out as before (`settings`: PULUMI_CONFIG_SECRET_KEYS
only from a driver), so a preview and `gpushare check` judge the same facts. The pack's own enforcement
level is decided again from that stack (`settings.pack_enforcement_level`): the pack started without
PULUMI_CONFIG, hence mandatory, and a program gpushare did not write would otherwise get mandatory findings
under the real CLI where `gpushare check` gives advisory ones. Policies with a level of their own, and any
level a policy config names, keep theirs.

pulumi-policy has no public hook for `ConfigureStack` nor a setter for the pack's level: this wraps its
servicer's method and sets the level it keeps, private names (`pulumi_policy.policy._PolicyAnalyzerServicer`,
its `__policy_pack_enforcement_level`), pinned with the SDK (requirements.txt).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, MutableMapping
from typing import Any

from pulumi_policy import policy as _policy_sdk

from gpushare_policies.settings import pack_enforcement_level

# The servicer's own level for policies without one (a name-mangled private attribute of pulumi-policy 1.21).
PACK_LEVEL_ATTRIBUTE = "_PolicyAnalyzerServicer__policy_pack_enforcement_level"


def stack_environment(request: Any) -> dict[str, str]:
    """The variables the old analyzer path set, from an `AnalyzerStackConfigureRequest`."""
    return {
        "PULUMI_CONFIG": json.dumps(dict(request.config)),
        "PULUMI_STACK": request.stack,
        "PULUMI_PROJECT": request.project,
        "PULUMI_ORGANIZATION": request.organization,
        "PULUMI_DRY_RUN": "true" if request.dry_run else "false",
    }


def take_stack_config_from_configure_stack(environ: MutableMapping[str, str] = os.environ) -> None:
    """Wrap the pack servicer's ConfigureStack so that, without PULUMI_CONFIG, it sets the stack's."""
    servicer = _policy_sdk._PolicyAnalyzerServicer
    original: Callable[..., Any] = servicer.ConfigureStack

    def configure_stack(self: Any, request: Any, context: Any) -> Any:
        if "PULUMI_CONFIG" not in environ:
            environ.update(stack_environment(request))
            # The level the pack would have had, started with this stack's PULUMI_CONFIG.
            setattr(self, PACK_LEVEL_ATTRIBUTE, pack_enforcement_level(environ))
        return original(self, request, context)

    setattr(servicer, "ConfigureStack", configure_stack)  # noqa: B010 (a method of a private class)
