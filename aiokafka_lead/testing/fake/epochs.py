"""The fake broker's epoch rule, for whatever an epoch fences (leaders, group members,
transactional producers): a request naming an older epoch than the current one is fenced,
one naming a newer epoch is ahead of what this broker knows. What each answers:"""

from __future__ import annotations

from typing import NamedTuple

from aiokafka_lead.error_code import ErrorCode

__all__ = ["LEADER_EPOCH", "MEMBER_EPOCH", "PRODUCER_EPOCH", "EpochErrors", "epoch_error"]


class EpochErrors(NamedTuple):
    older: int
    newer: int


#: a partition leader's epoch in a fetch, produce or list-offsets request (KIP-320)
LEADER_EPOCH = EpochErrors(older=ErrorCode.FENCED_LEADER_EPOCH, newer=ErrorCode.UNKNOWN_LEADER_EPOCH)
#: a KIP-848 member's epoch in an offset commit
MEMBER_EPOCH = EpochErrors(older=ErrorCode.STALE_MEMBER_EPOCH, newer=ErrorCode.FENCED_MEMBER_EPOCH)
#: a transactional producer's epoch
PRODUCER_EPOCH = EpochErrors(older=ErrorCode.PRODUCER_FENCED, newer=ErrorCode.INVALID_PRODUCER_EPOCH)


def epoch_error(sent: int, current: int, errors: EpochErrors) -> int:
    """``errors.older`` when ``sent`` is behind ``current``, ``errors.newer`` when ahead,
    else ``NONE``."""
    if sent < current:
        return errors.older
    if sent > current:
        return errors.newer
    return ErrorCode.NONE
