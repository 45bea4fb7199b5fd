"""Whole numbers as they arrive from Pulumi's wire and from Kubernetes manifests: one reading for all.

A count or a quantity crosses the engine's protobuf Struct as a double (2 arrives as 2.0) and a manifest
may quote it ("2"); a boolean is never a number, whatever Python says of `True == 1`.
"""

from __future__ import annotations


def whole_number(value: object) -> int | None:
    """A count or quantity: 2, 2.0 or "2" (ASCII digits only); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None
