"""Placeholders a pasted `advise --stack-snippet` leaves for the user (`FILL-IN...`), refused until
replaced."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpushare.stack.messages import _is_plain_key

# What `advise --stack-snippet` writes where only the user knows the value (gpushare.advise.pool_snippet).
PLACEHOLDER_PREFIX = "FILL-IN"


def _placeholder_problems(values: Mapping[str, Any], source: str) -> list[str]:
    """A pasted snippet's `FILL-IN` values (source, measuredAt, instanceType) must be replaced: a stack
    holding one would record no real provenance, or ask TKE for an instance type that does not exist."""
    problems = []
    pending: list[tuple[str, Any]] = [(key, values[key]) for key in sorted(values, reverse=True)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str) and value.strip().startswith(PLACEHOLDER_PREFIX):
            problems.append(
                f"{source}: {path}: still the placeholder {value.strip()!r} from `gpushare advise "
                "--stack-snippet`: replace it with the real value"
            )
        elif isinstance(value, dict):
            pending.extend(
                (f"{path}.{k}" if _is_plain_key(str(k)) else f"{path}[{json.dumps(str(k))}]", v)
                for k, v in reversed(list(value.items()))
            )
        elif isinstance(value, list):
            pending.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return problems
