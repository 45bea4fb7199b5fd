"""The device plugin's value rules for what a config file names: resource names (qualified as the plugin
qualifies them, RFC 1123 subdomains, length) and device references (indexes, MIG indexes, UUIDs)."""

from __future__ import annotations

import re

from gpushare.device_plugin.go_compat import (
    go_parse_uint,
)
from gpushare.device_plugin.model import (
    MAX_RESOURCE_NAME_LENGTH,
    RESOURCE_NAME_PREFIX,
    DevicePluginConfigError,
)

# --------------------------------------------------------------------------------------------------------
# Value rules: resource names and device references
# --------------------------------------------------------------------------------------------------------

_DNS1123_SUBDOMAIN_FORMAT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FORMAT)
_DNS1123_SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FORMAT}')"
)


def qualify_resource_name(name: str) -> str:
    """`NewResourceName`: prefix `nvidia.com/` when missing, then check length and format.
    Raises DevicePluginConfigError with the upstream message (no path)."""
    if not name.startswith(RESOURCE_NAME_PREFIX + "/"):
        name = f"{RESOURCE_NAME_PREFIX}/{name}"
    if len(name.encode()) > MAX_RESOURCE_NAME_LENGTH:
        raise DevicePluginConfigError(
            f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {name}"
        )
    short_name = name.split("/", 1)[1]
    problems = []
    if len(short_name.encode()) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(short_name):
        problems.append(_DNS1123_SUBDOMAIN_ERROR)
    if problems:
        raise DevicePluginConfigError(f"incorrect format for resource name '{name}': [{' '.join(problems)}]")
    return name


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def _is_uuid(text: str) -> bool:
    """github.com/google/uuid Parse, byte for byte (including its lax `{...}` form, whose braces are not
    checked)."""
    data = text.encode()
    if len(data) == 32:
        return all(b in _HEX_DIGITS for b in data)
    if len(data) == 36 + 9:
        if data[:9].lower() != b"urn:uuid:":
            return False
        data = data[9:]
    elif len(data) == 36 + 2:
        data = data[1:]
    elif len(data) != 36:
        return False
    if any(data[i] != ord("-") for i in (8, 13, 18, 23)):
        return False
    hex_positions = (0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34)
    return all(data[i] in _HEX_DIGITS and data[i + 1] in _HEX_DIGITS for i in hex_positions)


def _is_decimal_uint(text: str) -> bool:
    return go_parse_uint(text, 10) is not None


def is_device_reference(text: str) -> bool:
    """A `devices` list entry the plugin accepts: GPU index, `gpu:mig` index, `GPU-<uuid>`, `MIG-<uuid>` or
    `MIG-GPU-<uuid>/<gi>/<ci>` (replicas.go)."""
    if _is_decimal_uint(text):
        return True
    index_parts = text.split(":", 1)
    if len(index_parts) == 2 and all(_is_decimal_uint(p) for p in index_parts):
        return True
    if text.startswith("GPU-"):
        return _is_uuid(text[4:])
    if text.startswith("MIG-"):
        suffix = text[4:]
        if _is_uuid(suffix):
            return True
        parts = suffix.split("/", 2)
        return (
            len(parts) == 3
            and parts[0].startswith("GPU-")
            and _is_uuid(parts[0][4:])
            and all(_is_decimal_uint(p) for p in parts[1:])
        )
    return False
