"""Request handlers by api key, and the version range the fake advertises for each.

The ranges match what the project negotiates (see ``protocol/versions.py``), so a client
talking to the fake uses the same versions it would use with a Kafka 4.x broker; a test
can lower any maximum with ``FakeCluster(max_versions=...)`` or ``cap_versions``.
"""

from __future__ import annotations

from aiokafka_lead.testing.fake.handlers.common import Handler
from aiokafka_lead.testing.fake.handlers.consumer_groups import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
)
from aiokafka_lead.testing.fake.handlers.fetch import handle_fetch
from aiokafka_lead.testing.fake.handlers.groups import (
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_offset_commit,
    handle_offset_fetch,
    handle_sync_group,
)
from aiokafka_lead.testing.fake.handlers.metadata import (
    handle_api_versions,
    handle_find_coordinator,
    handle_init_producer_id,
    handle_metadata,
)
from aiokafka_lead.testing.fake.handlers.offsets import (
    handle_list_offsets,
    handle_offset_for_leader_epoch,
)
from aiokafka_lead.testing.fake.handlers.produce import handle_produce
from aiokafka_lead.testing.fake.handlers.share_groups import (
    handle_share_acknowledge,
    handle_share_fetch,
    handle_share_group_heartbeat,
)
from aiokafka_lead.testing.fake.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_end_txn,
    handle_txn_offset_commit,
)

#: api key -> (handler, min version, max version)
_TABLE: dict[int, tuple[Handler, int, int]] = {
    0: (handle_produce, 3, 12),
    1: (handle_fetch, 4, 18),
    2: (handle_list_offsets, 1, 11),
    3: (handle_metadata, 0, 13),
    8: (handle_offset_commit, 2, 9),
    9: (handle_offset_fetch, 1, 9),
    10: (handle_find_coordinator, 0, 6),
    11: (handle_join_group, 0, 9),
    12: (handle_heartbeat, 0, 4),
    13: (handle_leave_group, 0, 5),
    14: (handle_sync_group, 0, 5),
    18: (handle_api_versions, 0, 4),
    22: (handle_init_producer_id, 0, 5),
    23: (handle_offset_for_leader_epoch, 2, 4),
    24: (handle_add_partitions_to_txn, 0, 5),
    25: (handle_add_offsets_to_txn, 0, 4),
    26: (handle_end_txn, 0, 5),
    28: (handle_txn_offset_commit, 0, 5),
    68: (handle_consumer_group_heartbeat, 0, 1),
    69: (handle_consumer_group_describe, 0, 1),
    76: (handle_share_group_heartbeat, 1, 1),
    78: (handle_share_fetch, 1, 2),
    79: (handle_share_acknowledge, 1, 2),
}

HANDLERS: dict[int, Handler] = {key: entry[0] for key, entry in _TABLE.items()}
SUPPORTED: dict[int, tuple[int, int]] = {key: (lo, hi) for key, (_, lo, hi) in _TABLE.items()}

__all__ = ["HANDLERS", "SUPPORTED", "Handler"]
