"""Which version of each API the client speaks, and negotiation with a broker.

The client's range per API is the generated class's stable range, narrowed by:

* Kafka 4.x floors (KIP-896): Produce >= 3, Fetch >= 4, ListOffsets >= 1,
  OffsetCommit >= 2, OffsetForLeaderEpoch >= 2. Produce's floor is ours, never the
  broker's: 4.x brokers advertise Produce v0 but reject v0-v2 (KAFKA-18659).
* caps, where a newer version changes semantics the client does not implement (the
  table with the reasons is in docs/protocol.md): Produce 12, OffsetCommit 9,
  OffsetFetch 9 and TxnOffsetCommit 5 (the next versions key topics by id, KIP-516 /
  KIP-848 / KIP-1319), ApiVersions 4 (v5 checks the cluster and node id, KIP-1242);
  elsewhere the highest stable version generated.

The oldest broker supported is Kafka 2.1, as for Java's 4.x clients (KIP-896); an older
one is recognised by the newest Fetch version it speaks and refused at the handshake.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from aiokafka_lead.errors import UnsupportedVersionError, error_for_code
from aiokafka_lead.protocol.generated import REQUEST_CLASSES, ApiVersionsResponse

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
OFFSET_FOR_LEADER_EPOCH, API_VERSIONS, TXN_OFFSET_COMMIT = 23, 18, 28

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
    OFFSET_COMMIT: 9,
    OFFSET_FETCH: 9,
    TXN_OFFSET_COMMIT: 5,
    API_VERSIONS: 4,
}


#: The oldest Kafka release the client supports, and the Fetch version it introduced.
MIN_BROKER_RELEASE = "2.1"
MIN_BROKER_FETCH = 10
#: the newest Fetch version a broker speaks -> the Kafka release that speaks it
FETCH_RELEASES: dict[int, str] = {
    0: "0.8",
    1: "0.9",
    2: "0.10.0",
    3: "0.10.1 or 0.10.2",
    5: "0.11.0",
    6: "1.0",
    7: "1.1",
    8: "2.0",
    10: "2.1 or 2.2",
    11: "2.3 to 2.6",
    12: "2.7 to 3.0",
    13: "3.1 to 3.4",
    15: "3.5 or 3.6",
    16: "3.7 or 3.8",
    17: "3.9 or 4.0",
    18: "4.1 or newer",
}


def broker_release(fetch_max: int) -> str:
    """The Kafka release(s) whose newest Fetch version is ``fetch_max``."""
    known = [v for v in FETCH_RELEASES if v <= fetch_max]
    if not known:
        return "unknown"
    return FETCH_RELEASES[max(known)]


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

    def too_old(self) -> str | None:
        """Why the broker is older than the client supports (naming its release), or None.
        A broker that does not advertise Fetch is not judged."""
        fetch = self._broker.get(FETCH)
        if fetch is None or fetch[1] >= MIN_BROKER_FETCH:
            return None
        return (
            f"it speaks Fetch only up to v{fetch[1]}, as Kafka {broker_release(fetch[1])} does; "
            f"aiokafka_lead needs Kafka {MIN_BROKER_RELEASE} or newer"
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
