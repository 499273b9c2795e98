"""Acknowledgement bookkeeping of a share consumer (no I/O).

A record goes through: acquired by a ShareFetch and buffered, delivered by a poll, then
acknowledged (ACCEPT / RELEASE / REJECT, or RENEW and later one of those). Acknowledgements
wait here per partition until they are sent: piggy-backed on the next ShareFetch to the
node the records came from, or at once by ``commit()`` (ShareAcknowledge). Two modes:

* implicit: whatever a poll delivered and the application did not acknowledge is accepted
  by the next poll or ``commit()``;
* explicit: every delivered record must be acknowledged before the next poll; a poll with
  records still unacknowledged raises ``IllegalStateError``.

What a poll delivered is kept as the batches' record lists it handed out, and what it
accepts, releases or leaves as gaps as runs of offsets (``runs.py``): the cost is per batch,
and per record only for the records the application acknowledges one by one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from aiokafka_lead.errors import IllegalStateError
from aiokafka_lead.share.records import GAP, AcknowledgeType, ShareConsumerRecord
from aiokafka_lead.share.runs import Acks, Run, Span, settle, spans, without
from aiokafka_lead.structs import TopicPartition

Record = ShareConsumerRecord[Any, Any]
#: records of one partition with ascending offsets, as a poll hands them out
Chunk = list[Record]


class _Delivered:
    """One partition's records delivered by the polls since the last one that settled them."""

    __slots__ = ("chunks", "open", "renewed", "settled", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.chunks: list[Chunk] = []
        #: records of ``chunks`` neither acknowledged nor renewed
        self.open = 0
        #: offsets of ``chunks`` acknowledged with a settling type
        self.settled: set[int] = set()
        #: renewed records awaiting their settling type (they outlive the poll's chunks)
        self.renewed: dict[int, Record] = {}

    def holds(self, offset: int) -> bool:
        """``offset`` is in a delivered chunk (and not settled yet)."""
        if offset in self.settled:
            return False
        for chunk in self.chunks:
            first, last = chunk[0].offset, chunk[-1].offset
            if first <= offset <= last:
                if last - first + 1 == len(chunk):
                    return True
                i = bisect.bisect_left([r.offset for r in chunk], offset)
                return chunk[i].offset == offset
        return False

    def unsettled(self) -> list[int]:
        return [
            r.offset
            for chunk in self.chunks
            for r in chunk
            if r.offset not in self.settled and r.offset not in self.renewed
        ]

    def open_spans(self) -> list[Span]:
        """The chunks' offsets neither settled nor renewed, as runs."""
        excluded = sorted(self.settled | self.renewed.keys())
        out: list[Span] = []
        for chunk in self.chunks:
            out += without(chunk_spans(chunk), excluded)
        return out

    def end_poll(self) -> None:
        self.chunks = []
        self.settled = set()
        self.open = 0


def chunk_spans(chunk: Chunk) -> list[Span]:
    """The offsets of a chunk as runs (one when no offset is missing)."""
    first, last = chunk[0].offset, chunk[-1].offset
    if last - first + 1 == len(chunk):
        return [(first, last)]
    return spans([r.offset for r in chunk])


class AckLedger:
    """Delivered records awaiting acknowledgement, and acknowledgements awaiting sending."""

    def __init__(self, *, explicit: bool) -> None:
        self.explicit = explicit
        self._delivered: dict[TopicPartition, _Delivered] = {}
        #: acknowledgements not sent yet, as runs in the order made (a later one wins)
        self._pending: dict[TopicPartition, list[Run]] = {}
        #: the node each partition's records were acquired from (acks go back there)
        self.node_of: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------ recording
    def acquired(self, tp: TopicPartition, node_id: int, gaps: Iterable[Span]) -> None:
        """Records of ``tp`` were acquired from ``node_id``; the ``gaps`` hold no record."""
        self.node_of[tp] = node_id
        runs = [(first, last, GAP) for first, last in gaps]
        if runs:
            self._pending.setdefault(tp, []).extend(runs)

    def delivered(self, chunks: Iterable[Chunk]) -> None:
        for chunk in chunks:
            tp = TopicPartition(chunk[0].topic, chunk[0].partition)
            held = self._delivered.get(tp)
            if held is None:
                held = self._delivered[tp] = _Delivered(tp)
            held.chunks.append(chunk)
            held.open += len(chunk)

    def acknowledge(self, record: Record, kind: AcknowledgeType) -> None:
        kind = kind if type(kind) is AcknowledgeType else AcknowledgeType(kind)
        offset = record.offset
        # a plain tuple finds the TopicPartition key (equal, same hash) without building one
        held = self._delivered.get((record.topic, record.partition))  # type: ignore[call-overload]
        in_poll = held is not None and held.holds(offset)
        if held is None or not (in_poll or offset in held.renewed):
            raise IllegalStateError(
                f"record {record.topic}-{record.partition}@{offset} is not awaiting acknowledgement: "
                "it was not delivered by this consumer's last polls or was already acknowledged"
            )
        if in_poll and offset not in held.renewed:
            held.open -= 1
        if kind is AcknowledgeType.RENEW:
            held.renewed[offset] = record
        else:
            held.renewed.pop(offset, None)
            if in_poll:
                held.settled.add(offset)
        pending = self._pending.get(held.tp)
        if pending is None:
            pending = self._pending[held.tp] = []
        wire = int(kind)
        last = pending[-1] if pending else None
        if last is not None and last[2] == wire and last[1] == offset - 1:
            pending[-1] = (last[0], offset, wire)  # acknowledged in order: one run grows
        else:
            pending.append((offset, offset, wire))

    def before_poll(self) -> None:
        """Implicit mode: accept what the last poll delivered. Explicit: check it is settled."""
        if not self._delivered:
            return
        if self.explicit:
            if any(held.open for held in self._delivered.values()):
                unsettled = self.unsettled()
                shown = ", ".join(f"{tp.topic}-{tp.partition}@{o}" for tp, o in unsettled[:5])
                more = f" and {len(unsettled) - 5} more" if len(unsettled) > 5 else ""
                raise IllegalStateError(
                    f"explicit acknowledgement: {len(unsettled)} delivered record(s) not acknowledged "
                    f"({shown}{more}); call acknowledge(record, type) for each before the next poll"
                )
        else:
            accept = int(AcknowledgeType.ACCEPT)
            for tp, held in self._delivered.items():
                runs = [(first, last, accept) for first, last in held.open_spans()]
                if runs:
                    self._pending[tp] = runs + self._pending.get(tp, [])
        for tp, held in list(self._delivered.items()):
            held.end_poll()
            if not held.renewed:
                del self._delivered[tp]

    def unsettled(self) -> list[tuple[TopicPartition, int]]:
        """Delivered records neither acknowledged nor renewed."""
        return [(tp, o) for tp, held in self._delivered.items() for o in sorted(held.unsettled())]

    def release_all(self) -> None:
        """Closing: every delivered record not yet settled is released."""
        release = int(AcknowledgeType.RELEASE)
        for tp, held in self._delivered.items():
            open_ = held.open_spans() + spans(sorted(held.renewed))
            self._pending.setdefault(tp, []).extend((first, last, release) for first, last in open_)
        self._delivered.clear()

    def release_buffered(self, chunks: Iterable[Chunk]) -> None:
        """Closing: records acquired but never handed out go back."""
        release = int(AcknowledgeType.RELEASE)
        for chunk in chunks:
            tp = TopicPartition(chunk[0].topic, chunk[0].partition)
            pending = self._pending.setdefault(tp, [])
            pending.extend((first, last, release) for first, last in chunk_spans(chunk))

    # ------------------------------------------------------------- sending
    def has_pending(self, node_id: int | None = None) -> bool:
        return any(
            runs and (node_id is None or self.node_of.get(tp) == node_id)
            for tp, runs in self._pending.items()
        )

    def pending_nodes(self) -> set[int]:
        return {self.node_of[tp] for tp, runs in self._pending.items() if runs and tp in self.node_of}

    def take(self, node_id: int, only: set[TopicPartition] | None = None) -> dict[TopicPartition, Acks]:
        """The pending acknowledgements for ``node_id`` (of ``only`` if given), removed."""
        out = {}
        for tp in list(self._pending):
            if self.node_of.get(tp) != node_id or (only is not None and tp not in only):
                continue
            runs = self._pending.pop(tp)
            if runs:
                out[tp] = Acks(settle(runs))
        return out

    def requeue(self, acks: dict[TopicPartition, Acks]) -> None:
        """Acknowledgements whose request failed before the broker answered: send them again
        (a newer acknowledgement of the same offset wins)."""
        for tp, sent in acks.items():
            self._pending[tp] = sent.runs + self._pending.get(tp, [])

    def renewed_records(self, tp: TopicPartition, offsets: Iterable[int]) -> list[Record]:
        held = self._delivered.get(tp)
        if held is None:
            return []
        return [held.renewed[o] for o in offsets if o in held.renewed]


def has_renew(acks: dict[TopicPartition, Acks]) -> bool:
    renew = int(AcknowledgeType.RENEW)
    return any(a.has(renew) for a in acks.values())


__all__ = ["AckLedger", "Chunk", "chunk_spans", "has_renew"]
