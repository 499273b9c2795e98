"""Request handlers by api key, and the version range the fake advertises for each.

The ranges are the client's own (``CLIENT_VERSIONS`` in ``protocol/versions.py``), so a client
talking to the fake uses the same versions it would use with a Kafka 4.x broker; a test
can lower any maximum with ``FakeCluster(max_versions=...)`` or ``cap_versions``.
"""

from __future__ import annotations

from aiokafka_lead.protocol.generated import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from aiokafka_lead.protocol.messages import Request
from aiokafka_lead.protocol.versions import CLIENT_VERSIONS
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
from aiokafka_lead.testing.fake.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_end_txn,
    handle_txn_offset_commit,
)

#: the request each handler answers
_BY_REQUEST: dict[type[Request], Handler] = {
    ProduceRequest: handle_produce,
    FetchRequest: handle_fetch,
    ListOffsetsRequest: handle_list_offsets,
    MetadataRequest: handle_metadata,
    OffsetCommitRequest: handle_offset_commit,
    OffsetFetchRequest: handle_offset_fetch,
    FindCoordinatorRequest: handle_find_coordinator,
    JoinGroupRequest: handle_join_group,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave_group,
    SyncGroupRequest: handle_sync_group,
    ApiVersionsRequest: handle_api_versions,
    InitProducerIdRequest: handle_init_producer_id,
    OffsetForLeaderEpochRequest: handle_offset_for_leader_epoch,
    AddPartitionsToTxnRequest: handle_add_partitions_to_txn,
    AddOffsetsToTxnRequest: handle_add_offsets_to_txn,
    EndTxnRequest: handle_end_txn,
    TxnOffsetCommitRequest: handle_txn_offset_commit,
    ConsumerGroupHeartbeatRequest: handle_consumer_group_heartbeat,
    ConsumerGroupDescribeRequest: handle_consumer_group_describe,
}

#: api key -> handler
HANDLERS: dict[int, Handler] = {cls.API_KEY: handler for cls, handler in _BY_REQUEST.items()}
#: api key -> (min, max) advertised: the client's own range (``protocol/versions.py``)
SUPPORTED: dict[int, tuple[int, int]] = {key: CLIENT_VERSIONS[key] for key in HANDLERS}

__all__ = ["HANDLERS", "SUPPORTED", "Handler"]
