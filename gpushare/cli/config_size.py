"""The warning that a stack config is close to what the policy pack's environment can carry."""

from __future__ import annotations

import sys

from gpushare.stack.loading import CONFIG_ENV_LIMIT_BYTES, CONFIG_ENV_WARN_BYTES
from gpushare.stack.model import StackConfig


def warn_config_size(stack: StackConfig) -> None:
    """plan and render work at any size; `check` (like `pulumi preview --policy-pack`) stops at the limit."""
    if stack.config_env_bytes >= CONFIG_ENV_WARN_BYTES:
        sys.stderr.write(
            f"warning: {stack.source}: the stack config is {stack.config_env_bytes // 1024} KiB as the policy "
            f"pack's PULUMI_CONFIG environment variable; Linux caps one at {CONFIG_ENV_LIMIT_BYTES // 1024} KiB, "
            "beyond which `check` and `pulumi preview --policy-pack` cannot start the pack\n"
        )
