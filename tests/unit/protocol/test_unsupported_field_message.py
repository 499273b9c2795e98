"""The error for a field a version cannot carry names the version that was asked for.

Generated encoders are shared by every version with the same wire layout (FetchRequest
v9 and v10 use one encoder, for instance), so the message must not come from the encoder.
"""

from __future__ import annotations

import pytest

from aiokafka_lead.errors import ERROR_CLASSES, UnsupportedVersionError
from aiokafka_lead.protocol.messages import FetchRequest


def fetch_with_last_fetched_epoch() -> FetchRequest:
    partition = FetchRequest.FetchPartition(last_fetched_epoch=3)
    return FetchRequest(topics=[FetchRequest.FetchTopic(topic="t", partitions=[partition])])


@pytest.mark.parametrize("version", range(FetchRequest.MIN_VERSION, 12))
def test_nested_field_names_the_requested_version(version: int) -> None:
    # last_fetched_epoch arrived in Fetch v12.
    with pytest.raises(UnsupportedVersionError) as info:
        fetch_with_last_fetched_epoch().encode(version)
    message = str(info.value)
    assert "FetchRequest.FetchPartition.last_fetched_epoch" in message
    assert f"which version {version} cannot carry" in message


def test_the_reported_case() -> None:
    with pytest.raises(UnsupportedVersionError, match="which version 11 cannot carry"):
        fetch_with_last_fetched_epoch().encode(11)


def test_a_version_that_has_the_field_encodes_it() -> None:
    data = fetch_with_last_fetched_epoch().encode(12)
    assert FetchRequest.decode(data, 12).topics[0].partitions[0].last_fetched_epoch == 3


@pytest.mark.parametrize("version", [7, 8, 9, 10])
def test_top_level_field_names_the_requested_version(version: int) -> None:
    # replica_state (KIP-903) is a tagged field from v15; v7/v8 and v9/v10 share encoders.
    request = FetchRequest(replica_state=FetchRequest.ReplicaState(replica_id=1, replica_epoch=2))
    expected = f"FetchRequest.replica_state .*which version {version} cannot carry"
    with pytest.raises(UnsupportedVersionError, match=expected):
        request.encode(version)


def test_the_raised_error_is_a_plain_unsupported_version_error() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        fetch_with_last_fetched_epoch().encode(9)
    assert type(info.value) is UnsupportedVersionError
    assert ERROR_CLASSES[UnsupportedVersionError.errno] is UnsupportedVersionError
