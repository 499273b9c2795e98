"""aiokafka's private producer attributes that frameworks and instrumentation read, with
aiokafka's meaning (docs/migrating.md, "Frameworks" lists who reads what).

``_closed`` and ``create_batch()`` are the producer's own; this mixin adds the ones it does
not otherwise have: ``client``, ``_partition()`` and the configured ``_key_serializer`` and
``_value_serializer``. aiokafka's ``acks`` default marker, ``producer.producer._missing``, is
:data:`~aiokafka_lead.producer.config.ACKS_UNSET`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiokafka_lead.client_view import AIOKafkaClientView
from aiokafka_lead.config.arguments import check_partition
from aiokafka_lead.errors import UnknownTopicOrPartitionError
from aiokafka_lead.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafka_lead.core.client import ClientCore
    from aiokafka_lead.producer.config import ProducerConfig
    from aiokafka_lead.producer.partitioner import DefaultPartitioner, Partitioner

#: what send() caches per topic: the store's version it was read at, all partitions,
#: the available ones, and each partition's TopicPartition
TopicView = tuple[int, list[int], list[int], dict[int, TopicPartition]]


class ProducerCompat:
    """``producer.client`` (an :class:`AIOKafkaClientView`), ``producer._partition()`` and the
    serializers."""

    if TYPE_CHECKING:  # the producer's parts (AIOKafkaProducer._configure)
        _config: ProducerConfig
        _core: ClientCore
        _partitioner: Partitioner
        _default_partitioner: DefaultPartitioner | None
        _views: dict[str, TopicView]

        def _cache_view(self, topic: str) -> TopicView: ...

        async def partitions_for(self, topic: str) -> set[int]: ...

    @property
    def _key_serializer(self) -> Callable[[Any], bytes] | None:
        return self._config.key_serializer

    @property
    def _value_serializer(self) -> Callable[[Any], bytes] | None:
        return self._config.value_serializer

    @property
    def client(self) -> AIOKafkaClientView:
        """aiokafka's ``AIOKafkaClient`` as instrumentation reads it: ``_bootstrap_servers``,
        ``_client_id``, ``await _wait_on_metadata(topic)`` (the topic's partition ids)."""
        view: AIOKafkaClientView | None = self.__dict__.get("_client_view")
        if view is None:
            view = self.__dict__["_client_view"] = AIOKafkaClientView(self._config, self.partitions_for)
        return view

    def _partition(  # noqa: PLR0917 - aiokafka's positional signature
        self,
        topic: str,
        partition: int | None,
        key: Any,
        value: Any,
        serialized_key: bytes | None,
        serialized_value: bytes | None,
    ) -> int:
        """The partition ``send()`` would give this record now (the topic's metadata must be
        known: ``await producer.client._wait_on_metadata(topic)`` first): ``partition`` if
        given and the topic has it, else the partitioner's choice (for a keyless record
        with the default partitioner, the partition keyless records currently stick to)."""
        store = self._core.store
        parts = store.partitions_for_topic(topic)
        if parts is None:
            raise UnknownTopicOrPartitionError(
                f"no metadata for topic {topic!r} yet: await producer.client._wait_on_metadata(topic) first"
            )
        if partition is not None:
            check_partition(partition)
            if partition not in parts:
                raise ValueError(f"topic {topic!r} has no partition {partition!r} ({sorted(parts)})")
            return partition
        view = self._views.get(topic)
        if view is None or view[0] != store.version:
            view = self._cache_view(topic)
        _, all_parts, available, _ = view
        if self._default_partitioner is not None:
            return self._default_partitioner.partition(topic, serialized_key, all_parts, available)
        return self._partitioner(serialized_key, all_parts, available)


__all__ = ["ProducerCompat"]
