"""A real Apache Kafka KRaft cluster for tests, started from the official Maven jars.

Public API::

    from aiokafka_lead.testing.cluster import KafkaCluster, wait_until

    with KafkaCluster(tmp_dir, brokers=3, listeners=("PLAINTEXT", "SSL")) as cluster:
        cluster.bootstrap()           # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        cluster.kill_node(2); cluster.start_node(2)
        cluster.restart_node(1, new_port=True)
        cluster.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", ...)

The command line (``python -m aiokafka_lead.testing.cluster``) exposes the same
operations for detached clusters found again through ``<dir>/cluster.json``.
"""

from __future__ import annotations

from .cluster import KafkaCluster, NodeStatus
from .config import CLIENT_PROTOCOLS, DEFAULT_SASL_MECHANISMS, NodePorts
from .external import ExternalCluster, ExternalClusterError
from .jars import DEFAULT_KAFKA_VERSION, cache_root, is_provisioned, libs_dir, provision
from .node import ClusterError
from .probe import BrokerInfo, MetadataInfo, ProbeError, fetch_metadata, try_metadata
from .waiting import WaitTimeout, wait_until

__all__ = [
    "CLIENT_PROTOCOLS",
    "DEFAULT_KAFKA_VERSION",
    "DEFAULT_SASL_MECHANISMS",
    "BrokerInfo",
    "ClusterError",
    "ExternalCluster",
    "ExternalClusterError",
    "KafkaCluster",
    "MetadataInfo",
    "NodePorts",
    "NodeStatus",
    "ProbeError",
    "WaitTimeout",
    "cache_root",
    "fetch_metadata",
    "is_provisioned",
    "libs_dir",
    "provision",
    "try_metadata",
    "wait_until",
]
