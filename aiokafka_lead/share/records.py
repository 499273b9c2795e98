"""What a share consumer hands out: records with their delivery count and lock deadline,
and the acknowledgement types (KIP-932, KIP-1222)."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Generic

from aiokafka_lead.structs import KT, VT, ConsumerRecord, TopicPartition


class AcknowledgeType(enum.IntEnum):
    """How a delivered record is settled (the wire values of ShareFetch/ShareAcknowledge).

    * ACCEPT: processed; the record is done.
    * RELEASE: give it back; it is delivered again (to any member) with delivery_count + 1.
    * REJECT: unprocessable; the record is archived and never delivered again.
    * RENEW: keep it; its acquisition lock starts over (KIP-1222). The record still needs
      one of the three above later.
    """

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


#: the wire value for offsets inside an acquired range that hold no record (control
#: records, compacted offsets): settled at once, never handed out
GAP = 0


@dataclass(slots=True)
class ShareConsumerRecord(ConsumerRecord[KT, VT], Generic[KT, VT]):
    """A record delivered by a share group: a ``ConsumerRecord`` plus

    * ``delivery_count``: how many times the broker has delivered it (1 the first time);
    * ``lock_deadline``: ``time.monotonic()`` time at which its acquisition lock expires
      (from the broker's AcquisitionLockTimeoutMs, counted from when the request that
      acquired it was sent, so it errs early); after it the broker may give the record to
      another member, and an acknowledgement of it fails with INVALID_RECORD_STATE.
    """

    delivery_count: int = 1
    lock_deadline: float = 0.0

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def lock_remaining_ms(self) -> float:
        """Milliseconds until the acquisition lock expires (negative once it has)."""
        return (self.lock_deadline - time.monotonic()) * 1000


__all__ = ["GAP", "AcknowledgeType", "ShareConsumerRecord"]
