"""A fleet plan: for each service, the pool (GPU, layout, nodes) that serves its replicas with the fewest GPUs.

Input, a small YAML file:

    services:
      - {name: nlp, measuredMiB: 4621, replicas: 20, isolation: mig}   # isolation: mig | mps | shared, optional
    candidates:                        # catalog GPU models or instance types, or an uncatalogued type
      - PNV5b.8XLARGE96
      - H20
      - {gpu: H20, instanceType: PNV6.8XLARGE128, gpusPerNode: 1}
    ceiling: 0.9                       # optional, the tuning rule's ceiling

Services are not mixed on one GPU: a time-sliced GPU's replicas are sized for its largest process, so
each service gets its own pool. `isolation: mig` takes MIG layouts only, `mps` whole GPUs shared with MPS
only (each client held to memory / replicas; the stack must run NVIDIA's plugin 0.17.1+, helm or
gpu-operator mode), `shared` whole GPUs time-sliced (or exclusive when the process is too big to share);
without it every option but MPS counts (MPS gives the same slots as time-slicing, so it changes no count).
A pool is bought in whole nodes. Choice: fewest GPUs, then least memory left unused
(GPUs x GPU memory - replicas x measured), then, for `isolation: mig`, more MIG instances per GPU, then
the candidates' order and the order of `layout_options` (more slots per GPU first).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpushare import catalog
from gpushare.advise.layout_options import LayoutOption, advise
from gpushare.advise.pool_snippet import PoolSnippet
from gpushare.advise.sharing_modes import mps_layout
from gpushare.catalog import GpuModel
from gpushare.errors import ConfigError, GpushareError, UnreadableConfigError
from gpushare.input_files import InputFileError, read_text
from gpushare.stack.messages import errors_below, validation_message
from gpushare.stack.model import Measurement
from gpushare.suggest import did_you_mean
from gpushare.tuning import DEFAULT_CEILING
from gpushare.yaml_bounds import (
    YamlBoundError,
    YamlTooDeepError,
    accept_plain_dates,
    check_flow_depth,
    refuse_non_json_tags,
    shape_problem,
    yaml_problem,
)

MAX_FLEET_FILE_BYTES = 1_000_000


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)


class Service(Measurement):
    """A service to place: its measurement (as a stack pool states it), how many replicas, which isolation."""

    name: str = Field(min_length=1)
    replicas: int = Field(gt=0)
    isolation: Literal["mig", "mps", "shared"] | None = None


class Candidate(_Model):
    """Where a pool can run: a GPU model, and the instance type carrying it when known."""

    gpu: str
    instance_type: str | None = Field(default=None, alias="instanceType")
    gpus_per_node: int | None = Field(default=None, alias="gpusPerNode", gt=0)

    @model_validator(mode="after")
    def _known(self) -> Candidate:
        try:
            catalog.gpu(self.gpu)
        except GpushareError as err:
            raise ValueError(err.message) from None
        known = catalog.instance_type(self.instance_type or "")
        if known is not None and known.gpu != self.gpu:
            raise ValueError(f"{self.instance_type} carries {known.gpu}, not {self.gpu}")
        if known is not None and self.gpus_per_node not in (None, known.gpus_per_node):
            raise ValueError(f"gpusPerNode: {self.instance_type} has {known.gpus_per_node} GPU(s) per node")
        if self.instance_type and known is None and self.gpus_per_node is None:
            raise ValueError(f"gpusPerNode: required, {self.instance_type} is not in the catalog")
        return self

    @property
    def model(self) -> GpuModel:
        return catalog.gpu(self.gpu)

    @property
    def per_node(self) -> int:
        known = catalog.instance_type(self.instance_type or "")
        return self.gpus_per_node or (known.gpus_per_node if known else 1)

    def describe(self) -> str:
        return f"{self.gpu} on {self.instance_type}" if self.instance_type else self.gpu


class Fleet(_Model):
    services: tuple[Service, ...] = Field(min_length=1)
    candidates: tuple[Candidate, ...] = Field(min_length=1)
    ceiling: float = Field(default=DEFAULT_CEILING, gt=0, le=1, allow_inf_nan=False)

    @model_validator(mode="after")
    def _unique_names(self) -> Fleet:
        seen: set[str] = set()
        for service in self.services:
            if service.name in seen:
                raise ValueError(f"duplicate service name {service.name!r} (each service becomes a pool)")
            seen.add(service.name)
        return self


def _candidate(value: object, source: str, index: int) -> object:
    """A bare string is a catalog instance type or GPU model."""
    if not isinstance(value, str):
        return value
    known = catalog.instance_type(value)
    if known is not None:
        return {"gpu": known.gpu, "instanceType": known.name}
    if value in catalog.GPUS:
        # The catalog's instance type for the GPU when there is exactly one; else the snippet asks for one.
        types = [t.name for t in catalog.INSTANCE_TYPES.values() if t.gpu == value]
        return {"gpu": value, "instanceType": types[0]} if len(types) == 1 else {"gpu": value}
    raise ConfigError(
        f"{value!r} is neither a GPU model nor an instance type of the catalog "
        f"(GPU models: {', '.join(catalog.GPUS)}; instance types: {', '.join(catalog.INSTANCE_TYPES)})",
        source=source,
        key=f"candidates[{index}]",
    )


class _FleetLoader(yaml.SafeLoader):
    pass


refuse_non_json_tags(_FleetLoader)
# An unquoted measuredAt is a date, as in a stack file; an explicit !!timestamp tag is still refused.
accept_plain_dates(_FleetLoader)
# A fleet file lists services and candidates: config > services > [i] > service.
MAX_FLEET_DEPTH = 16


def parse_fleet(text: str, source: str) -> Fleet:
    try:
        # Before the scanner, which looks ahead over every open `[` (200 000 of them took a minute).
        check_flow_depth(text)
        # A fleet file has no use for anchors; refusing aliases keeps `&a [*a, *a, ...]` bombs out.
        if any(isinstance(token, yaml.AliasToken) for token in yaml.scan(text)):
            raise ConfigError("YAML aliases (*name) are not supported in a fleet file", source=source)
        document = yaml.load(text, Loader=_FleetLoader)
    except (YamlBoundError, YamlTooDeepError, RecursionError):
        raise ConfigError(
            f"not valid YAML: nested more than {MAX_FLEET_DEPTH} levels deep", source=source
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {yaml_problem(err)}", source=source) from None
    if shape_problem(document, max_values=MAX_FLEET_FILE_BYTES, max_depth=MAX_FLEET_DEPTH) is not None:
        raise ConfigError(f"not valid YAML: nested more than {MAX_FLEET_DEPTH} levels deep", source=source)
    if not isinstance(document, dict):
        raise ConfigError("expected a mapping with `services` and `candidates`", source=source)
    odd_key = _first_non_string_key(document, "")
    if odd_key is not None:
        where, key = odd_key
        raise ConfigError(
            f"the key {_yaml_text(key)} is read as {_yaml_kind(key)}, not a string: quote it",
            source=source,
            key=where or None,
        )
    candidates = document.get("candidates")
    if isinstance(candidates, list):
        document = {**document, "candidates": [_candidate(v, source, i) for i, v in enumerate(candidates)]}
    try:
        # YAML turns an unquoted `2025-06-01` into a date; the stack file's rule is a string (ISO date).
        return Fleet.model_validate_json(json.dumps(document, default=_iso_date))
    except TypeError as err:  # a YAML type with no JSON form (!!set, !!binary)
        raise ConfigError(str(err), source=source) from None
    except ValidationError as err:
        # Every problem, one line each (as the stack loader reports them); an unknown key first, since a
        # misspelled key (`replica:`) is also why its right spelling is "required".
        details = [
            d for d in err.errors() if not (d["type"] == "too_short" and errors_below(d["loc"], err.errors()))
        ]
        details.sort(key=lambda d: d["type"] != "extra_forbidden")
        problems = [_problem(detail) for detail in details]
        if len(problems) == 1:  # one problem keeps its file and key apart, as the stack loader's do
            ((where, message),) = problems
            raise ConfigError(message, source=source, key=where or None) from None
        raise ConfigError(
            "\n".join(": ".join(part for part in (source, *problem) if part) for problem in problems)
        ) from None


def _first_non_string_key(value: object, where: str) -> tuple[str, object] | None:
    """(the path of the mapping, the key) of the first key YAML read as something other than a string
    (`2025-06-01:` is a date, `1:` an int, `null:` None): JSON would turn it into a string, or refuse it."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return where, key
            found = _first_non_string_key(item, f"{where}.{key}" if where else key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_non_string_key(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def _yaml_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, datetime):
        return "a date and time"
    if isinstance(value, date):
        return "a date"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def _yaml_text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)


