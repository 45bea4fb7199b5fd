"""gpushare.offline.recording_monitor on its own: what it records for a read (`Resource.get`).

The engine's ReadResourceRequest has no `protect` field (pulumi/proto/resource.proto; the SDK sends the
id, type, name, parent, properties, provider, ...), and the engine keeps a read resource unprotected: a
`.get` with `protect=True` in its options is recorded as read, never as protected, as `pulumi up` would
hold it in the state. The program runs under the echo mocks in this process (no engine, no cloud).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import MockResourceArgs

from gpushare.offline.echo_mocks import Mocks
from gpushare.offline.mock_run import run_program


def test_a_read_asked_to_be_protected_or_retained_is_recorded_read_unprotected_and_not_retained(
    tmp_path: Path,
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: scratch\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent(
            """
            import pulumi
            import pulumi_kubernetes as k8s

            k8s.core.v1.ConfigMap.get(
                "existing",
                "kube-system/existing",
                opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
            )
            k8s.core.v1.ConfigMap(
                "owned",
                metadata={"name": "owned", "namespace": "kube-system"},
                opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
            )
            """
        )
    )
    run = run_program(tmp_path, stack="dev", config={}, mocks=Mocks(), timeout=30)
    read = run.resource("kubernetes:core/v1:ConfigMap", "existing")
    owned = run.resource("kubernetes:core/v1:ConfigMap", "owned")
    assert (read.external, read.protect, read.id) == (True, False, "kube-system/existing")
    assert (owned.external, owned.protect, owned.id) == (False, True, "owned_id")
    # A read is never deleted (ReadResource carries no retainOnDelete): only the registration keeps it.
    assert (read.retain_on_delete, owned.retain_on_delete) == (False, True)


class _ReadIdMocks(Mocks):
    """`pulumi.runtime.Mocks.new_resource` answers with an optional id: for a read, the mocks' own id, or
    None (then the recorder keeps the id the program read)."""

    def __init__(self, read_id: str | None) -> None:
        super().__init__()
        self.read_id = read_id

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, outputs = super().new_resource(args)
        return (self.read_id if args.resource_id else resource_id), outputs


@pytest.mark.parametrize(
    ("read_id", "recorded"),
    [
        (None, "kube-system/existing"),  # no id from the mocks: the id the program read
        ("kube-system/renamed", "kube-system/renamed"),  # the mocks' answer is the read's id
    ],
)
def test_a_reads_id_is_the_mocks_answer_else_the_id_read(
    tmp_path: Path, read_id: str | None, recorded: str
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: scratch\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        'import pulumi_kubernetes as k8s\n\nk8s.core.v1.ConfigMap.get("existing", "kube-system/existing")\n'
    )
    run = run_program(tmp_path, stack="dev", config={}, mocks=_ReadIdMocks(read_id), timeout=30)
    assert run.resource("kubernetes:core/v1:ConfigMap", "existing").id == recorded
