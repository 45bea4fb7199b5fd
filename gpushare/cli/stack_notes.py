"""The notes `plan` and `render` print about a stack before they work on it (stderr, exit code unchanged)."""

from __future__ import annotations

import sys

from gpushare.cli.config_size import warn_config_size
from gpushare.stack.forcenew_notes import shared_force_new_notes
from gpushare.stack.model import StackConfig


def print_stack_notes(stack: StackConfig) -> None:
    warn_config_size(stack)
    for note in shared_force_new_notes(stack):
        sys.stderr.write(f"note: {note}\n")