def _problem(detail: Mapping[str, Any]) -> tuple[str, str]:
    """(the key path, what is wrong there) of one validation error."""
    loc = detail["loc"]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    if detail["type"] == "extra_forbidden":
        model = _FLEET_KEYS_MODELS.get(loc[0] if len(loc) > 1 else "", Fleet)
        known = [field.alias or name for name, field in model.model_fields.items()]
        message = f"unknown key{did_you_mean(str(loc[-1]), known)} (known: {', '.join(known)})"
    else:
        message = validation_message(detail)
    return where, message


# The models whose keys a fleet file's sections hold, for "unknown key" and its close match.
_FLEET_KEYS_MODELS: dict[object, type[BaseModel]] = {"services": Service, "candidates": Candidate}


def _iso_date(value: object) -> str:
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(f"unsupported YAML value of type {type(value).__name__}")


def load_fleet(path: Path) -> Fleet:
    """The fleet file at `path`; one that cannot be read is an `UnreadableConfigError` (exit 2)."""
    try:
        text = read_text(path, MAX_FLEET_FILE_BYTES)
    except InputFileError as err:
        raise UnreadableConfigError(err.message, source=str(path)) from None
    return parse_fleet(text, str(path))


@dataclass(frozen=True)
class ServicePlan:
    service: Service
    candidate: Candidate
    option: LayoutOption
    nodes: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.candidate.per_node

    @property
    def slots(self) -> int:
        return self.gpus * self.option.slots

    @property
    def wasted_mib(self) -> int:
        return self.gpus * self.candidate.model.memory_mib - self.service.replicas * self.service.measured_mib

    def snippet(self) -> PoolSnippet:
        return PoolSnippet(
            name=self.service.name,
            option=self.option,
            instance_type=self.candidate.instance_type,
            gpus_per_node=self.candidate.per_node,
            nodes=self.nodes,
            measured_at=self.service.measured_at,
            source=self.service.source,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "service": self.service.name,
            "replicas": self.service.replicas,
            "gpu": self.candidate.gpu,
            "instanceType": self.candidate.instance_type,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "slots": self.slots,
            "wastedMiB": self.wasted_mib,
            "option": self.option.as_json(),
        }


