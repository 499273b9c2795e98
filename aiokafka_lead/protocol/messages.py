"""Public home of every generated message class and the api-key registry.

One class per message (``ProduceRequest``), structs nested under it by their spec names
(``ProduceResponse.PartitionProduceResponse``); see ``tools/gen_protocol.py``.
"""

from __future__ import annotations

from aiokafka_lead.protocol.generated import *  # noqa: F403
from aiokafka_lead.protocol.generated import __all__ as _generated_all
from aiokafka_lead.protocol.schema import (
    DataSchema,
    Field,
    Message,
    Request,
    Response,
    Struct,
    Versioned,
)

__all__ = [  # noqa: PLE0604
    *_generated_all,
    "DataSchema",
    "Field",
    "Message",
    "Request",
    "Response",
    "Struct",
    "Versioned",
]
