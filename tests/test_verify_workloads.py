"""`python -m gpushare verify` on the prod cluster (tests/test_verify.py builds it from the program's
output and serves it from the fake API server): every plugin workload is checked even after one is
missing, and a node that advertises `nvidia.com/gpu: 0` is not a GPU node.

Prod's plugin workloads, in the order verify checks them: gpushare's DaemonSet for the L20 pool, then
TKE's own DaemonSet it adopted for the T4 pool (`managedPlugin.action: adopt`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_verify import (  # the prod cluster and its fake API server (module fixtures)
    DIRECTORY_ERROR,
    T4_NODE,
    find,
    kubeconfig,
    node,
    prod,
    prod_render,
    server,
    verify,
)

from fake_cluster.apiserver import FakeApiServer

__all__ = ["kubeconfig", "prod", "prod_render", "server"]  # fixtures used by name below

Obj = dict[str, Any]


def test_a_missing_daemonset_does_not_hide_the_next_pools_crash_loop(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    """The L20 DaemonSet is gone (deleted by hand) and the T4 pool's plugin crash-loops on the seed's
    directory `--config-file`: both are reported, the T4 one although the L20 one came first."""
    prod = [o for o in prod if not o["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-l20")]
    pod = find(prod, "Pod", "nvidia-device-plugin-daemonset-q9w4m")
    pod["status"]["containerStatuses"][0].update(
        ready=False,
        restartCount=4,
        state={
            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s restarting failed container"}
        },
        lastState={"terminated": {"exitCode": 1, "reason": "Error", "message": DIRECTORY_ERROR}},
    )
    code, report = verify(server, kubeconfig, prod)
    assert code == 1
    assert [(f["check"], f["object"]) for f in report["findings"]] == [
        ("plugin-config-current", "daemonset/kube-system/nvidia-device-plugin-daemonset-l20"),
        ("plugin-crashloop", "pod/kube-system/nvidia-device-plugin-daemonset-q9w4m"),
    ]
    assert f"on node {T4_NODE} (pool t4)" in report["findings"][1]["message"]


def test_a_node_advertising_zero_gpus_is_not_a_gpu_node_outside_the_pools(
    server: FakeApiServer, kubeconfig: Path, prod: list[Obj]
) -> None:
    """A CPU node whose kubelet still lists `nvidia.com/gpu: 0` (the count a node keeps after its device
    plugin was removed) is not a GPU node: no node-in-no-pool warning, the cluster conforms. With one
    GPU it is (tests/test_verify.py `test_warnings_alone_exit_0`)."""
    prod.append(node("10.0.0.7", {}, {"nvidia.com/gpu": "0"}))
    code, report = verify(server, kubeconfig, prod)
    assert (code, report["findings"]) == (0, [])
