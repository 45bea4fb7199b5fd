"""What a user pays without `verify` and `advise --fleet`: the baselines of bench/live.py, as processes.

* `python -m bench.baselines list --kubeconfig FILE`: what `kubectl get nodes,pods,daemonsets -A -o json`
  costs, with the official `kubernetes` client `verify` uses: list every node, pod and DaemonSet (the
  client's models, which check required fields, as verify reads them), serialise the lists to JSON as
  kubectl prints them. No stack, no checks: only the reading a user would then judge by eye.
* `python -m bench.baselines advise FLEET`: one `gpushare advise --gpu G --measured-mib M` answer (the
  layout search and its table) for every service and candidate GPU of a fleet file, in one process, as a
  user comparing candidates by hand would ask for them; a process that fits no GPU is answered with the
  error the command prints. The fleet file is read the way `advise --fleet` reads it.

Each prints one line of counts, so a run can be checked for having read or answered everything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes import client, config

from gpushare.advise.fleet import load_fleet
from gpushare.advise.layout_options import advise
from gpushare.cli.advise import advice_table
from gpushare.errors import GpushareError


def list_objects(kubeconfig: Path) -> dict[str, int]:
    """Every node, pod and DaemonSet of the cluster, read and serialised as kubectl -o json prints them."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        lists: dict[str, Any] = {
            "nodes": core.list_node(),
            "pods": core.list_pod_for_all_namespaces(),
            "daemonsets": apps.list_daemon_set_for_all_namespaces(),
        }
        for listed in lists.values():
            json.dumps(api.sanitize_for_serialization(listed))
        return {name: len(listed.items) for name, listed in lists.items()}
    finally:
        api.close()


def single_answers(fleet_file: Path) -> dict[str, int]:
    """`advise` for every (service, candidate) of the fleet file: answers given, and refusals among them."""
    fleet = load_fleet(fleet_file)
    answers = refusals = 0
    for service in fleet.services:
        for candidate in fleet.candidates:
            answers += 1
            try:
                advice_table(advise(candidate.model, service.measured_mib, fleet.ceiling))
            except GpushareError:
                refusals += 1
    return {"answers": answers, "refusals": refusals}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.baselines", description=__doc__)
    sub = parser.add_subparsers(dest="baseline", required=True)
    listing = sub.add_parser("list", help="list nodes, pods and DaemonSets with the kubernetes client")
    listing.add_argument("--kubeconfig", type=Path, required=True)
    answers = sub.add_parser("advise", help="one advise answer per service and candidate of a fleet file")
    answers.add_argument("fleet", type=Path)
    args = parser.parse_args(argv)
    counts = list_objects(args.kubeconfig) if args.baseline == "list" else single_answers(args.fleet)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
