"""The pack entry point. `pulumi preview --policy-pack DIR` runs `python -m pulumi.policy <engine> DIR`
with cwd = DIR, which executes this file with DIR first on `sys.path`; the rules are the package beside it
(gpushare_policies/), the tool they use an installed distribution (requirements.txt). It only builds the
pack: the PolicyPack constructor starts the gRPC server, prints its port and blocks, so never import it.
Its level is mandatory, advisory on a program without `gpushare:` config (`pack_enforcement_level`), read
before the engine's ConfigureStack, whose stack config the pack then takes where the CLI set no PULUMI_CONFIG
(`engine_config`)."""

import os

from pulumi_policy import PolicyPack

from gpushare_policies.engine_config import take_stack_config_from_configure_stack
from gpushare_policies.rules import POLICIES
from gpushare_policies.settings import pack_enforcement_level

# Only wraps ConfigureStack: the level below still reads the environment the CLI started the pack with.
take_stack_config_from_configure_stack()
PolicyPack(name="gpushare", policies=list(POLICIES), enforcement_level=pack_enforcement_level(os.environ))
