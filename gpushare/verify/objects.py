"""Reading API objects as the API server returns them (camelCase JSON): labels, names, counts,
timestamps, ages, short digests; shared by the checks."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from gpushare.verify.report import ClusterSnapshot


def _dig(obj: Mapping[str, Any] | None, *path: str) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _dig(obj, "metadata", "labels") or {}


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return _dig(obj, "metadata", "annotations") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_dig(obj, "metadata", "name"))


def _pod_ref(pod: Mapping[str, Any]) -> str:
    return f"pod/{_dig(pod, 'metadata', 'namespace')}/{_name(pod)}"


def _count(value: Any) -> int:
    """Extended resources (`nvidia.com/*`) are integer quantities, written as Kubernetes writes quantities
    (`1k` is 1000: the client's own parser, apimachinery's suffixes); a value that is not a whole,
    non-negative ASCII quantity counts as none."""
    text = str(value)
    if not text.isascii():
        return 0  # Decimal would read full-width digits; Kubernetes reads ASCII only
    try:
        quantity = parse_quantity(text)
    except (ValueError, ArithmeticError):
        return 0
    if not quantity.is_finite() or quantity < 0 or quantity != quantity.to_integral_value():
        return 0
    return int(quantity)


# The one reading of a resource quantity for every reader of the cluster (verify's checks, the memory reads,
# measure): `1k` is 1000 everywhere.
resource_count = _count


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(seconds: float) -> str:
    """`28d 3h`, `5h 12m`, `4m 10s`: how long something has waited, in its two largest units."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _since(snapshot: ClusterSnapshot, value: Any) -> str | None:
    start = _timestamp(value)
    return None if start is None else age((snapshot.now - start).total_seconds())


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"
