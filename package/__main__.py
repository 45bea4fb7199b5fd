"""The gpushare component package's provider: hosts GpuSharingCluster as `gpushare:index:GpuSharingCluster`.

The Pulumi CLI starts it as `python <package dir> <engine address>` and talks to it over the
ResourceProvider gRPC protocol (GetSchema, Construct). The component and everything it builds live in
the repository (components/, gpushare/); only GpuSharingCluster is public, its subcomponents stay internal.
"""

import sys
from pathlib import Path

# The repository root, where `components` and `gpushare` live (the package is a folder of the repository).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi.provider.experimental import component_provider_host

from components.hosted_gpu_sharing_cluster import GpuSharingCluster

PACKAGE = "gpushare"
VERSION = "0.1.0"

if __name__ == "__main__":
    component_provider_host([GpuSharingCluster], name=PACKAGE, version=VERSION)
