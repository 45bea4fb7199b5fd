"""gpushare.offline.echo_mocks on its own: the names the mocks give Kubernetes objects that have none.

pulumi-kubernetes autonames an object without `metadata.name` as `<generateName or resource name + "-">`
followed by 8 random characters (provider/pkg/metadata/naming.go, `AssignNameIfAutonameable`:
`NewUniqueName(seed, prefix, 8, ...)`); the mocks do the same with 8 hex characters of a hash, so a run is
reproducible. A Helm v3 Release without `name` is `<resource name>-<8 characters>` the same way.
"""

from __future__ import annotations

import re

from pulumi.runtime import MockResourceArgs

from gpushare.offline.echo_mocks import Mocks


def created(typ: str, name: str, inputs: dict[str, object]) -> dict[str, object]:
    resource_id, outputs = Mocks().new_resource(MockResourceArgs(typ, name, inputs, custom=True))
    assert resource_id == f"{name}_id"
    return outputs


def test_an_object_without_a_name_is_named_after_the_resource_and_8_hex_characters() -> None:
    outputs = created(
        "kubernetes:core/v1:ConfigMap", "plugin-config", {"apiVersion": "v1", "kind": "ConfigMap"}
    )
    metadata = outputs["metadata"]
    assert isinstance(metadata, dict)
    assert re.fullmatch(r"plugin-config-[0-9a-f]{8}", metadata["name"])


def test_generate_name_is_the_prefix_when_given() -> None:
    inputs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "tuned-"}}
    metadata = created("kubernetes:core/v1:ConfigMap", "plugin-config", inputs)["metadata"]
    assert isinstance(metadata, dict)
    assert re.fullmatch(r"tuned-[0-9a-f]{8}", metadata["name"])


def test_the_same_resource_gets_the_same_name_on_every_run() -> None:
    inputs = {"apiVersion": "v1", "kind": "ConfigMap"}
    first = created("kubernetes:core/v1:ConfigMap", "plugin-config", inputs)["metadata"]
    again = created("kubernetes:core/v1:ConfigMap", "plugin-config", inputs)["metadata"]
    assert isinstance(first, dict) and isinstance(again, dict)
    assert first["name"] == again["name"]


def test_a_named_object_keeps_its_name() -> None:
    inputs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fixed", "generateName": "x-"}}
    assert created("kubernetes:core/v1:ConfigMap", "plugin-config", inputs)["metadata"] == {
        "name": "fixed",
        "generateName": "x-",
    }


def test_a_helm_release_without_a_name_is_named_after_the_resource() -> None:
    outputs = created("kubernetes:helm.sh/v3:Release", "device-plugin", {"chart": "nvidia-device-plugin"})
    assert re.fullmatch(r"device-plugin-[0-9a-f]{8}", str(outputs["name"]))
