"""Close-match suggestions ("did you mean") for the names a user types: GPU models, modes, stacks, keys.

`difflib` (the standard library's sequence matcher) does the matching; a case-only difference wins
outright, since that is the commonest slip (`--gpu h20`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(value: str, choices: Iterable[str], *, limit: int = 3) -> list[str]:
    """The choices `value` most likely meant, best first (empty when nothing is close)."""
    known = list(dict.fromkeys(choices))
    same_but_case = [choice for choice in known if choice.lower() == value.lower() and choice != value]
    if same_but_case:
        return same_but_case[:limit]
    by_lower = {choice.lower(): choice for choice in known}
    # A high cutoff: `L40` is another GPU, not a slip for `L20`; `daemonset`, `replica` are slips.
    found = difflib.get_close_matches(value.lower(), list(by_lower), n=limit, cutoff=0.75)
    if not found and len(value) >= 2:  # a prefix: `a100` for `A100-40GB`
        found = [lower for lower in by_lower if lower.startswith(value.lower())][:limit]
    return [by_lower[match] for match in found]


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`; did you mean 'H20'?` (the closest choice), to append to an error message; "" when nothing is close."""
    matches = close_matches(value, choices, limit=1)
    return f"; did you mean {matches[0]!r}?" if matches else ""
