"""The pack entry point. `pulumi preview --policy-pack DIR` runs `python -m pulumi.policy <engine> DIR`
with cwd = DIR, which executes this file with DIR first on `sys.path`; the rules are the package beside it
(gpushare_policies/), the tool they use an installed distribution (requirements.txt). It only builds the
pack: the PolicyPack constructor starts the gRPC server, prints its port and blocks, so never import it."""

from pulumi_policy import EnforcementLevel, PolicyPack

from gpushare_policies.rules import POLICIES

PolicyPack(name="gpushare", policies=list(POLICIES), enforcement_level=EnforcementLevel.MANDATORY)
