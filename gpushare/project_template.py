"""What `gpushare init` writes for a team's own Pulumi project: the repository's program, verbatim.

`tests/test_project_template.py` holds these texts equal to the repository's own `Pulumi.yaml` and
`__main__.py`, byte for byte, so a project started with `init` runs the program this repository tests. The
program's components come with the distribution (the `components` package is in the wheel, with the
`program` extra's SDKs); the first stack file is built by `gpushare.cli.init` from `advise`'s pool entry.
"""

from __future__ import annotations

from typing import Final

PULUMI_YAML: Final = """\
name: gpushare
description: GPU sharing on Tencent TKE as reviewed code - node pools, time-slicing, device plugins, MIG.
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: venv
# The project's keys, as `pulumi config` shows and checks them (the full shapes: docs/stack-file.md; the
# program's loader checks every value further). A key declared without a default is required by the CLI,
# so the optional ones carry the model's own default. `gpushare:kubeconfig` (a secret kubeconfig, optional)
# is not declared: a declared key needs a default, and a default would be a plain-text value.
# `type: object` needs the Pulumi CLI 3.187.0 or newer (pulumi/pulumi#20132).
config:
  cluster:
    type: object
    description: "The TKE cluster the GPU pools join: {id, vpcId, subnetIds, kubernetesVersion}"
  pools:
    type: array
    items:
      type: object
    description: "One TKE node pool per GPU model: name, gpu, instanceType, nodes {min, max, desired}, sharing {mode, measuredMiB, measuredAt, source}, ..."
  sharing:
    type: object
    default: {}
    description: "utilizationCeiling (0.9), maxMeasurementAgeDays (180), devicePlugin {mode, version, image, managedPlugin, ...}, fallback"
  protectPools:
    type: boolean
    default: false
    description: "Deletion protection in TKE and Pulumi's protect on every GPU pool"
"""

MAIN_PY: Final = '''\
"""The Pulumi program: read the stack config, build the GPU-sharing cluster, export the capacity plan."""

import pulumi

from components.gpu_sharing_cluster import GpuSharingCluster, GpuSharingClusterArgs
from components.providers import kubernetes_provider, tencentcloud_provider
from components.stack_config import read_stack_config

stack = read_stack_config()
cloud = tencentcloud_provider(stack)
cluster = GpuSharingCluster(
    "gpushare",
    GpuSharingClusterArgs(stack),
    pulumi.ResourceOptions(providers=[cloud, kubernetes_provider(stack, cloud)]),
)
pulumi.export("capacity", cluster.capacity)
pulumi.export("totalSlots", cluster.capacity["totalSlots"])
pulumi.export("slotsBefore", cluster.capacity["slotsBefore"])
'''

# What `pulumi install` reads for the program: this distribution with the program's SDKs.
REQUIREMENTS_TXT: Final = "gpushare[program]==0.1.0\n"
