"""A far link on the in-process fake cluster: every ApiVersions exchange takes a round trip
across it. The producer tells a far link from a slow broker by that exchange
(``lanes.ROUND_TRIP_FLOOR_S``), so delaying only the produce requests makes a slow broker on a
near link."""

from __future__ import annotations

from aiokafka_lead.testing.fake import FakeCluster
from aiokafka_lead.testing.fake.broker import API_VERSIONS
from aiokafka_lead.testing.fake.intercept import Delay

ROUND_TRIP_S = 0.02


def far_link(fc: FakeCluster) -> None:
    """Call before the client connects: each connection's ApiVersions exchange takes
    ``ROUND_TRIP_S``."""
    fc.intercept(API_VERSIONS, lambda *_: Delay(ROUND_TRIP_S), times=None)
