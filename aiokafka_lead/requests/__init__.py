"""The request layer: requests that several clients send, below the three clients.

``base`` (retries, routing to leaders and the controller, per-item errors), ``groups``
(FindCoordinator, OffsetFetch), ``offsets`` (ListOffsets with KIP-207 semantics,
DeleteRecords) and ``lookup`` (the set a producer or consumer uses). The admin client's
classes build on these families; the consumer and the producer use :class:`Lookups`.
"""
