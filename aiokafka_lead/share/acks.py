"""Acknowledgement bookkeeping of a share consumer (no I/O).

A record goes through: acquired by a ShareFetch and buffered, delivered by a poll, then
acknowledged (ACCEPT / RELEASE / REJECT, or RENEW and later one of those). Acknowledgements
wait here per partition until they are sent: piggy-backed on the next ShareFetch to the
node the records came from, or at once by ``commit()`` (ShareAcknowledge). Two modes:

* implicit: whatever a poll delivered and the application did not acknowledge is accepted
  by the next poll or ``commit()``;
* explicit: every delivered record must be acknowledged before the next poll; a poll with
  records still unacknowledged raises ``IllegalStateError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.errors import IllegalStateError
from aiokafka_lead.share.records import GAP, AcknowledgeType, ShareConsumerRecord
from aiokafka_lead.structs import TopicPartition


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: consecutive offsets, one type for all or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


def ack_batches(acks: dict[int, int]) -> list[AckBatch]:
    """Runs of consecutive offsets; a run with one type is sent with a single type."""
    offsets = sorted(acks)
    out: list[AckBatch] = []
    start = 0
    for i in range(1, len(offsets) + 1):
        if i < len(offsets) and offsets[i] == offsets[i - 1] + 1:
            continue
        types = [acks[o] for o in offsets[start:i]]
        single = types.count(types[0]) == len(types)
        out.append(AckBatch(offsets[start], offsets[i - 1], (types[0],) if single else tuple(types)))
        start = i
    return out


class AckLedger:
    """Delivered records awaiting acknowledgement, and acknowledgements awaiting sending."""

    def __init__(self, *, explicit: bool) -> None:
        self.explicit = explicit
        #: delivered by a poll, not yet acknowledged with a settling type
        self._delivered: dict[TopicPartition, dict[int, ShareConsumerRecord[Any, Any]]] = {}
        #: of those, the ones renewed (they do not block the next poll in explicit mode)
        self._renewed: dict[TopicPartition, set[int]] = {}
        #: acknowledgements not sent yet: offset -> wire type
        self._pending: dict[TopicPartition, dict[int, int]] = {}
        #: the node each partition's records were acquired from (acks go back there)
        self.node_of: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------ recording
    def acquired(self, tp: TopicPartition, node_id: int, gaps: Iterable[int]) -> None:
        """Records of ``tp`` were acquired from ``node_id``; ``gaps`` hold no record."""
        self.node_of[tp] = node_id
        pending = None
        for offset in gaps:
            if pending is None:
                pending = self._pending.setdefault(tp, {})
            pending[offset] = GAP

    def delivered(self, records: Iterable[ShareConsumerRecord[Any, Any]]) -> None:
        key: tuple[str, int] | None = None
        held: dict[int, ShareConsumerRecord[Any, Any]] = {}
        for record in records:  # a poll's records come in runs of one partition
            if key != (record.topic, record.partition):
                key = (record.topic, record.partition)
                held = self._delivered.setdefault(TopicPartition(*key), {})
            held[record.offset] = record

    def acknowledge(self, record: ShareConsumerRecord[Any, Any], kind: AcknowledgeType) -> None:
        kind = AcknowledgeType(kind)
        tp = TopicPartition(record.topic, record.partition)
        held = self._delivered.get(tp)
        if held is None or record.offset not in held:
            raise IllegalStateError(
                f"record {tp.topic}-{tp.partition}@{record.offset} is not awaiting acknowledgement: "
                "it was not delivered by this consumer's last polls or was already acknowledged"
            )
        if kind is AcknowledgeType.RENEW:
            self._renewed.setdefault(tp, set()).add(record.offset)
        else:
            del held[record.offset]
            if not held:
                del self._delivered[tp]
            renewed = self._renewed.get(tp)
            if renewed is not None:
                renewed.discard(record.offset)
                if not renewed:
                    del self._renewed[tp]
        self._pending.setdefault(tp, {})[record.offset] = int(kind)

    def before_poll(self) -> None:
        """Implicit mode: accept what the last poll delivered. Explicit: check it is settled."""
        if not self._delivered:
            return
        if self.explicit:
            unsettled = self.unsettled()
            if not unsettled:
                return
            shown = ", ".join(f"{tp.topic}-{tp.partition}@{o}" for tp, o in unsettled[:5])
            more = f" and {len(unsettled) - 5} more" if len(unsettled) > 5 else ""
            raise IllegalStateError(
                f"explicit acknowledgement: {len(unsettled)} delivered record(s) not acknowledged "
                f"({shown}{more}); call acknowledge(record, type) for each before the next poll"
            )
        accept = int(AcknowledgeType.ACCEPT)
        for tp, held in list(self._delivered.items()):
            renewed = self._renewed.get(tp)
            offsets = list(held) if renewed is None else [o for o in held if o not in renewed]
            self._pending.setdefault(tp, {}).update(dict.fromkeys(offsets, accept))
            if renewed is None:
                del self._delivered[tp]
            else:
                for offset in offsets:
                    del held[offset]
                if not held:
                    del self._delivered[tp]

    def unsettled(self) -> list[tuple[TopicPartition, int]]:
        """Delivered records neither acknowledged nor renewed."""
        out: list[tuple[TopicPartition, int]] = []
        for tp, held in self._delivered.items():
            renewed = self._renewed.get(tp, set())
            out.extend((tp, o) for o in sorted(held) if o not in renewed)
        return out

    def release_all(self) -> None:
        """Closing: every delivered record not yet settled is released."""
        for tp, held in list(self._delivered.items()):
            for offset in list(held):
                self._settle(tp, offset, AcknowledgeType.RELEASE)

    def release_buffered(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        pending = self._pending.setdefault(tp, {})
        for offset in offsets:
            pending[offset] = int(AcknowledgeType.RELEASE)

    def _settle(self, tp: TopicPartition, offset: int, kind: AcknowledgeType) -> None:
        held = self._delivered.get(tp)
        if held is not None:
            held.pop(offset, None)
            if not held:
                del self._delivered[tp]
        renewed = self._renewed.get(tp)
        if renewed is not None:
            renewed.discard(offset)
            if not renewed:
                del self._renewed[tp]
        self._pending.setdefault(tp, {})[offset] = int(kind)

    def forget(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        """The broker no longer holds these for us (lock lost): drop what we knew of them."""
        held = self._delivered.get(tp, {})
        for offset in offsets:
            held.pop(offset, None)

    # ------------------------------------------------------------- sending
    def has_pending(self, node_id: int | None = None) -> bool:
        return any(
            acks and (node_id is None or self.node_of.get(tp) == node_id)
            for tp, acks in self._pending.items()
        )

    def pending_nodes(self) -> set[int]:
        return {self.node_of[tp] for tp, acks in self._pending.items() if acks and tp in self.node_of}

    def take(
        self, node_id: int, only: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, dict[int, int]]:
        """The pending acknowledgements for ``node_id`` (of ``only`` if given), removed."""
        out = {}
        for tp in list(self._pending):
            if self.node_of.get(tp) != node_id or (only is not None and tp not in only):
                continue
            acks = self._pending.pop(tp)
            if acks:
                out[tp] = acks
        return out

    def requeue(self, acks: dict[TopicPartition, dict[int, int]]) -> None:
        """Acknowledgements whose request failed before the broker answered: send them again
        (a newer acknowledgement of the same offset wins)."""
        for tp, per in acks.items():
            pending = self._pending.setdefault(tp, {})
            for offset, kind in per.items():
                pending.setdefault(offset, kind)

    def renewed_records(
        self, tp: TopicPartition, offsets: Iterable[int]
    ) -> list[ShareConsumerRecord[Any, Any]]:
        held = self._delivered.get(tp, {})
        return [held[o] for o in offsets if o in held]


def has_renew(acks: dict[TopicPartition, dict[int, int]]) -> bool:
    renew = int(AcknowledgeType.RENEW)
    return any(renew in per.values() for per in acks.values())


__all__ = ["AckBatch", "AckLedger", "ack_batches", "has_renew"]
