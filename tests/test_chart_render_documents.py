"""gpushare.offline.chart_render's reading of what a chart's templates render, on its own.

A rendered document is a Kubernetes object only with `apiVersion`, `kind` and `metadata.name`: Helm's own
install refuses one without (client-go: "Object 'Kind' is missing", "apiVersion not set"), so the
offline render refuses it too, naming the release and template, instead of writing a half-object. Empty
documents (a template whose `if` rendered nothing, `---` separators) are skipped, as Helm skips them.
tests/test_chart_render.py renders NVIDIA's real charts; these pin the check on hand-written documents.
"""

from __future__ import annotations

import pytest

from gpushare.offline.chart_render import ChartRenderError, _documents

WHERE = "Helm release kube-system/plugin: chart nvidia-device-plugin 0.17.1: templates/daemonset.yml"
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plugin-config\n"


def test_objects_are_read_and_empty_documents_skipped() -> None:
    text = f"---\n# Source: nvidia-device-plugin/templates/daemonset.yml\n---\n{CONFIG_MAP}---\n"
    assert list(_documents(text, WHERE)) == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plugin-config"}}
    ]


@pytest.mark.parametrize(
    "document",
    [
        "kind: ConfigMap\nmetadata:\n  name: plugin-config\n",  # no apiVersion
        "apiVersion: v1\nmetadata:\n  name: plugin-config\n",  # no kind
        "apiVersion: v1\nkind: ConfigMap\nmetadata: plugin-config\n",  # metadata not a mapping
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: kube-system\n",  # no name
        "- apiVersion: v1\n  kind: ConfigMap\n",  # a list, not an object
    ],
)
def test_a_document_that_is_no_kubernetes_object_is_refused(document: str) -> None:
    with pytest.raises(ChartRenderError) as caught:
        list(_documents(f"{CONFIG_MAP}---\n{document}", WHERE))
    assert str(caught.value) == f"{WHERE}: renders a document that is not a Kubernetes object"
