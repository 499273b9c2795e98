"""Client metrics under the Java client's names (``window``, ``names``) and KIP-714 pushes
of them to the brokers (``otlp``, ``push``)."""
