"""Which version of each API the client speaks, and negotiation with a broker.

The client's range per API is the generated class's stable range, narrowed by:

* Kafka 4.x floors (KIP-896): Produce >= 3, Fetch >= 4, ListOffsets >= 1,
  OffsetCommit >= 2, OffsetForLeaderEpoch >= 2. Produce's floor is ours, never the
  broker's: 4.x brokers advertise Produce v0 but reject v0-v2 (KAFKA-18659).
* aims: Produce 12 (v13 keys topics by id, KIP-516), Fetch 17, Metadata 13,
  ListOffsets 10 (v5+ makes brokers send OFFSET_NOT_AVAILABLE, KIP-207), ApiVersions 4;
  elsewhere the highest stable version generated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from aiokafka_lead.errors import UnsupportedVersionError, error_for_code
from aiokafka_lead.protocol.generated import REQUEST_CLASSES, ApiVersionsResponse

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT = 0, 1, 2, 3, 8
OFFSET_FOR_LEADER_EPOCH, API_VERSIONS = 23, 18

#: KIP-896 minimums (Kafka 4.0 removed the older versions)
FLOORS: dict[int, int] = {
    PRODUCE: 3,
    FETCH: 4,
    LIST_OFFSETS: 1,
    OFFSET_COMMIT: 2,
    OFFSET_FOR_LEADER_EPOCH: 2,
}
#: highest versions the client asks for where that is below the generated maximum
AIMS: dict[int, int] = {
    PRODUCE: 12,
    FETCH: 17,
    METADATA: 13,
    LIST_OFFSETS: 10,
    API_VERSIONS: 4,
}


def _client_range(api_key: int) -> tuple[int, int]:
    cls = REQUEST_CLASSES[api_key]
    low = max(cls.MIN_VERSION, FLOORS.get(api_key, 0))
    high = min(cls.MAX_VERSION, AIMS.get(api_key, cls.MAX_VERSION))
    return low, high


#: api key -> (min, max) this client speaks
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {key: _client_range(key) for key in REQUEST_CLASSES}


def api_name(api_key: int) -> str:
    cls = REQUEST_CLASSES.get(api_key)
    return cls.__name__.removesuffix("Request") if cls else f"api key {api_key}"


class ApiVersionTable:
    """The negotiated version per API for one broker connection."""

    __slots__ = ("_broker", "_chosen")

    def __init__(self, broker: Mapping[int, tuple[int, int]]) -> None:
        self._broker = dict(broker)
        self._chosen: dict[int, int] = {}
        for key, (cmin, cmax) in CLIENT_VERSIONS.items():
            if key not in self._broker:
                continue
            bmin, bmax = self._broker[key]
            if key == PRODUCE:
                bmin = max(bmin, FLOORS[PRODUCE])  # never trust the advertised Produce floor
            high = min(cmax, bmax)
            if high >= max(cmin, bmin):
                self._chosen[key] = high

    def version_for(self, api_key: int) -> int:
        """Highest version both sides support, or ``UnsupportedVersionError``."""
        chosen = self._chosen.get(api_key)
        if chosen is not None:
            return chosen
        name = api_name(api_key)
        client = CLIENT_VERSIONS.get(api_key)
        ours = f"v{client[0]}-v{client[1]}" if client else "none (not implemented)"
        broker = self._broker.get(api_key)
        theirs = f"v{broker[0]}-v{broker[1]}" if broker else "none (not advertised)"
        raise UnsupportedVersionError(
            f"no common version of {name} (api key {api_key}): client supports {ours}, "
            f"broker supports {theirs}"
        )

    def supports(self, api_key: int) -> bool:
        return api_key in self._chosen

    def broker_range(self, api_key: int) -> tuple[int, int] | None:
        return self._broker.get(api_key)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """(api_key, chosen version) pairs."""
        return iter(sorted(self._chosen.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{api_name(k)}={v}" for k, v in self)
        return f"ApiVersionTable({inner})"


def negotiate(
    response: ApiVersionsResponse | Mapping[int, tuple[int, int]],
) -> ApiVersionTable:
    """Build the table from an ApiVersions response or an ``{api_key: (min, max)}`` map."""
    if isinstance(response, ApiVersionsResponse):
        if response.error_code:
            raise error_for_code(response.error_code, "ApiVersions failed")
        broker = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
    else:
        broker = dict(response)
    return ApiVersionTable(broker)
