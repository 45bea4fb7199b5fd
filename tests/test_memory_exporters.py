"""gpushare/verify/memory_exporters.py on its own: `--exporter NAMESPACE/NAME[:PORT]` (a TCP port is 1 to
65535; the names are Kubernetes DNS labels and subdomains), and which running pod is an exporter on which
port. The pods through `verify` against fake_cluster are in tests/test_memory_budget.py."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.errors import GpushareError
from gpushare.verify.memory_exporters import NAMED, ExporterPod, NamedExporter, exporter_pod, parse_named
from gpushare.verify.memory_series import DCGM, TKE


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("monitoring/dcgm-exporter", NamedExporter("monitoring", "dcgm-exporter", None)),
        ("monitoring/dcgm-exporter:1", NamedExporter("monitoring", "dcgm-exporter", 1)),  # the lowest port
        (
            "monitoring/dcgm-exporter:65535",
            NamedExporter("monitoring", "dcgm-exporter", 65535),
        ),  # the highest
        ("kube-system/gpu.exporter-0", NamedExporter("kube-system", "gpu.exporter-0", None)),
    ],
)
def test_a_named_exporter_is_read(value: str, expected: NamedExporter) -> None:
    assert parse_named(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "monitoring/dcgm-exporter:0",  # no port 0
        "monitoring/dcgm-exporter:65536",  # one past the highest
        "monitoring/dcgm-exporter:",
        "dcgm-exporter",  # no namespace
        "Monitoring/dcgm-exporter",  # not a DNS label
        "monitoring/dcgm-exporter-",
    ],
)
def test_a_named_exporter_that_is_not_one_is_refused_in_one_line(value: str) -> None:
    with pytest.raises(GpushareError) as refused:
        parse_named(value)
    assert str(refused.value) == (
        f"--exporter {value!r}: expected NAMESPACE/NAME or NAMESPACE/NAME:PORT (NAME a DaemonSet or a pod)"
    )


def _pod(name: str, namespace: str, phase: str = "Running", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"nodeName": "10.0.0.11", "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": phase},
    }


def test_exporters_are_known_by_label_owner_or_name_and_their_default_port() -> None:
    operator = _pod("dcgm-1", "gpu-operator", labels={"app": "nvidia-dcgm-exporter"})
    tke = _pod(
        "nvidia-gpu-exporter-x",
        "kube-system",
        ownerReferences=[{"kind": "DaemonSet", "name": "nvidia-gpu-exporter"}],
    )
    mine = _pod("mine-0", "monitoring")
    assert exporter_pod(operator) == ExporterPod("gpu-operator", "dcgm-1", "10.0.0.11", 9400, DCGM)
    assert exporter_pod(tke) == ExporterPod("kube-system", "nvidia-gpu-exporter-x", "10.0.0.11", 5678, TKE)
    assert exporter_pod(mine) is None  # nothing says it is one
    named = (NamedExporter("monitoring", "mine-0", 9100),)
    assert exporter_pod(mine, named) == ExporterPod("monitoring", "mine-0", "10.0.0.11", 9100, NAMED)
    # Not running: not scraped, whatever it is.
    pending = _pod("dcgm-2", "gpu-operator", phase="Pending", labels={"app": "nvidia-dcgm-exporter"})
    assert exporter_pod(pending) is None
