"""The gpushare component package's provider: hosts GpuSharingCluster as `gpushare:index:GpuSharingCluster`.

The Pulumi CLI starts it as `python <package dir> <engine address>` and talks to it over the
ResourceProvider gRPC protocol (GetSchema, Construct). The component and everything it builds live in
the repository (components/, gpushare/); only GpuSharingCluster is public, its subcomponents stay internal.
"""

import sys
import tomllib
from pathlib import Path
from typing import Any

from pulumi import InputPropertiesError, InputPropertyError, ResourceOptions
from pulumi.provider import main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

# The repository root, where `components` and `gpushare` live (the package is a folder of the repository).
REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from components.hosted_gpu_sharing_cluster import (  # noqa: E402 (needs the path above)
    GpuSharingCluster,
    split_inputs,
    spread_outputs,
)

PACKAGE = "gpushare"
# gpushare's one version (pyproject.toml): the schema's, and what the generated SDKs are published as.
VERSION = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


class GpushareComponentProvider(ComponentProvider):
    """The SDK's component provider, with bad inputs reported as the engine expects them.

    The experimental host wraps whatever a component's constructor raises in `ComponentInitError`, which its
    server turns into gRPC UNKNOWN with a traceback, an `InputPropertiesError` included (pulumi 3.272.0,
    `pulumi/provider/experimental/component.py`): unwrapped here, the engine gets INVALID_ARGUMENT with
    each input's path and reason, as for the inputs the SDK itself refuses.

    The inputs are also judged before the SDK maps them: it replaces an object input that arrives as an
    output (unknown at preview, or secret) with `{}`, so an unknown `sharing.devicePlugin` would silently
    become the defaults and an unknown `pools[0].nodes` a "missing required input"."""

    def construct(
        self, name: str, resource_type: str, inputs: Any, options: ResourceOptions | None = None
    ) -> Any:
        inputs = {key: spread_outputs(value, key) for key, value in inputs.items()}
        split_inputs(name, inputs)
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as err:
            if isinstance(err.inner, InputPropertiesError | InputPropertyError):
                raise err.inner from None
            raise


if __name__ == "__main__":
    # What `component_provider_host([GpuSharingCluster], name=PACKAGE, version=VERSION)` does, with the
    # provider above: the arguments after the program are the engine's address and flags.
    main(GpushareComponentProvider([GpuSharingCluster], PACKAGE, None, VERSION), sys.argv[1:])
