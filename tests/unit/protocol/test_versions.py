"""Version negotiation: KIP-896 floors, client aims, and clear no-overlap errors."""

from __future__ import annotations

import pytest

from aiokafka_lead.error_code import ErrorCode as E
from aiokafka_lead.errors import UnsupportedVersionError
from aiokafka_lead.protocol.messages import REQUEST_CLASSES, ApiVersionsResponse
from aiokafka_lead.protocol.versions import CLIENT_VERSIONS, negotiate

EVERYTHING = {key: (0, 100) for key in REQUEST_CLASSES}


def test_aims_against_a_broker_that_supports_everything() -> None:
    table = negotiate(EVERYTHING)
    assert table.version_for(0) == 12  # Produce: not 13 (topic ids)
    assert table.version_for(1) == 18  # Fetch
    assert table.version_for(3) == 13  # Metadata
    assert table.version_for(2) == 11  # ListOffsets
    assert table.version_for(8) == 9  # OffsetCommit: not 10 (topic ids)
    assert table.version_for(9) == 9  # OffsetFetch: not 10 (topic ids)
    assert table.version_for(28) == 5  # TxnOffsetCommit: not 6 (topic ids)
    assert table.version_for(18) == 4  # ApiVersions: not 5 (KIP-1242 checks)
    assert table.version_for(42) == 3  # DeleteGroups: v3 adds an error message
    assert table.version_for(12) == REQUEST_CLASSES[12].MAX_VERSION  # Heartbeat


def test_floors() -> None:
    assert CLIENT_VERSIONS[0][0] == 3
    assert CLIENT_VERSIONS[1][0] == 4
    assert CLIENT_VERSIONS[2][0] == 1
    assert CLIENT_VERSIONS[8][0] == 2
    assert CLIENT_VERSIONS[23][0] == 2


def test_highest_common_version_is_picked() -> None:
    table = negotiate({**EVERYTHING, 0: (0, 9), 1: (4, 13)})
    assert table.version_for(0) == 9
    assert table.version_for(1) == 13


def test_produce_floor_ignores_what_the_broker_advertises() -> None:
    # Kafka 4.x advertises Produce v0 (KAFKA-18659) but the client never goes below 3
    with pytest.raises(UnsupportedVersionError) as info:
        negotiate({**EVERYTHING, 0: (0, 2)}).version_for(0)
    text = str(info.value)
    assert "Produce" in text and "v3-v12" in text and "v0-v2" in text


def test_fetch_without_v4_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"Fetch.*v4-v18.*v0-v3"):
        negotiate({**EVERYTHING, 1: (0, 3)}).version_for(1)


def test_broker_floor_above_client_max() -> None:
    with pytest.raises(UnsupportedVersionError, match="ListOffsets"):
        negotiate({**EVERYTHING, 2: (12, 13)}).version_for(2)


def test_api_not_advertised() -> None:
    table = negotiate({18: (0, 4)})
    assert not table.supports(0)
    with pytest.raises(UnsupportedVersionError, match="not advertised"):
        table.version_for(0)


def test_from_api_versions_response() -> None:
    resp = ApiVersionsResponse(
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=0, min_version=0, max_version=13),
            ApiVersionsResponse.ApiVersion(api_key=1, min_version=4, max_version=17),
        ]
    )
    table = negotiate(resp)
    assert (table.version_for(0), table.version_for(1)) == (12, 17)
    assert table.broker_range(0) == (0, 13)
    assert "Produce=12" in repr(table)


def test_error_response_raises_its_error() -> None:
    with pytest.raises(UnsupportedVersionError):
        negotiate(ApiVersionsResponse(error_code=E.UNSUPPORTED_VERSION))
