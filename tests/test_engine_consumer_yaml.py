"""gpushare's component package consumed by a Pulumi YAML program (tests/engine_consumers/yaml/Pulumi.yaml,
prod's values), run by the real CLI and pulumi-language-yaml of make engine (make test-engine).

The program's `packages:` entry names a copy of package/ whose `virtualenv: venv` is the project's venv;
the CLI starts the package through the Python language host's RunPlugin (the stand-in, engine/README.md)
and the tencentcloud provider is the stand-in, whose Cluster id is unknown at a preview as a real one's.
What the component registers is read from the CLI's gRPC debug log and held to `gpushare render` of
Pulumi.prod.yaml: the standalone program's resources, for the same values.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import PROJECT_DIR
from engine_api_server import ADMIN_USER, ENGINE_BIN
from engine_stack import EngineProject, registrations
from test_engine_up import cluster_with_tkes_daemonset

from gpushare.offline.manifests import to_plain
from gpushare.offline.recorded import RecordedResource
from gpushare.offline.render import _resource_record, redacted_inputs, render_stack

pytestmark = pytest.mark.engine

CONSUMER = PROJECT_DIR / "tests" / "engine_consumers" / "yaml" / "Pulumi.yaml"
COMPONENT = "gpushare:index:GpuSharingCluster"
CLUSTER_ID = "cls-prod0001"  # Pulumi.prod.yaml's gpushare:cluster.id, the consumer's cluster.id
TKE_URN = "urn:pulumi:prod::gpushare-consumer::tencentcloud:Kubernetes/cluster:Cluster::tke"
# The standalone program's project (Pulumi.yaml) and the consumer's: the one difference in the URNs.
STANDALONE_URN, CONSUMER_URN = "urn:pulumi:prod::gpushare::", "urn:pulumi:prod::gpushare-consumer::"
# A kubeconfig naming no reachable server, as the tencentcloud stand-in's getClusters answers the standalone
# program: a preview needs none.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster: {server: "https://offline.invalid"}
contexts:
- name: offline
  context: {cluster: offline, user: offline}
current-context: offline
users:
- name: offline
  user: {}
"""


def with_own_cluster(program: dict[str, Any]) -> dict[str, Any]:
    """The consumer program with a TKE cluster of its own (the stand-in's) whose id is `cluster.id`."""
    resources = dict(program["resources"])
    resources["tke"] = {
        "type": "tencentcloud:Kubernetes/cluster:Cluster",
        "properties": {"clusterName": "prod", "vpcId": "vpc-prod0001", "clusterVersion": "1.30"},
        "options": {"provider": "${tencentcloud}"},
    }
    component = resources["gpushare"]
    cluster = {**component["properties"]["cluster"], "id": "${tke.id}"}
    resources["gpushare"] = {**component, "properties": {**component["properties"], "cluster": cluster}}
    return {**program, "resources": resources}


class Consumer(EngineProject):
    """The consumer program in `root/project`; `root/package` is package/ (its files linked) with the
    project's venv as its `virtualenv: venv`."""

    protect_pools: bool = True

    def set_up_consumer(self) -> None:
        missing = [t for t in ("pulumi", "pulumi-language-yaml") if not (ENGINE_BIN / t).is_file()]
        if missing:
            raise AssertionError(f"not in .engine/bin: {', '.join(missing)}; run make engine")
        package = self.root / "package"
        package.mkdir()
        for name in ("__main__.py", "PulumiPlugin.yaml", "requirements.txt"):
            (package / name).symlink_to(PROJECT_DIR / "package" / name)
        (package / "venv").symlink_to(PROJECT_DIR / "venv")
        self.copy.mkdir()
        self.write_program(own_cluster=False)
        self.log_in_and_install_plugins()

    def write_program(self, *, own_cluster: bool) -> None:
        program = yaml.safe_load(CONSUMER.read_text())
        program["packages"] = {"gpushare": str(self.root / "package")}
        program["resources"]["gpushare"]["properties"]["protectPools"] = self.protect_pools
        if own_cluster:
            program = with_own_cluster(program)
        (self.copy / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))

    def new_stack(self, stack: str, kubeconfig: str) -> None:
        self.must("stack", "init", stack, "--secrets-provider", "passphrase")
        self.must("config", "set", "--secret", "--stack", stack, "kubeconfig", kubeconfig)


def _consumer(tmp_path_factory: pytest.TempPathFactory, *, protect_pools: bool = True) -> Consumer:
    """A consumer with a backend of its own: each test's stack is `prod`, the name the standalone render's
    annotations (`gpushare.io/stack`) and URNs carry."""
    project = Consumer(PROJECT_DIR, tmp_path_factory.mktemp("engine-consumer-yaml"))
    project.protect_pools = protect_pools
    project.set_up_consumer()
    return project


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """`gpushare render` of Pulumi.prod.yaml, with the consumer's project name in its URNs."""
    result = render_stack(PROJECT_DIR, "prod", tmp_path_factory.mktemp("standalone") / "prod")
    text = (result.out_dir / "resources.json").read_text().replace(STANDALONE_URN, CONSUMER_URN)
    return [_comparable(r) for r in json.loads(text)]


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    # A provider reference is `<provider URN>::<id>`: the offline mocks' id is "<name>_id", the engine's a
    # UUID or its unknown sentinel. The same provider when the URN is.
    provider = record["provider"]
    return {**record, "provider": provider.rsplit("::", 1)[0] if provider else provider}


