"""`python -m gpushare measure --stack NAME`: each pool's peak per-pod GPU memory from the live cluster.

Reads, GET only, the GPU memory exporters (or `--prometheus URL`, the peak over `--window`) for the
pools' nodes and shows, per pool, the peak it can establish and the replicas it would give next to the
current ones; a pool whose GPUs are shared without per-pod series is refused with the reason. `--write`
puts the established peaks into `Pulumi.<stack>.yaml` (`measuredMiB`, `measuredAt` today, `source`)
in place, validated by the stack loader first, then prints the new plan.

Exit 0: every pool with a measurement was measured; 1: a pool was refused (the others are still
shown and, with --write, written) or the stack is invalid; 2: bad options, no cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from gpushare import kube_names
from gpushare.cli.arguments import (
    add_command,
    add_source_arguments,
    cluster_arguments,
    source_from_args,
    stack_arguments,
)
from gpushare.errors import GpushareError
from gpushare.plan import build_plan, capacity_json, capacity_table
from gpushare.stack.edit import NewMeasurement, write_measurements
from gpushare.stack.loading import load_stack, stack_file_name
from gpushare.verify.memory_peaks import PoolPeak, pool_peaks

EXIT_OK, EXIT_REFUSED, EXIT_CANNOT_MEASURE = 0, 1, 2


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "measure",
        "each pool's peak per-pod GPU memory from the live cluster (read-only)",
        "Read GPU memory from the exporters the cluster runs (through the API server's pod proxy) or from a "
        "Prometheus HTTP API, and give each pool's peak per-process memory where it can be established: a "
        "GPU held by one pod, or per-pod series. Shows the replicas the peak would give beside the current "
        "ones; --write records it in the stack file (measuredMiB, measuredAt, source) and prints the new plan.",
    )
    stack_arguments(p)
    cluster_arguments(p)
    add_source_arguments(p, window=True)
    p.add_argument(
        "--write",
        action="store_true",
        help="write the peaks into Pulumi.<stack>.yaml (measuredMiB, measuredAt, source), then print the plan",
    )
    p.add_argument("--json", action="store_true", help="the pools' peaks as JSON")
    p.set_defaults(run=cmd_measure)


def _source_text(peak: PoolPeak, exporter: str, via: str, window: str | None, samples: int | None) -> str:
    assert peak.peak is not None
    over = f"max over {window}, {samples or '?'} samples" if window else "one instant reading"
    # No ": " or " #": the value stays a plain scalar where the file had one.
    return f"gpushare measure, peak {peak.peak_mib} MiB ({peak.reason}), {exporter} via {via}, {over}"


def _table(peaks: list[PoolPeak]) -> str:
    rows = [("pool", "gpu", "measured MiB", "peak MiB", "replicas now", "with peak", "how")]
    for p in peaks:
        how = p.reason if p.peak is not None else f"REFUSED: {p.reason}"
        rows.append(
            (
                p.pool,
                p.gpu,
                str(p.measured_mib or "-"),
                str(p.peak_mib or "-"),
                p.replicas_now,
                p.replicas_then or "-",
                how,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ---")
    return "\n".join(lines) + "\n"


def _nodes(api: Any) -> list[dict[str, Any]]:
    """The stack's pool nodes, read as `verify` reads the cluster: one bounded GET (deadlines, size limit)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpushare.verify.reader import BoundedGet, ClusterUnavailable, MalformedAnswer

    server = api.configuration.host
    try:
        body = BoundedGet(api).read(
            client.CoreV1Api(api).list_node, "list nodes", label_selector=kube_names.LABEL_POOL
        )
    except ApiException as err:
        raise ClusterUnavailable(
            f"{server}: list nodes failed: {err.status} {str(err.reason or '').strip()}"
        ) from None
    except ClusterUnavailable:
        raise
    except Exception as err:  # urllib3 and credential errors: one line, exit 2
        raise ClusterUnavailable(
            f"cannot reach the API server at {server}: {' '.join(str(err).split())[:200]}"
        ) from None
    try:
        items = json.loads(body).get("items") or []
    except (ValueError, AttributeError):
        raise MalformedAnswer(f"{server}: list nodes: the answer is not a NodeList") from None
    if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
        raise MalformedAnswer(f"{server}: list nodes: the answer is not a NodeList")
    return items


def cmd_measure(args: argparse.Namespace, out: TextIO) -> int:
    stack = load_stack(Path(args.dir), args.stack)
    try:
        source = source_from_args(args)
    except GpushareError as err:
        sys.stderr.write(f"measure: {err}\n")
        return EXIT_CANNOT_MEASURE
    plan = build_plan(stack)
    from gpushare.verify.memory_live import read_gpu_memory
    from gpushare.verify.reader import api_client

    try:
        api = api_client(args.kubeconfig, args.context)
        with api:
            nodes = _nodes(api)
            pools = {p.name for p in stack.pools}
            names = sorted(
                str(n["metadata"]["name"])
                for n in nodes
                if ((n.get("metadata") or {}).get("labels") or {}).get(kube_names.LABEL_POOL) in pools
            )
            live = read_gpu_memory(api, nodes, names, source)
    except GpushareError as err:
        sys.stderr.write(f"measure: cannot measure: {err}\n")
        return EXIT_CANNOT_MEASURE
    peaks = pool_peaks(plan, nodes, live)
    via = f"Prometheus at {source.prometheus}" if source.prometheus else "the pod proxy"
    updates = {}
    for peak in peaks:
        if peak.peak is not None and peak.writable and peak.peak_mib is not None:
            readings = live.observation.readings[peak.peak.node]
            text = _source_text(peak, readings.exporter, via, source.window, live.samples.get(peak.peak.node))
            updates[peak.pool] = NewMeasurement(peak.peak_mib, datetime.now(UTC).date().isoformat(), text)
    if args.json:
        json.dump(
            {
                "pools": [
                    {
                        "name": p.pool,
                        "measuredMiB": p.measured_mib,
                        "peakMiB": p.peak_mib,
                        "replicasNow": p.replicas_now,
                        "replicasWithPeak": p.replicas_then,
                        "refused": p.peak is None,
                        "reason": p.reason,
                    }
                    for p in peaks
                ],
                "problems": [{"object": o, "message": m} for o, m in live.observation.problems],
            },
            out,
            indent=2,
        )
        out.write("\n")
    else:
        out.write(f"Peak per-pod GPU memory for stack {stack.stack}, from {via}\n\n{_table(peaks)}")
        for obj, message in live.observation.problems:
            out.write(f"warning: {obj}: {message}\n")
    if args.write:
        if updates:
            path = Path(args.dir) / stack_file_name(args.stack)
            new_stack = write_measurements(path, args.stack, updates)
            changed = ", ".join(f"{pool} measuredMiB {u.measured_mib}" for pool, u in updates.items())
            sys.stderr.write(f"wrote {path.name}: {changed}\n")
            if not args.json:
                capacity = capacity_json(build_plan(new_stack))
                out.write(
                    f"\nCapacity plan for stack {args.stack} ({path.name})\n\n{capacity_table(capacity)}\n"
                )
        else:
            sys.stderr.write("nothing written: no pool's peak could be established\n")
    refused = any(p.peak is None and p.measured_mib is not None for p in peaks)
    return EXIT_REFUSED if refused else EXIT_OK
