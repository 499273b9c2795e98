"""What several handlers share: error codes, leadership checks and KIP-951 hints."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import Response

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.cluster import FakeCluster
    from aiokafka_lead.testing.fake.partition import Partition

Handler: TypeAlias = Callable[
    ["FakeCluster", int, RequestHeader, Any], Awaitable[Response | None]
]


#: a node id no fake cluster has, for the "unknown_node" hint
UNKNOWN_NODE_OFFSET = 1000


@dataclass(frozen=True, slots=True)
class Hint:
    """A KIP-951 CurrentLeader plus the nodes to list in NodeEndpoints."""

    leader_id: int
    leader_epoch: int
    endpoint_nodes: tuple[int, ...]


def leader_check(part: Partition, node_id: int, current_leader_epoch: int) -> int:
    """Error for a leader-only request: not the leader, or a fenced / unknown epoch (KIP-320)."""
    if part.leader_id != node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return epoch_check(part, current_leader_epoch)


def epoch_check(part: Partition, current_leader_epoch: int) -> int:
    """Error for a request naming a leader epoch (-1: none): fenced if older, unknown if newer
    (KIP-320); a follower serving a consumer (KIP-392) checks it as the leader does."""
    if current_leader_epoch >= 0:
        if current_leader_epoch < part.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > part.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def hint_for(cluster: FakeCluster, part: Partition) -> Hint:
    """What a stale leader says about the partition, per the mode set by ``move_leader``."""
    leader, epoch = part.leader_id, part.leader_epoch
    mode = part.hint
    if mode == "none":
        return Hint(-1, -1, ())
    if mode == "stale":
        return Hint(leader, max(part.previous_epoch - 1, 0), (leader,))
    if mode == "same_epoch":
        return Hint(leader, part.previous_epoch, (leader,))
    if mode == "unknown_node":
        return Hint(max(cluster.brokers) + UNKNOWN_NODE_OFFSET, epoch, ())
    return Hint(leader, epoch, (leader,))  # "current", "endpoints_only"


def endpoints(
    cluster: FakeCluster, node_ids: set[int], cls: Any
) -> list[Any]:
    """NodeEndpoints entries (``cls`` is the response's NodeEndpoint struct)."""
    out = []
    for node_id in sorted(node_ids):
        broker = cluster.brokers.get(node_id)
        if broker is not None:
            out.append(cls(node_id=node_id, host=broker.host, port=broker.port, rack=broker.rack))
    return out
