"""What several handlers share: error codes, leadership checks and KIP-951 hints."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from aiokafka_lead.error_code import ErrorCode
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import Response
from aiokafka_lead.testing.fake.epochs import LEADER_EPOCH, epoch_error

if TYPE_CHECKING:
    from aiokafka_lead.testing.fake.partition import Partition
    from aiokafka_lead.testing.fake.view import ClusterView

Handler: TypeAlias = Callable[
    ["ClusterView", int, RequestHeader, Any], Awaitable[Response | None]
]


_R = TypeVar("_R", bound=Response)
_Q = TypeVar("_Q")


def coordinator_only(
    kind: Literal["group", "transaction"], response: Callable[..., _R]
) -> Callable[
    [Callable[[ClusterView, int, RequestHeader, _Q], Awaitable[_R]]],
    Callable[[ClusterView, int, RequestHeader, _Q], Awaitable[_R]],
]:
    """For the handler of a request only a coordinator answers: the group's
    (``request.group_id``) or the transaction's (``request.transactional_id``). Any other
    node answers ``response(error_code=NOT_COORDINATOR)`` without calling the handler."""

    def wrap(
        handler: Callable[[ClusterView, int, RequestHeader, _Q], Awaitable[_R]],
    ) -> Callable[[ClusterView, int, RequestHeader, _Q], Awaitable[_R]]:
        @functools.wraps(handler)
        async def checked(cluster: ClusterView, node_id: int, header: RequestHeader, request: _Q) -> _R:
            req: Any = request  # a group request names group_id, a transaction's transactional_id
            if kind == "group":
                found = cluster.groups.is_coordinator(node_id, req.group_id)
            else:
                found = cluster.txns.is_coordinator(node_id, req.transactional_id)
            if not found:
                return response(error_code=ErrorCode.NOT_COORDINATOR)
            return await handler(cluster, node_id, header, request)

        return checked

    return wrap


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
    if current_leader_epoch < 0:
        return ErrorCode.NONE
    return epoch_error(current_leader_epoch, part.leader_epoch, LEADER_EPOCH)


def hint_for(cluster: ClusterView, part: Partition) -> Hint:
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
    cluster: ClusterView, node_ids: set[int], cls: Any
) -> list[Any]:
    """NodeEndpoints entries (``cls`` is the response's NodeEndpoint struct)."""
    out = []
    for node_id in sorted(node_ids):
        broker = cluster.brokers.get(node_id)
        if broker is not None:
            out.append(cls(node_id=node_id, host=broker.host, port=broker.port, rack=broker.rack))
    return out
