"""The pack entry point. `pulumi preview --policy-pack policies` runs
`python -m pulumi.policy <engine> policies` with cwd = policies/, which executes this file.
It only builds the pack; the rules live in policies.rules."""

import sys
from pathlib import Path

# Only this directory is on sys.path when the CLI runs the pack; the rules import `gpushare` (catalog,
# tuning rule, config validators) and `policies.*` from the repository root, one level up.
_REPO_ROOT = str(Path(__file__).resolve().parent.parent)
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402  (needs the path above)

from policies.rules import POLICIES  # noqa: E402

# Starts the gRPC server, prints its port and blocks: never import this module.
PolicyPack(name="gpushare", policies=list(POLICIES), enforcement_level=EnforcementLevel.MANDATORY)
