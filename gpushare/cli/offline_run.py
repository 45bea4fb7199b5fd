"""How `render` and `check` run the offline runner (gpushare/offline/): the stack refused early, the heap
frozen and SIGTERM turned into an exception that unwinds (`Terminated`, which `main` reports)."""

from __future__ import annotations

import argparse
import gc
import signal
from collections.abc import Callable
from pathlib import Path

from gpushare.stack.loading import load_stack


def refuse_bad_stack_early(args: argparse.Namespace) -> None:
    # The stack first, through the loader every command shares: a bad one is refused in a blink, before
    # the SDKs are even imported (the commands load it again; that costs milliseconds).
    load_stack(Path(args.dir), args.stack)


def run_offline(command: Callable[[], int]) -> int:
    """render and check (gpushare/offline/) run the Pulumi program and the policy pack."""
    # A run allocates many short-lived objects over a large, long-lived heap (the SDKs): freezing what
    # is imported and collecting less often took a 500-pool render from 28 s to 20 s (bench/).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    # SIGTERM (kill, a CI timeout) unwinds like Ctrl-C, so temporary folders are removed on the way out.
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return command()
    finally:
        signal.signal(signal.SIGTERM, previous)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt so `finally` blocks run."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated
