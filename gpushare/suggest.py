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
    # A prefix first: `a100` is `A100-40GB` or `A100-80GB`, which difflib ranks below `A10` (another GPU).
    found = [lower for lower in by_lower if len(value) >= 2 and lower.startswith(value.lower())][:limit]
    if not found:
        # A high cutoff: `L40` is another GPU, not a slip for `L20`; `daemonset`, `replica` are slips.
        found = difflib.get_close_matches(value.lower(), list(by_lower), n=limit, cutoff=0.75)
    return [by_lower[match] for match in found]


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`; did you mean 'H20'?` (or `'A' or 'B'` when several are equally close: prefixes of the same
    length), to append to an error message; "" when nothing is close."""
    matches = close_matches(value, choices)
    if not matches:
        return ""
    prefixed = [m for m in matches if m.lower().startswith(value.lower())]
    shown = prefixed if len(prefixed) > 1 else matches[:1]
    return f"; did you mean {' or '.join(repr(m) for m in shown)}?"


def unknown_name(value: str, choices: Iterable[str]) -> str:
    """What follows `unknown <thing> 'X'` in a message: the close choices with the list, or, when nothing
    is close, that it is not in the list at all."""
    known = list(dict.fromkeys(choices))
    suggestion = did_you_mean(value, known)
    if suggestion:
        return f"{suggestion} (known: {', '.join(known)})"
    return f": not in the catalog; known: {', '.join(known)}"