def _errors(document: dict[str, Any]) -> list[str]:
    return [d["message"] for d in document.get("diagnostics", []) if d.get("severity") == "error"]


def _children(records: list[RecordedResource]) -> dict[str, dict[str, Any]]:
    """What the component registered under itself (every resource below GpuSharingCluster), by URN."""
    redacted = [dataclasses.replace(r, inputs=redacted_inputs(r)) for r in records]
    plain = json.loads(json.dumps(to_plain([_resource_record(r) for r in redacted])))
    children = {r["urn"]: _comparable(r) for r in plain if f"::{COMPONENT}$" in r["urn"]}
    assert len(children) == len([r for r in plain if f"::{COMPONENT}$" in r["urn"]])
    return children


def _standalone_children(standalone: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["urn"]: r for r in standalone if f"::{COMPONENT}$" in r["urn"]}


def test_the_consumer_registers_the_standalone_programs_children(
    tmp_path_factory: pytest.TempPathFactory, standalone: list[dict[str, Any]]
) -> None:
    consumer = _consumer(tmp_path_factory)
    consumer.new_stack("prod", UNREACHABLE_KUBECONFIG)
    document, log = consumer.preview("prod")
    assert document["exitCode"] == 0, _errors(document)
    children = _children(registrations(log))
    expected = _standalone_children(standalone)
    # 3 node-pool and Kubernetes components, 2 node pools, the ConfigMap, TKE's plugin's patch, 1 DaemonSet
    # (l20's; t4's plugin is TKE's adopted one).
    assert len(expected) == 10
    assert sorted(children) == sorted(expected)
    for urn, record in children.items():
        assert record == expected[urn], urn
    # Everything else the standalone stack plans is planned too, under the same URNs (the providers are
    # named as the standalone's), but the stack itself, which is named after the project.
    stack = "pulumi:pulumi:Stack"
    assert {step["op"] for step in document["steps"]} == {"create"}
    assert {step["urn"] for step in document["steps"] if step["newState"]["type"] != stack} == {
        r["urn"] for r in standalone if r["type"] != stack
    }


def _with_unknown_cluster_id(record: dict[str, Any]) -> dict[str, Any]:
    """A standalone child as the consumer registers it when `cluster.id` is its own Cluster's id: wherever the
    id is written (the node pools' `clusterId`, the `gpushare.io/cluster` annotation) it is unknown, and a
    child that writes it depends on the Cluster (docs/component-package.md, "Inputs that are not known
    yet"); nothing else changes."""
    inputs = json.dumps(record["inputs"])
    if f'"{CLUSTER_ID}"' not in inputs:
        return record
    return {
        **record,
        "inputs": json.loads(inputs.replace(f'"{CLUSTER_ID}"', '"<unknown>"')),
        "dependencies": sorted([*record["dependencies"], TKE_URN]),
    }


def test_an_unknown_cluster_id_still_registers_every_child(
    tmp_path_factory: pytest.TempPathFactory, standalone: list[dict[str, Any]]
) -> None:
    consumer = _consumer(tmp_path_factory)
    consumer.write_program(own_cluster=True)
    consumer.new_stack("prod", UNREACHABLE_KUBECONFIG)
    document, log = consumer.preview("prod")
    assert document["exitCode"] == 0, _errors(document)
    assert {step["op"] for step in document["steps"]} == {"create"}
    children = _children(registrations(log))
    expected = {urn: _with_unknown_cluster_id(r) for urn, r in _standalone_children(standalone).items()}
    assert sorted(children) == sorted(expected)
    for urn, record in children.items():
        assert record == expected[urn], urn
    # Every resource of a provider writes the id (the node pools' clusterId, each Kubernetes object's
    # gpushare.io/cluster annotation), so each waits for the Cluster; the components do not.
    waiting = sorted(urn.rsplit("::", 1)[1] for urn, r in children.items() if TKE_URN in r["dependencies"])
    assert waiting == [
        "gpushare-config-configmap",
        "gpushare-l20-pool",
        "gpushare-managed-plugin-patch",
        "gpushare-plugins-l20",
        "gpushare-t4-pool",
    ]


