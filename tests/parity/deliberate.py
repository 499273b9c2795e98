"""The deliberate differences of docs/migrating.md, as the parity scenarios observe them.

Each entry is (scenario, aiokafka's line, aiokafka_lead's line) -> the number of the
difference in docs/migrating.md's "Behaviour that differs on purpose". A scenario passes
when its outcomes are equal line by line except for entries of this table; any other
difference fails it, and so does an entry no scenario produced any more (the table may
only describe differences that exist).
"""

from __future__ import annotations

#: (scenario key, aiokafka line, aiokafka_lead line) -> difference number in docs/migrating.md
DELIBERATE: dict[tuple[str, str, str], int] = {
    # 4: errors follow Kafka's classification: a configuration error is a KafkaError (a
    # RuntimeError, as aiokafka's KafkaError) that is also a ValueError
    **{
        (
            "producer-constructor-checks",
            f"{label}: [class ValueError]",
            f"{label}: [class ValueError, class RuntimeError]",
        ): 4
        for label in (
            "acks=2",
            "compression_type='brotli'",
            "transactional_id with acks=1",
            "idempotence with acks=0",
        )
    },
    # 5: a bad call fails at once with the library's error (aiokafka: an assert, or later)
    (
        "oauthbearer-without-a-provider",
        "producer without sasl_oauth_token_provider: AIOKafkaProducer",
        "producer without sasl_oauth_token_provider: raised KafkaConfigurationError",
    ): 5,
    (
        "argument-checks",
        "getmany(non-TopicPartition): raised AssertionError",
        "getmany(non-TopicPartition): raised TypeError",
    ): 5,
    (
        "argument-checks",
        "getone(non-TopicPartition): raised AssertionError",
        "getone(non-TopicPartition): raised TypeError",
    ): 5,
    (
        "argument-checks",
        "highwater(unassigned): raised AssertionError",
        "highwater(unassigned): raised IllegalStateError",
    ): 5,
    (
        "argument-checks",
        "last_stable_offset(unassigned): raised AssertionError",
        "last_stable_offset(unassigned): raised IllegalStateError",
    ): 5,
    (
        "consumer-start-and-constructor",
        "start twice: raised AssertionError",
        "start twice: raised RuntimeError",
    ): 5,
    (
        "consumer-start-and-constructor",
        "auto_offset_reset='middle': 'constructed'",
        "auto_offset_reset='middle': ['ValueError']",
    ): 5,
    (
        "consumer-start-and-constructor",
        "isolation_level='x': 'constructed'",
        "isolation_level='x': ['ValueError']",
    ): 5,
    (
        "partition-and-key-routing",
        "partition 4 of a 4-partition topic: raised AssertionError",
        "partition 4 of a 4-partition topic: raised ValueError",
    ): 5,
    (
        "partition-and-key-routing",
        "partition -1: raised AssertionError",
        "partition -1: raised ValueError",
    ): 5,
    (
        "send-without-key-and-value",
        "send(topic) with neither key nor value: raised AssertionError",
        "send(topic) with neither key nor value: 'queued'",
    ): 5,
    (
        "transaction-misuse",
        "commit_transaction without begin: raised AssertionError",
        "commit_transaction without begin: raised IllegalStateError",
    ): 5,
    (
        "transaction-misuse",
        "abort_transaction without begin: raised AssertionError",
        "abort_transaction without begin: raised IllegalStateError",
    ): 5,
    (
        "transaction-misuse",
        "begin_transaction twice: raised AssertionError",
        "begin_transaction twice: raised IllegalStateError",
    ): 5,
    # 6: fetched records of several partitions are handed out round-robin over the
    # partitions (aiokafka: one partition's fetched records before the next one's)
    (
        "records-of-two-partitions-handed-out-by-getone",
        "partition changes between consecutive records: 1",
        "partition changes between consecutive records: 5",
    ): 6,
}


#: the scenarios that ran in this session, and the table's entries they showed
RAN: set[str] = set()
SEEN: set[tuple[str, str, str]] = set()


def undocumented(test_key: str, reference: list[str], lead: list[str]) -> list[tuple[str, str]]:
    """The line pairs that differ and are not in the table (lines missing on one side too)."""
    out = []
    for i in range(max(len(reference), len(lead))):
        a = reference[i] if i < len(reference) else "-"
        b = lead[i] if i < len(lead) else "-"
        if a != b and (test_key, a, b) not in DELIBERATE:
            out.append((a, b))
    return out


def observed(test_key: str, reference: list[str], lead: list[str]) -> set[tuple[str, str, str]]:
    """The table's entries this run of ``test_key`` showed."""
    return {(test_key, a, b) for a, b in zip(reference, lead, strict=False) if (test_key, a, b) in DELIBERATE}
