"""A scriptable in-process fake Kafka cluster for tests (see docs/testing.md).

    from aiokafka_lead.testing.fake import FakeCluster, Error

    async with FakeCluster(brokers=3) as fc:
        fc.create_topic("t", partitions=3)
        fc.intercept(0, lambda node_id, header, request: Error(7))  # next Produce times out
        fc.move_leader(("t", 0), 2, hint="current")
"""

from aiokafka_lead.testing.fake.cluster import HINT_MODES, FakeCluster, FakeClusterError
from aiokafka_lead.testing.fake.core import Topic
from aiokafka_lead.testing.fake.intercept import (
    Action,
    Close,
    Corrupt,
    Delay,
    Drop,
    Error,
    Interceptor,
    Respond,
    Rewrite,
    Truncate,
    error_response,
)
from aiokafka_lead.testing.fake.log import RequestLog, RequestRecord
from aiokafka_lead.testing.fake.partition import Partition
from aiokafka_lead.testing.fake.replicas import ReplicaSelector, rack_aware_selector
from aiokafka_lead.testing.fake.view import MetadataView

__all__ = [
    "HINT_MODES",
    "Action",
    "Close",
    "Corrupt",
    "Delay",
    "Drop",
    "Error",
    "FakeCluster",
    "FakeClusterError",
    "Interceptor",
    "MetadataView",
    "Partition",
    "ReplicaSelector",
    "RequestLog",
    "RequestRecord",
    "Respond",
    "Rewrite",
    "Topic",
    "Truncate",
    "error_response",
    "rack_aware_selector",
]
