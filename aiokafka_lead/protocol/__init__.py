"""Sans-I/O Kafka wire codec, generated from Apache Kafka 4.4.0's JSON message specs.

* ``messages``   -- one class per request/response (``ProduceRequest``...), api-key registry
* ``framing``    -- size prefix, request/response headers, ``FrameReader``
* ``versions``   -- the client's version range per API and ``negotiate``
* ``primitives`` -- wire primitives; ``schema`` -- runtime bases of the generated classes

No sockets, no event loop: bytes in, objects out. Decoders raise only ``DecodeError``.
"""
