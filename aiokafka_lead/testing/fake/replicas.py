"""KIP-392 in the fake: the brokers' ``replica.selector``.

``FakeCluster.replica_selector`` is ``None`` (Kafka's default: consumers read from leaders
only) or a callable ``(cluster, partition, client rack, fetch offset) -> node id | None``
that a leader consults for each partition of a Fetch v11+ carrying a rack id; a node other
than the leader becomes the partition's PreferredReadReplica (answered without records).
With a selector set, followers also serve Fetch v11+, as real brokers do.
"""

from __future__ import annotations

from aiokafka_lead.testing.fake.partition import Partition
from aiokafka_lead.testing.fake.view import ClusterView, ReplicaSelector


def has_offset(part: Partition, node_id: int, fetch_offset: int) -> bool:
    """Whether replica ``node_id`` holds ``fetch_offset`` (a lagging follower may not)."""
    end = part.log_end_offset if node_id == part.leader_id else part.replica_log_end.get(
        node_id, part.log_end_offset
    )
    return part.log_start_offset <= fetch_offset <= end


def rack_aware_selector(
    cluster: ClusterView, part: Partition, rack: str, fetch_offset: int
) -> int | None:
    """As Kafka's ``RackAwareReplicaSelector``: a running replica in the client's rack that
    holds the offset (the leader when it is one of them), else the leader."""
    candidates = [
        node_id
        for node_id in part.replicas
        if cluster.brokers[node_id].rack == rack
        and cluster.brokers[node_id].running
        and has_offset(part, node_id, fetch_offset)
    ]
    if not candidates or part.leader_id in candidates:
        return part.leader_id
    return candidates[0]


__all__ = ["ReplicaSelector", "has_offset", "rack_aware_selector"]
