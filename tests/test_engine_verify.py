"""`gpushare verify` on a real API server (make test-engine): the seed's prod cluster after gpushare, loaded
into kube-apiserver (engine_api_server.py), reported on exactly as on fake_cluster's stand-in holding the
same objects, with the read-only ClusterRole of docs/verify.md and nothing more."""

from __future__ import annotations

import copy
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_DIR
from engine_api_server import (
    ENGINE_BIN,
    READER_GROUP,
    READER_USER,
    ApiServer,
    apply_yaml_documents,
    load,
    running_api_server,
)
from test_verify import prod_cluster, rendered

from fake_cluster.apiserver import FakeApiServer
from fake_cluster.gpu_pages import exporter_objects, seed_gpus
from gpushare.cli import main as cli_main

pytestmark = pytest.mark.engine

BINDING = f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpushare-verify
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gpushare-verify}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: {READER_GROUP}}}
"""


def docs_cluster_role() -> str:
    """The ClusterRole block of docs/verify.md, as a reader copies it."""
    text = (PROJECT_DIR / "docs" / "verify.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    return next(block for block in blocks if "kind: ClusterRole\n" in block)


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    missing = [tool for tool in ("etcd", "kube-apiserver") if not (ENGINE_BIN / tool).is_file()]
    if missing:
        pytest.fail(f"not in .engine/bin: {', '.join(missing)}; run make engine")
    with running_api_server(tmp_path_factory.mktemp("apiserver")) as server:
        apply_yaml_documents(server, docs_cluster_role() + "---\n" + BINDING)
        yield server


def seed_prod_cluster() -> list[dict[str, Any]]:
    """test_verify's healthy prod cluster without TKE's GPU exporter: its metrics pages come through the
    pod proxy from a kubelet, which this API server has none of."""
    manifests, labels, _ = rendered(PROJECT_DIR, "prod")
    exporter = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in exporter_objects("tke", seed_gpus(l20_used=4608, t4_used=4401))
        if isinstance(o, dict) and "metadata" in o
    }
    return [
        o
        for o in prod_cluster(manifests, labels)
        if (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) not in exporter
    ]


def _verify(kubeconfig: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    args = ["verify", "--stack", "prod", "--kubeconfig", str(kubeconfig), "--json", "--dir", str(PROJECT_DIR)]
    code = cli_main.main(args, out=out)
    return code, json.loads(out.getvalue())


def test_verify_reports_on_a_real_api_server_what_it_reports_on_the_stand_in(
    api_server: ApiServer, tmp_path: Path
) -> None:
    objects = seed_prod_cluster()
    load(api_server, copy.deepcopy(objects))
    real = _verify(api_server.kubeconfig(READER_USER, tmp_path / "reader.kubeconfig"))
    fake = FakeApiServer().start()
    try:
        fake.load(copy.deepcopy(objects))
        stand_in = _verify(fake.write_kubeconfig(tmp_path / "fake.kubeconfig"))
    finally:
        fake.stop()
    assert real == stand_in
    # Healthy but for the memory check, which has no exporter to read here (a warning: exit 0). With the
    # docs' ClusterRole missing `pods`, the real server answers 403 and verify warns `permission` twice.
    code, report = real
    assert (code, report["ok"], [(f["check"], f["severity"]) for f in report["findings"]]) == (
        0,
        True,
        [("memory-budget", "warning")],
    )
    # The seed: the L20 node 8 slots, the T4 node 3 (as test_verify's healthy cluster).
    assert [(p["name"], [n["allocatable"] for n in p["nodes"]]) for p in real[1]["pools"]] == [
        ("l20", [8]),
        ("t4", [3]),
    ]
