"""A `gpushare:pools[]` entry for a layout option, as YAML ready to paste into a stack file.

The entry is built as data, checked against the stack model (`gpushare.stack.model.Pool`) so that what
is printed is what the stack accepts, and written with comments on the fields the user has to fill in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gpushare import catalog
from gpushare.advise.layout_options import LayoutOption
from gpushare.errors import GpushareError
from gpushare.stack.model import Pool
from gpushare.stack.placeholders import PLACEHOLDER_PREFIX

# Written where only the user knows the value: the stack model accepts the entry (so what is printed is
# checked), and the stack loader refuses every `FILL-IN` value until it is replaced, naming its key.
INSTANCE_TYPE_PLACEHOLDER = PLACEHOLDER_PREFIX
SOURCE_PLACEHOLDER = f"{PLACEHOLDER_PREFIX}: how and where the process was measured"
MEASURED_AT_PLACEHOLDER = f"{PLACEHOLDER_PREFIX}: YYYY-MM-DD, the day it was measured"


@dataclass(frozen=True)
class PoolSnippet:
    """One pool entry: the option it deploys and where it runs."""

    name: str
    option: LayoutOption
    instance_type: str | None
    gpus_per_node: int
    nodes: int
    measured_at: str | None = None
    source: str | None = None

    @property
    def known_instance_type(self) -> bool:
        return self.instance_type is not None and catalog.instance_type(self.instance_type) is not None

    def entry(self) -> dict[str, Any]:
        """The pool as the stack file holds it (camelCase keys)."""
        option = self.option
        pool: dict[str, Any] = {
            "name": self.name,
            "gpu": option.gpu.key,
            "instanceType": self.instance_type or INSTANCE_TYPE_PLACEHOLDER,
        }
        if not self.known_instance_type:
            pool["gpusPerNode"] = self.gpus_per_node
        pool["nodes"] = {"min": self.nodes, "max": self.nodes, "desired": self.nodes}
        measurement: dict[str, Any] = {"measuredMiB": option.measured_mib}
        if self.measured_at:
            measurement["measuredAt"] = self.measured_at
        measurement["source"] = self.source or SOURCE_PLACEHOLDER
        if option.mode in ("time-slicing", "mps"):
            pool["sharing"] = {"mode": option.mode, **measurement}
        elif option.mode == "exclusive":
            pool["sharing"] = {"mode": "exclusive"}
        else:
            pool["sharing"] = {
                "mode": "mig",
                "migLayout": option.mig_layout,
                "layoutName": option.layout_name(),
                "timeSlicing": measurement,
            }
        return pool

    def checked_entry(self) -> dict[str, Any]:
        """`entry()`, validated by the stack model (`GpushareError` naming the key if it does not pass)."""
        entry = self.entry()
        try:
            Pool.model_validate_json(json.dumps(entry))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise GpushareError(f"pool {self.name}: {where}: {message}") from None
        return entry


def _scalar(value: Any) -> str:
    # JSON scalars are YAML flow scalars; strings are always quoted so that dates stay strings.
    return json.dumps(value)


def _flow(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{_scalar(k) if '.' in k else k}: {_scalar(v)}" for k, v in mapping.items()) + "}"


def render_pools(snippets: Sequence[PoolSnippet]) -> str:
    """The entries as a `gpushare:pools:` block, indented as in the repo's stack files."""
    lines = ["  gpushare:pools:"]
    to_fill: list[str] = []
    for snippet in snippets:
        entry = snippet.checked_entry()
        option = snippet.option
        lines.append(f"    - name: {entry['name']}")
        lines.append(f"      gpu: {entry['gpu']}")
        if snippet.known_instance_type:
            lines.append(f"      instanceType: {entry['instanceType']}")
        else:
            if entry["instanceType"] == INSTANCE_TYPE_PLACEHOLDER:
                to_fill.append("instanceType")
            lines.append(
                f"      instanceType: {entry['instanceType']}  # a Tencent instance type carrying "
                f"{option.gpu.key}; not in the catalog, so check gpusPerNode"
            )
            lines.append(f"      gpusPerNode: {entry['gpusPerNode']}")
        lines.append(f"      nodes: {_flow(entry['nodes'])}")
        sharing = entry["sharing"]
        lines.append("      sharing:")
        lines.append(f"        mode: {sharing['mode']}")
        measurement = sharing.get("timeSlicing", sharing)
        indent = "        "
        if option.mode == "mig":
            lines.append(
                f"        migLayout: {_flow(sharing['migLayout'])}  # {option.slots} slots in "
                f"{option.isolation_domains} MIG instance(s) (gpushare advise)"
            )
            lines.append(f"        layoutName: {sharing['layoutName']}")
            lines.append("        timeSlicing:")
            indent = "          "
        elif option.mode == "time-slicing":
            lines.append(f"        # {option.slots} slots per GPU (gpushare advise)")
        elif option.mode == "mps":
            limit = option.gpu.memory_mib // option.replicas
            lines.append(
                f"        # {option.slots} MPS clients per GPU, each limited to {option.gpu.memory_mib} // "
                f"{option.replicas} = {limit} MiB (gpushare advise)"
            )
        if option.mode != "exclusive":
            lines.append(f"{indent}measuredMiB: {measurement['measuredMiB']}")
            if "measuredAt" in measurement:
                lines.append(f"{indent}measuredAt: {_scalar(measurement['measuredAt'])}")
            else:
                lines.append(f"{indent}measuredAt: {_scalar(MEASURED_AT_PLACEHOLDER)}")
                to_fill.append("measuredAt")
            lines.append(f"{indent}source: {_scalar(measurement['source'])}")
            if measurement["source"] == SOURCE_PLACEHOLDER:
                to_fill.append("source")
    if to_fill:
        keys = ", ".join(dict.fromkeys(to_fill))
        lines.append(
            f"  # Fill in before use: {keys} (every {PLACEHOLDER_PREFIX} value; plan, render and check refuse "
            "a stack that still holds one)"
        )
    return "\n".join(lines) + "\n"
