"""The one-line notes about ForceNew values every node pool of a stack shares.

TKE cannot change a node pool's subnets in place (the provider marks `subnet_ids` ForceNew), so when every
pool of a stack takes the same subnet list, adding one subnet replaces all GPU pools in one `pulumi up`.
A pool's own `subnetIds` lets a team move one pool at a time; this says when a stack has no such escape.
"""

from __future__ import annotations

from gpushare.stack.model import PROJECT, StackConfig


def shared_force_new_notes(stack: StackConfig) -> list[str]:
    """One line per ForceNew value that two or more pools, all of the stack's pools, share; [] otherwise."""
    pools = stack.pools
    if len(pools) < 2:
        return []
    subnets = {pool.subnet_ids or stack.cluster.subnet_ids for pool in pools}
    if len(subnets) != 1:
        return []
    key = "pools[].subnetIds" if all(pool.subnet_ids for pool in pools) else "cluster.subnetIds"
    names = ", ".join(pool.name for pool in pools)
    return [
        f"{stack.source}: {PROJECT}:{key}: every pool ({names}) sits behind this one list, which TKE cannot "
        "change in place: adding a subnet replaces them all at once; give a pool its own pools[].subnetIds "
        "to move one pool at a time"
    ]
