"""What the producer, consumer, share consumer and admin client share: the client core that
wires the metadata store, the connection pool and the refresher (``client.py``), the
metadata refresher (``refresher.py``), retrying a request until its deadline (``retry.py``)
and the clients' KIP-714 calls (``telemetry_api.py``)."""
