from aiokafka_lead.errors import CorruptRecordError, DecodeError, KafkaError


def test_corrupt_record_error_names_location() -> None:
    err = CorruptRecordError("crc mismatch", topic="t", partition=3, offset=42)
    assert "topic=t" in str(err) and "partition=3" in str(err) and "offset=42" in str(err)
    assert err.offset == 42


def test_decode_error_is_a_kafka_error() -> None:
    assert issubclass(DecodeError, KafkaError)
