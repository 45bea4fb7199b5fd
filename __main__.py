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
