"""Kubernetes' and OCI's name rules at their boundaries (apimachinery's and distribution's own limits:
63 characters for a label, 253 for a subdomain, 128 for a tag, 64 hex digits for a sha256 digest)."""

from __future__ import annotations

import pytest

from gpushare.stack import kube_syntax

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("a-b", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-a", False),
        ("a-", False),
        ("a_b", False),
        ("A", False),
        ("a.b", False),
        ("", False),
    ],
)
def test_dns1123_label(value: str, ok: bool) -> None:
    assert (kube_syntax.dns1123_label_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a.b-c", True),
        ("nvidia-device-plugin-daemonset", True),
        (".a", False),
        ("a..b", False),
        ("../../x", False),
        ("a" * 253, True),
        ("a" * 254, False),
    ],
)
def test_dns1123_subdomain(value: str, ok: bool) -> None:
    assert (kube_syntax.dns1123_subdomain_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("tier", True),
        ("example.com/team", True),
        ("nvidia.com/device-plugin.config", True),
        ("a_B.c", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("/a", False),
        ("Example.com/a", False),
        ("a/b/c", False),
        ("a b", False),
        ("", False),
        ("example.com/", False),
    ],
)
def test_qualified_name(value: str, ok: bool) -> None:
    assert (kube_syntax.qualified_name_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("A_b.C-9", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-a", False),
        ("a/b", False),
        ("v a l", False),
    ],
)
def test_label_value(value: str, ok: bool) -> None:
    assert (kube_syntax.label_value_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("nginx:1.25", True),
        ("docker.io/library/nginx:1.25", True),
        ("localhost:5000/a/b:v1", True),
        ("[::1]:5000/a:v1", True),
        (f"nvcr.io/nvidia/k8s-device-plugin@{DIGEST}", True),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.17.1@{DIGEST}", True),
        ("a:" + "t" * 128, True),
        ("a:" + "t" * 129, False),
        ("nginx", False),  # unpinned
        ("Nginx:1", False),  # repository paths are lowercase
        ("a:b:c", False),
        ("a@sha256:abc", False),
        (f"a@sha512:{'0' * 128}", False),
        ("a:-x", False),
        ("NOT AN IMAGE@@", False),
    ],
)
def test_image_reference(value: str, ok: bool) -> None:
    assert (kube_syntax.image_reference_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("https://nvidia.github.io/k8s-device-plugin", True),
        ("oci://registry.example.com/charts", True),
        ("http://127.0.0.1:8080", True),
        ("not a url", False),
        ("file:///etc", False),
        ("https://", False),
        ("https://a b", False),
    ],
)
def test_chart_repository(value: str, ok: bool) -> None:
    assert (kube_syntax.chart_repository_problem(value) is None) is ok
