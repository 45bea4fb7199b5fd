"""`python -m gpushare measure --stack NAME`: each pool's peak per-pod GPU memory from the live cluster.

Reads, GET only, the GPU memory exporters (or `--prometheus URL`, the peak over `--window`) for the
pools' nodes and shows, per pool, the peak it can establish and the replicas it would give next to the
current ones; a pool whose GPUs are shared without per-pod series is refused with the reason. `--write`
puts the established peaks into `Pulumi.<stack>.yaml` (`measuredMiB`, `measuredAt` today, `source`)
in place, validated by the stack loader first, then prints the new plan. It writes only a peak over a
window (`--prometheus` with `--window` of at least 1h, or `--scrapes` 5 or more), and an edit that lowers
any pool's (or the fallback's) slots only with `--allow-fewer-slots` (without it: the plan before and
after, nothing written).

Before anything is read, the cluster's gpushare objects must not name another stack or cluster.

Exit 0: every pool with a measurement was measured; 1: a pool was refused (the others are still
shown and, with --write, written), fewer slots without the flag, or the stack is invalid; 2: bad options,
no cluster, another stack's cluster, a stack file that cannot be written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
from gpushare.plan import FALLBACK_KEY, SharingPlan, build_plan, capacity_json, capacity_table
from gpushare.stack.edit import NewMeasurement, commit, prepare_measurements
from gpushare.stack.loading import load_stack, stack_file_name
from gpushare.verify.memory_peaks import PoolPeak, pool_peaks
from gpushare.verify.memory_source import (
    MAX_INTERVAL_SECONDS,
    MAX_SCRAPES,
    MIN_INTERVAL_SECONDS,
    MIN_WRITE_SAMPLES,
    MIN_WRITE_SCRAPES,
    MIN_WRITE_WINDOW_SECONDS,
    window_seconds,
)
from gpushare.yaml_bounds import loads_json_bounded

EXIT_OK, EXIT_REFUSED, EXIT_CANNOT_MEASURE = 0, 1, 2
# The `source:` text written into the stack file: one plain line of printable ASCII, at most this long
# (an exporter's labels are not the stack's to carry: a 200 KB label once stopped `check` from starting).
MAX_SOURCE_CHARS = 240
# Between repeated scrapes (tests replace it).
_sleep = time.sleep


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
        "--scrapes",
        type=int,
        default=1,
        metavar="N",
        help=f"read the exporter pages N times, --interval apart, and take each GPU's peak (1-{MAX_SCRAPES}; "
        f"--write needs {MIN_WRITE_SCRAPES} or more)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help=f"seconds between scrapes ({MIN_INTERVAL_SECONDS:g}-{MAX_INTERVAL_SECONDS:g}; default 60)",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="write the peaks into Pulumi.<stack>.yaml (measuredMiB, measuredAt, source), then print the plan; "
        "only a peak over a window (--prometheus --window 1h or longer, or --scrapes "
        f"{MIN_WRITE_SCRAPES} or more)",
    )
    p.add_argument(
        "--allow-fewer-slots",
        action="store_true",
        help="with --write: write even when the new peaks lower a pool's (or the fallback's) slots",
    )
    p.add_argument("--json", action="store_true", help="the pools' peaks as JSON")
    p.set_defaults(run=cmd_measure)


def _plain(text: str) -> str:
    """Printable ASCII with no `: ` or ` #` (the value stays a plain one-line scalar where the file had
    one); anything else from a label or a URL becomes `?`."""
    shown = "".join(c if " " <= c <= "~" else "?" for c in text)
    return shown.replace(": ", "? ").replace(" #", " ?")


def _source_text(peak: PoolPeak, exporter: str, via: str, over: str) -> str:
    assert peak.peak is not None
    text = _plain(f"gpushare measure, peak {peak.peak_mib} MiB ({peak.reason}), {exporter} via {via}, {over}")
    return text if len(text) <= MAX_SOURCE_CHARS else text[: MAX_SOURCE_CHARS - 3] + "..."


def _evidence_problem(args: argparse.Namespace) -> str | None:
    """Why the options cannot give what --write needs (or do not go together); None when they can."""
    if not 1 <= args.scrapes <= MAX_SCRAPES:
        return f"--scrapes {args.scrapes}: between 1 and {MAX_SCRAPES}"
    if not MIN_INTERVAL_SECONDS <= args.interval <= MAX_INTERVAL_SECONDS:
        return f"--interval {args.interval:g}: between {MIN_INTERVAL_SECONDS:g} and {MAX_INTERVAL_SECONDS:g} seconds"
    if args.prometheus and args.scrapes > 1:
        return "--scrapes reads the exporter pages; with --prometheus give --window instead"
    if not args.write:
        return None
    if args.prometheus:
        if not args.window or window_seconds(args.window) < MIN_WRITE_WINDOW_SECONDS:
            return (
                f"--write needs a peak over a window: --window of at least {MIN_WRITE_WINDOW_SECONDS // 3600}h "
                "with --prometheus (one instant reading writes nothing)"
            )
    elif args.scrapes < MIN_WRITE_SCRAPES:
        return (
            f"--write needs a peak over a window: --scrapes {MIN_WRITE_SCRAPES} or more (--interval apart), or "
            f"--prometheus URL --window {MIN_WRITE_WINDOW_SECONDS // 3600}h (one instant reading writes nothing)"
        )
    return None


def _stale_fallback(plan: SharingPlan, updates: dict[str, NewMeasurement]) -> str | None:
    """The fallback `any` is tuned by hand (gpushare:sharing.fallback): said when it shares for a process
    smaller than a peak just written, since `measure` never rewrites it."""
    tuning = plan.fallback.tuning
    if not plan.fallback.shared or tuning is None:
        return None
    pool, largest = max(((name, u.measured_mib) for name, u in updates.items()), key=lambda item: item[1])
    if largest <= tuning.measured_mib:
        return None
    return (
        f"the fallback `{FALLBACK_KEY}` still shares each GPU {plan.fallback.replicas} ways for "
        f"{tuning.measured_mib} MiB, less than {pool}'s new peak of {largest} MiB: a GPU node in no pool would "
        "be shared for smaller processes than yours; update gpushare:sharing.fallback by hand"
    )


def _slot_changes(before: SharingPlan, after: SharingPlan) -> list[tuple[str, int, int]]:
    """(pool, its slots before, after; or the fallback key, its replicas per GPU) for every one the edit
    changes."""
    changes = [
        (old.name, old.slots, new.slots)
        for old, new in zip(before.pools, after.pools, strict=True)
        if old.slots != new.slots
    ]
    if before.fallback.replicas != after.fallback.replicas:
        changes.append((FALLBACK_KEY, before.fallback.replicas, after.fallback.replicas))
    return changes


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

    from gpushare.verify.reader import (
        HARD_STOP_GRACE_SECONDS,
        RUN_SECONDS,
        BoundedGet,
        ClusterUnavailable,
        MalformedAnswer,
        hard_stop,
    )

    server = api.configuration.host
    try:
        with hard_stop(RUN_SECONDS + HARD_STOP_GRACE_SECONDS, str(server)):
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
        items = loads_json_bounded(body).get("items") or []
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
    problem = _evidence_problem(args)
    if problem:
        sys.stderr.write(f"measure: {problem}\n")
        return EXIT_CANNOT_MEASURE
    plan = build_plan(stack)
    from gpushare.verify.expectations import expected_cluster
    from gpushare.verify.identity import Identity, OtherCluster, confirm_identity, identity_refs
    from gpushare.verify.memory_live import TOTAL_SECONDS, read_gpu_memory
    from gpushare.verify.memory_observation import merge_scrapes
    from gpushare.verify.reader import HARD_STOP_GRACE_SECONDS, api_client, hard_stop, read_objects

    try:
        expected = expected_cluster(stack, plan)
        api = api_client(args.kubeconfig, args.context)
        with api:
            server = str(api.configuration.host)
            # Whose cluster this is, before anything is read or judged: another stack's is refused.
            note = confirm_identity(
                Identity(stack.stack, stack.cluster.id), read_objects(api, identity_refs(expected)), server
            )
            if note:
                sys.stderr.write(f"measure: {note}\n")
            nodes = _nodes(api)
            pools = {p.name for p in stack.pools}
            names = sorted(
                str(n["metadata"]["name"])
                for n in nodes
                if ((n.get("metadata") or {}).get("labels") or {}).get(kube_names.LABEL_POOL) in pools
            )
            scrapes = []
            for scrape in range(args.scrapes):
                if scrape:
                    _sleep(args.interval)
                # Each scrape under verify's memory bounds, and a hard stop behind them.
                with hard_stop(TOTAL_SECONDS + HARD_STOP_GRACE_SECONDS, server):
                    scrapes.append(read_gpu_memory(api, nodes, names, source))
            live = merge_scrapes(scrapes) if len(scrapes) > 1 else scrapes[0]
    except OtherCluster as err:
        sys.stderr.write(f"measure: refused: {err}\n")
        return EXIT_CANNOT_MEASURE
    except GpushareError as err:
        sys.stderr.write(f"measure: cannot measure: {err}\n")
        return EXIT_CANNOT_MEASURE
    peaks = pool_peaks(plan, nodes, live)
    via = f"Prometheus at {source.prometheus}" if source.prometheus else "the pod proxy"
    updates = {}
    thin: list[str] = []
    for peak in peaks:
        if peak.peak is not None and peak.writable and peak.peak_mib is not None:
            readings = live.observation.readings[peak.peak.node]
            samples = live.samples.get(peak.peak.node)
            if args.write and (samples or 0) < MIN_WRITE_SAMPLES:
                thin.append(f"{peak.pool} ({samples or 0} samples at node {peak.peak.node})")
                continue
            if source.window:
                over = f"max over {source.window}, {samples or '?'} samples"
            elif args.scrapes > 1:
                over = f"max of {args.scrapes} scrapes {args.interval:g} s apart"
            else:
                over = "one instant reading"
            text = _source_text(peak, readings.exporter, via, over)
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
    refused = any(p.peak is None and p.measured_mib is not None for p in peaks)
    if thin:
        sys.stderr.write(
            f"not written (fewer than {MIN_WRITE_SAMPLES} samples over the window): {', '.join(thin)}\n"
        )
        refused = True
    if args.write:
        if not updates:
            sys.stderr.write("nothing written: no pool's peak could be established\n")
            return EXIT_REFUSED if refused else EXIT_OK
        path = Path(args.dir) / stack_file_name(args.stack)
        edit = prepare_measurements(path, args.stack, updates)
        new_plan = build_plan(edit.stack)
        changes = _slot_changes(plan, new_plan)
        fewer = [c for c in changes if c[2] < c[1]]
        if changes:
            shown = ", ".join(f"{name} {old} -> {new}" for name, old, new in changes)
            sys.stderr.write(f"slots before -> after: {shown}\n")
        if fewer and not args.allow_fewer_slots:
            sys.stderr.write(
                f"nothing written: the new peaks give fewer slots ({', '.join(name for name, _, _ in fewer)}); "
                "review the plan above, then run again with --allow-fewer-slots to write it\n"
            )
            return EXIT_REFUSED
        commit(edit, path.name)
        changed = ", ".join(f"{pool} measuredMiB {u.measured_mib}" for pool, u in updates.items())
        sys.stderr.write(f"wrote {path.name}: {changed}\n")
        stale = _stale_fallback(new_plan, updates)
        if stale:
            sys.stderr.write(f"note: {stale}\n")
        if not args.json:
            capacity = capacity_json(new_plan)
            out.write(f"\nCapacity plan for stack {args.stack} ({path.name})\n\n{capacity_table(capacity)}\n")
    return EXIT_REFUSED if refused else EXIT_OK
