"""Read the stack config from the Pulumi runtime into gpushare's validated model, once."""

from __future__ import annotations

import pulumi

from gpushare.errors import GpushareError
from gpushare.stack.loading import from_config_values, program_config_value, stack_file_name
from gpushare.stack.model import PROJECT, StackConfig


def read_stack_config() -> StackConfig:
    """The validated stack config, or a `pulumi.RunError` that the CLI prints without a traceback."""
    stack = pulumi.get_stack()
    # The language host hands the program the whole config map in PULUMI_CONFIG (read through the SDK's
    # public `get_config_env`); reading every key, not only the ones we know, is what lets a misspelled
    # `gpushare:` or `tencentcloud:` key fail instead of being ignored.
    keys = pulumi.runtime.get_config_env()
    values = {}
    for key in sorted(keys):
        if key.startswith(f"{PROJECT}:") or key.startswith("tencentcloud:"):
            raw = pulumi.runtime.get_config(key)
            values[key] = program_config_value(raw) if key.startswith(f"{PROJECT}:") else raw
    secret_keys = [key for key in values if pulumi.runtime.is_config_secret(key)]
    try:
        return from_config_values(values, stack=stack, source=stack_file_name(stack), secret_keys=secret_keys)
    except GpushareError as err:
        raise pulumi.RunError(str(err)) from None