def _allowed(option: LayoutOption, isolation: str | None) -> bool:
    if isolation == "mig":
        return option.mode == "mig"
    if isolation == "mps":
        return option.mode == "mps"
    if isolation == "shared":
        return option.mode != "mig"
    return True


def plan_service(service: Service, candidates: tuple[Candidate, ...], ceiling: float) -> ServicePlan:
    best: tuple[tuple[int, int, int, int, int], ServicePlan] | None = None
    for candidate_index, candidate in enumerate(candidates):
        try:
            report = advise(candidate.model, service.measured_mib, ceiling)
        except GpushareError:
            continue  # the process does not fit this GPU
        options = list(report.options)
        if service.isolation == "mps":
            found = mps_layout(candidate.model, service.measured_mib, ceiling)
            options += [found] if found is not None else []
        for option_index, option in enumerate(options):
            if not _allowed(option, service.isolation):
                continue
            gpus = math.ceil(service.replicas / option.slots)
            plan = ServicePlan(service, candidate, option, math.ceil(gpus / candidate.per_node))
            # Ties: a service that asked for MIG gets the most isolation the same GPUs buy.
            isolation = -option.isolation_domains if service.isolation == "mig" else 0
            key = (plan.gpus, plan.wasted_mib, isolation, candidate_index, option_index)
            if best is None or key < best[0]:
                best = (key, plan)
    if best is None:
        wanted = {"mig": " with MIG", "mps": " with MPS", "shared": " without MIG"}.get(
            service.isolation or "", ""
        )
        raise GpushareError(
            f"{service.measured_mib} MiB fits no candidate GPU{wanted} "
            f"({', '.join(c.describe() for c in candidates)})"
        )
    return best[1]


def plan_fleet(fleet: Fleet, source: str) -> tuple[ServicePlan, ...]:
    plans = []
    for index, service in enumerate(fleet.services):
        try:
            plan = plan_service(service, fleet.candidates, fleet.ceiling)
            plan.snippet().checked_entry()  # the stack model's verdict on the pool, e.g. its name
            plans.append(plan)
        except GpushareError as err:
            raise GpushareError(err.message, source=source, key=f"services[{index}]") from None
    return tuple(plans)
