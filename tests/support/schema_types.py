"""Schemas the schema-registry tests share: an Avro record referencing another, Protobuf
messages in a file that imports another (built as descriptors, as protoc would), a JSON Schema."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

AVRO_MONEY = json.dumps(
    {
        "type": "record",
        "name": "Money",
        "namespace": "shop",
        "fields": [{"name": "currency", "type": "string"}, {"name": "units", "type": "long"}],
    }
)
AVRO_ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "string"},
            {"name": "total", "type": "shop.Money"},
            {"name": "items", "type": {"type": "array", "items": "string"}},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
)
AVRO_USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "people",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
    }
)
ORDER_VALUE = {
    "id": "order-7 ünïcode",
    "total": {"currency": "EUR", "units": 1234567890123},
    "items": ["apple", "pear"],
    "note": None,
}

JSON_ORDER = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "shop.Order",
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "total": {
                "type": "object",
                "properties": {"currency": {"type": "string"}, "units": {"type": "integer"}},
            },
            "items": {"type": "array", "items": {"type": "string"}},
            "note": {"type": ["string", "null"]},
        },
        "required": ["id", "total"],
    }
)

_FIELD = descriptor_pb2.FieldDescriptorProto


def _field(name: str, number: int, kind: int, type_name: str = "", repeated: bool = False) -> _FIELD:
    label = _FIELD.LABEL_REPEATED if repeated else _FIELD.LABEL_OPTIONAL
    field = _FIELD(name=name, number=number, type=kind, label=label)
    if type_name:
        field.type_name = type_name
    return field


def _build() -> dict[str, Any]:
    pool = descriptor_pool.Default()
    money = descriptor_pb2.FileDescriptorProto(name="shop/money.proto", package="shop", syntax="proto3")
    money.message_type.add(
        name="Money", field=[_field("currency", 1, _FIELD.TYPE_STRING), _field("units", 2, _FIELD.TYPE_INT64)]
    )
    order = descriptor_pb2.FileDescriptorProto(
        name="shop/order.proto", package="shop", syntax="proto3", dependency=["shop/money.proto"]
    )
    order_message = order.message_type.add(
        name="Order",
        field=[
            _field("id", 1, _FIELD.TYPE_STRING),
            _field("total", 2, _FIELD.TYPE_MESSAGE, ".shop.Money"),
            _field("items", 3, _FIELD.TYPE_STRING, repeated=True),
        ],
    )
    order_message.nested_type.add(
        name="Line", field=[_field("sku", 1, _FIELD.TYPE_STRING), _field("qty", 2, _FIELD.TYPE_INT32)]
    )
    order.message_type.add(
        name="Refund",
        field=[
            _field("order_id", 1, _FIELD.TYPE_STRING),
            _field("amount", 2, _FIELD.TYPE_MESSAGE, ".shop.Money"),
        ],
    )
    event = descriptor_pb2.FileDescriptorProto(
        name="shop/event.proto",
        package="shop",
        syntax="proto3",
        dependency=[timestamp_pb2.DESCRIPTOR.name],
    )
    event.message_type.add(
        name="Event", field=[_field("at", 1, _FIELD.TYPE_MESSAGE, ".google.protobuf.Timestamp")]
    )
    for proto in (money, order, event):
        try:
            pool.FindFileByName(proto.name)
        except KeyError:
            pool.Add(proto)
    get = message_factory.GetMessageClass
    return {
        "Money": get(pool.FindMessageTypeByName("shop.Money")),
        "Order": get(pool.FindMessageTypeByName("shop.Order")),
        "Line": get(pool.FindMessageTypeByName("shop.Order.Line")),
        "Refund": get(pool.FindMessageTypeByName("shop.Refund")),
        "Event": get(pool.FindMessageTypeByName("shop.Event")),
    }


PROTO = _build()


def proto_refund() -> Any:
    """A message that is not its file's first: message indexes [1], and a reference."""
    return PROTO["Refund"](order_id="order-7", amount=PROTO["Money"](currency="EUR", units=-42))


def proto_line() -> Any:
    """A nested message: message indexes [0, 0]."""
    return PROTO["Line"](sku="sku-ü", qty=3)
