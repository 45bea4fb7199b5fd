"""Kubernetes' and the OCI distribution's own syntax rules for what a stack names: object names,
label keys and values, taint effects, container image references and chart repository URLs.

Each function returns what is wrong (one phrase) or None. The rules are apimachinery's
(`k8s.io/apimachinery/pkg/util/validation`: IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName,
IsValidLabelValue) and distribution's reference grammar (`github.com/distribution/reference`), so a
value refused here is one the API server or the container runtime would refuse at `pulumi up`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "TAINT_EFFECTS",
    "anchored",
    "chart_repository_problem",
    "dns1123_label_problem",
    "dns1123_subdomain_problem",
    "image_reference_problem",
    "label_value_problem",
    "qualified_name_problem",
]

TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def anchored(pattern: str, *, unicode: bool = False) -> Callable[[str], bool]:
    r"""THE way a syntax rule is written: `pattern` must match the whole value (`fullmatch`; `$` would
    also match before a final newline, so `"t4\n"` passed every rule written with it). ASCII by default:
    Kubernetes, TKE and NVIDIA's Go code parse ASCII, where Python's `\d` and `\w` also match full-width
    and other Unicode digits (full-width U+FF10..U+FF19). `unicode=True` only where the rule itself is Unicode
    (TKE's node-pool names take Chinese letters)."""
    compiled = re.compile(pattern, 0 if unicode else re.ASCII)
    return lambda value: isinstance(value, str) and compiled.fullmatch(value) is not None


_DNS1123_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_is_dns1123_label: Final = anchored(_DNS1123_LABEL)
_is_dns1123_subdomain: Final = anchored(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
# Label values and the name part of qualified names (label keys, taint keys).
_is_qualified_name: Final = anchored(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_MAX: Final = 63
_SUBDOMAIN_MAX: Final = 253

# distribution/reference: name components, an optional registry host[:port], tag, digest. gpushare
# pins images, so a reference needs a tag or a digest, and digests are sha256 (what registries serve).
_PATH_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN: Final = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_IMAGE_REFERENCE_RE: Final = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?",
    re.ASCII,  # Go's \w: [0-9A-Za-z_]
)
_IMAGE_NAME_MAX: Final = 255
CHART_REPOSITORY_SCHEMES: Final = ("https", "http", "oci")


def dns1123_label_problem(value: str) -> str | None:
    """Namespace and container names."""
    if len(value) > _LABEL_MAX:
        return f"{value!r} is longer than {_LABEL_MAX} characters (a DNS-1123 label)"
    if not _is_dns1123_label(value):
        return f"{value!r} is not a DNS-1123 label (lowercase letters, digits and '-', alphanumeric at both ends)"
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Most object names (DaemonSets, ConfigMaps)."""
    if len(value) > _SUBDOMAIN_MAX:
        return f"{value!r} is longer than {_SUBDOMAIN_MAX} characters (a DNS-1123 subdomain)"
    if not _is_dns1123_subdomain(value):
        return (
            f"{value!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
            "alphanumeric at both ends)"
        )
    return None


def qualified_name_problem(value: str) -> str | None:
    """Label and taint keys: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63 characters."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or dns1123_subdomain_problem(prefix)):
        return f"{value!r} is not a qualified name: the prefix before '/' must be a DNS-1123 subdomain"
    if not name or len(name) > _LABEL_MAX or not _is_qualified_name(name):
        return (
            f"{value!r} is not a qualified name ([prefix/]name, name at most {_LABEL_MAX} characters of "
            "letters, digits, '-', '_' and '.', alphanumeric at both ends)"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if value == "":
        return None
    if len(value) > _LABEL_MAX or not _is_qualified_name(value):
        return (
            f"{value!r} is not a label value (at most {_LABEL_MAX} characters of letters, digits, '-', '_' "
            "and '.', alphanumeric at both ends)"
        )
    return None


def image_reference_problem(value: str) -> str | None:
    """`repo:tag`, `repo@sha256:<64 hex>` or `repo:tag@sha256:<64 hex>`, repo optionally behind a registry."""
    match = _IMAGE_REFERENCE_RE.fullmatch(value)
    if match is None:
        return (
            f"{value!r} is not an image reference (registry/repository:tag, repository@sha256:<64 hex> or "
            "repository:tag@sha256:<64 hex>; repository path in lowercase)"
        )
    if len(match["name"]) > _IMAGE_NAME_MAX:
        return f"{value!r}: the repository name is longer than {_IMAGE_NAME_MAX} characters"
    if match["tag"] is None and match["digest"] is None:
        return f"{value!r} names no tag or digest (an unpinned image is whatever `latest` is on the day)"
    return None


def chart_repository_problem(value: str) -> str | None:
    """A Helm chart repository: an http(s) index URL or an oci:// registry path."""
    parts = urlsplit(value)
    if parts.scheme not in CHART_REPOSITORY_SCHEMES or not parts.netloc or re.search(r"\s", value):
        return f"{value!r} is not a chart repository URL (https://..., http://... or oci://...)"
    return None
