"""The gpushare component package's provider: hosts GpuSharingCluster as `gpushare:index:GpuSharingCluster`.

The Pulumi CLI starts it as `python <package dir> <engine address>` and talks to it over the
ResourceProvider gRPC protocol (GetSchema, Construct). The component and everything it builds live in
the repository (components/, gpushare/); only GpuSharingCluster is public, its subcomponents stay internal.
"""

import sys
import tomllib
from pathlib import Path

from pulumi.provider.experimental import component_provider_host

# The repository root, where `components` and `gpushare` live (the package is a folder of the repository).
REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from components.hosted_gpu_sharing_cluster import GpuSharingCluster  # noqa: E402 (needs the path above)

PACKAGE = "gpushare"
# gpushare's one version (pyproject.toml): the schema's, and what the generated SDKs are published as.
VERSION = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

if __name__ == "__main__":
    component_provider_host([GpuSharingCluster], name=PACKAGE, version=VERSION)
