"""gpushare.offline.recording_monitor on its own: what it records for a read (`Resource.get`).

The engine's ReadResourceRequest has no `protect` field (pulumi/proto/resource.proto; the SDK sends the
id, type, name, parent, properties, provider, ...), and the engine keeps a read resource unprotected: a
`.get` with `protect=True` in its options is recorded as read, never as protected, as `pulumi up` would
hold it in the state. The program runs under the echo mocks in this process (no engine, no cloud).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.mock_run import run_program


def test_a_read_asked_to_be_protected_is_recorded_read_and_unprotected(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: scratch\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent(
            """
            import pulumi
            import pulumi_kubernetes as k8s

            k8s.core.v1.ConfigMap.get(
                "existing", "kube-system/existing", opts=pulumi.ResourceOptions(protect=True)
            )
            k8s.core.v1.ConfigMap(
                "owned",
                metadata={"name": "owned", "namespace": "kube-system"},
                opts=pulumi.ResourceOptions(protect=True),
            )
            """
        )
    )
    run = run_program(tmp_path, stack="dev", config={}, mocks=Mocks(), timeout=30)
    read = run.resource("kubernetes:core/v1:ConfigMap", "existing")
    owned = run.resource("kubernetes:core/v1:ConfigMap", "owned")
    assert (read.external, read.protect, read.id) == (True, False, "kube-system/existing")
    assert (owned.external, owned.protect, owned.id) == (False, True, "owned_id")
