"""What a broker's description of the cluster must satisfy before the client uses it.

Metadata ``Brokers``, KIP-951 ``NodeEndpoints`` and FindCoordinator name nodes by id, host
and port; Metadata names each topic's partitions by index. A value no real broker sends
(a port of 70000, a node id that collides with the pool's own keys, a partition index of
2**31 - 1 or -1, the same index twice) would otherwise reach a socket call or a loop
sized by it. Each function returns ``None`` for a good value, or what is wrong with it,
phrased to follow "<API> from <broker>: ".
"""

from __future__ import annotations

from collections.abc import Iterable

#: node ids above this collide with the pool's coordinator and lane connection keys
MAX_NODE_ID = 2**29 - 1
MAX_HOST_LENGTH = 255
MAX_PORT = 65535


def node_problem(node_id: object, host: object, port: object, *, what: str = "broker") -> str | None:
    """What is wrong with one advertised node, or None."""
    if type(node_id) is not int or not 0 <= node_id <= MAX_NODE_ID:
        return f"{what} node_id {node_id!r} is out of range (0..{MAX_NODE_ID})"
    if (
        not isinstance(host, str)
        or not host
        or len(host) > MAX_HOST_LENGTH
        or any(c.isspace() or not c.isprintable() for c in host)
    ):
        return f"{what} {node_id} has an unusable host {host!r}"
    if type(port) is not int or not 0 < port <= MAX_PORT:
        return f"{what} {node_id} at {host} has port {port!r}, outside 1..{MAX_PORT}"
    return None


def partitions_problem(indexes: Iterable[int]) -> str | None:
    """A topic's partitions must be numbered 0..N-1, each once (Kafka never leaves a gap)."""
    listed = list(indexes)
    count = len(listed)
    if count == 0:
        return "lists no partitions"
    seen = bytearray(count)
    for index in listed:
        if not 0 <= index < count:
            return (
                f"partition_index {index} is out of range: the topic lists {count} partition(s), "
                f"numbered 0..{count - 1}"
            )
        if seen[index]:
            return f"partition_index {index} is listed twice"
        seen[index] = 1
    return None
