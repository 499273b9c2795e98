"""Broker settings for share-group tests: short acquisition locks and quick membership.

Kafka bounds the group-level ``share.record.lock.duration.ms`` by the static broker settings
``group.share.min/max.record.lock.duration.ms`` (15 s to 60 s by default), and the heartbeat
interval by ``group.share.min.heartbeat.interval.ms`` (5 s); neither can be changed on a
running broker. A cluster started with these settings lets a test use a lock of one or two
seconds and sees a new member assigned within about a second.
"""

from __future__ import annotations

SHARE_TEST_PROPERTIES: dict[str, str] = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": "15000",
    "group.share.min.heartbeat.interval.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.session.timeout.ms": "6000",
    "group.share.session.timeout.ms": "10000",
}

__all__ = ["SHARE_TEST_PROPERTIES"]
