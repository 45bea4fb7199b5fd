"""How property values travel between the engine, a program and a policy pack: the unknown sentinel and
the signature-tagged objects (pulumi/sdk/go/common/resource/properties.go).

The values are the Python SDK's own (`pulumi.runtime.rpc`, where all but `UNKNOWN` have private names);
offline/ takes them from here, so no module spells them out again.
"""

from __future__ import annotations

from typing import Any, Final

from pulumi.runtime import rpc

__all__ = ["OUTPUT_VALUE_SIG", "RESOURCE_SIG", "SECRET_SIG", "SIG_KEY", "UNKNOWN", "secret"]

UNKNOWN: Final[str] = rpc.UNKNOWN
"""A computed value, not known yet (preview)."""
SIG_KEY: Final[str] = rpc._special_sig_key
"""The key whose value says what a signature-tagged object is."""
SECRET_SIG: Final[str] = rpc._special_secret_sig
RESOURCE_SIG: Final[str] = rpc._special_resource_sig
OUTPUT_VALUE_SIG: Final[str] = rpc._special_output_value_sig


def secret(value: Any) -> dict[str, Any]:
    """A property value marked secret, encoded as the engine sends it."""
    return {SIG_KEY: SECRET_SIG, "value": value}