@contextlib.contextmanager
def brought_up(tmp_path_factory: pytest.TempPathFactory, *, protect_pools: bool) -> Iterator[Consumer]:
    """The consumer with the literal id brought up as stack `prod`: node pools by the tencentcloud stand-in,
    the Kubernetes objects on a loopback API server holding TKE's own device-plugin DaemonSet
    (test_engine_up's)."""
    consumer = _consumer(tmp_path_factory, protect_pools=protect_pools)
    with cluster_with_tkes_daemonset(tmp_path_factory.mktemp("apiserver-consumer")) as (server, _):
        kubeconfig = server.kubeconfig(ADMIN_USER, consumer.root / "admin.kubeconfig").read_text()
        consumer.write_program(own_cluster=False)
        consumer.new_stack("prod", kubeconfig)
        consumer.must("up", "--yes", "--skip-preview", "--stack", "prod")
        yield consumer


def _ops(document: dict[str, Any]) -> dict[str, str]:
    return {step["urn"].split("::", 2)[2]: step["op"] for step in document["steps"]}


L20_POOL = "gpushare:index:GpuSharingCluster$gpushare:tke:GpuNodePool$tencentcloud:Kubernetes/nodePool:NodePool::gpushare-l20-pool"
T4_POOL = "gpushare:index:GpuSharingCluster$gpushare:tke:GpuNodePool$tencentcloud:Kubernetes/nodePool:NodePool::gpushare-t4-pool"
# The plan once `cluster.id` is a Cluster the same update creates: the pools move to it (clusterId is among
# their replaceOnChanges: TKE cannot move a pool), each Kubernetes object's gpushare.io/cluster annotation
# changes, nothing else. The preview's JSON lists only the changed resources (and the stack).
MOVED_TO_A_NEW_CLUSTER = {
    "pulumi:pulumi:Stack::gpushare-consumer-prod": "same",
    "tencentcloud:Kubernetes/cluster:Cluster::tke": "create",
    L20_POOL: "replace",
    T4_POOL: "replace",
    "gpushare:index:GpuSharingCluster$gpushare:k8s:TimeSlicingConfig$kubernetes:core/v1:ConfigMap::gpushare-config-configmap": "update",
    "gpushare:index:GpuSharingCluster$gpushare:k8s:ManagedDevicePlugin$kubernetes:apps/v1:DaemonSetPatch::gpushare-managed-plugin-patch": "update",
    "gpushare:index:GpuSharingCluster$gpushare:k8s:DevicePluginDaemonSets$kubernetes:apps/v1:DaemonSet::gpushare-plugins-l20": "update",
}


def test_an_unknown_cluster_id_on_an_existing_stack_plans_no_delete(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The issue's defect: with every child built inside an `apply`, an unknown input registered no child,
    and on an existing stack the engine planned to delete them all. Now every child is planned: the pools
    are replaced (they move to the new cluster), the Kubernetes objects updated, none deleted."""
    with brought_up(tmp_path_factory, protect_pools=False) as consumer:
        consumer.write_program(own_cluster=True)
        document, _ = consumer.preview("prod")
    assert document["exitCode"] == 0, _errors(document)
    assert _ops(document) == MOVED_TO_A_NEW_CLUSTER


def test_protected_pools_refuse_to_move_to_an_unknown_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With prod's `protectPools: true` the same preview fails, on the pools' replacement alone (never on a
    delete of a child that was not registered, the defect's "refusing to delete protected resource")."""
    with brought_up(tmp_path_factory, protect_pools=True) as consumer:
        consumer.write_program(own_cluster=True)
        document, _ = consumer.preview("prod")
    assert document["exitCode"] == 1
    # In the order the engine reaches the pools (concurrent steps): sorted.
    assert sorted(_errors(document)) == [
        "error: preview failed\n",
        *(
            f'error: unable to replace resource "urn:pulumi:prod::gpushare-consumer::{pool}"\nas it is currently '
            "marked for protection. To unprotect the resource, remove the `protect` flag from the resource in "
            "your Pulumi program and run `pulumi up`\n"
            for pool in (L20_POOL, T4_POOL)
        ),
    ]
    assert _ops(document) == MOVED_TO_A_NEW_CLUSTER


def test_pulumi_package_add_stops_at_link(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`pulumi package add <package/>` in a Pulumi YAML program: the CLI reads the package's schema (through
    the stand-in Python host's RunPlugin) and writes it under sdks/, then asks pulumi-language-yaml v1.25.0
    to link it, which that host does not implement: the program declares `packages:` by hand instead
    (docs/component-package.md)."""
    consumer = _consumer(tmp_path_factory)
    program = yaml.safe_load((consumer.copy / "Pulumi.yaml").read_text())
    del program["packages"]
    (consumer.copy / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    consumer.new_stack("prod", UNREACHABLE_KUBECONFIG)
    result = consumer.pulumi("package", "add", str(consumer.root / "package"))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "error: linking package: method Link not implemented"
    assert (consumer.copy / "sdks" / "gpushare" / "gpushare-0.1.0.yaml").is_file()
    assert "packages" not in yaml.safe_load((consumer.copy / "Pulumi.yaml").read_text())
