"""The field rules the stack-file models share (gpushare.stack.model, gpushare.stack.plugin_settings):
ASCII syntax checks for pydantic validators, cross-field errors aimed at a key below the model, the
calendar `measuredAt` may not pass, and the frozen, strict base model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationInfo,
)

from gpushare import catalog
from gpushare.errors import GpushareError
from gpushare.stack import kube_syntax

# RFC 1123 label: a pool name becomes a label value, a ConfigMap key and part of object names.
_is_pool_name = kube_syntax.anchored(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _at(path: str, message: str) -> ValueError:
    """A cross-field error that belongs to a key below the model being validated."""
    return ValueError(f"@{path}|{message}")


# No GPU server carries more (HGX-2/DGX-2: 16); a larger number is a typo that would size the plan.
MAX_GPUS_PER_NODE = 16
# TencentCloud region ids: ap-singapore, na-siliconvalley, ap-shanghai-fsi.
_is_region = kube_syntax.anchored(r"[a-z]{2}-[a-z]+(-[a-z0-9]+)*")


def _syntax(rule: Callable[[str], str | None], value: str) -> str:
    """Run one of `kube_syntax`'s rules as a pydantic validator."""
    problem = rule(value)
    if problem:
        raise ValueError(problem)
    return value


def _matching(pattern: str) -> Callable[[str], str]:
    """A check of one anchored ASCII rule (`kube_syntax.anchored`) for a field validator. pydantic's own
    `pattern=` takes Unicode digits for `\\d` (`1.\uff13\uff10`), so no field uses it."""
    matches = kube_syntax.anchored(pattern)

    def check(value: str) -> str:
        if not matches(value):
            raise ValueError(f"does not match ^{pattern}$")
        return value

    return check


_match_cluster_id = _matching(r"cls-[a-z0-9]+")
_match_vpc_id = _matching(r"vpc-[a-z0-9]+")
_match_minor_version = _matching(r"1\.[0-9]+")
_match_dns_label = _matching(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_match_runtime_class = _matching(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_is_subnet = kube_syntax.anchored(r"subnet-[a-z0-9]+")
_match_node_os = _matching(r"\S(.*\S)?")


def measurement_date(value: str) -> date | None:
    """The calendar day of a `measuredAt` (a date, or an ISO 8601 date and time); None if it is not one."""
    try:
        return date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value).date()
    except ValueError:
        return None


def latest_date_on_earth() -> date:
    """The calendar day in the earliest time zone (UTC+14): no date up to it is in the future anywhere."""
    return (datetime.now(UTC) + timedelta(hours=14)).date()


def _today(info: ValidationInfo) -> date:
    # Tests pass `today` through the validation context so that they do not depend on the calendar.
    context = info.context if isinstance(info.context, dict) else {}
    today = context.get("today")
    return today if isinstance(today, date) else latest_date_on_earth()


def _catalog_gpu(value: str) -> str:
    try:
        catalog.gpu(value)
    except GpushareError as err:
        raise ValueError(err.message) from None
    return value


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)
