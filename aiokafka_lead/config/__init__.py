"""Configuration helpers: how an option is declared once (``options.py``), the checks shared
by the configurations and calls (``validation.py``, ``arguments.py``) and Java-style client
properties turned into keywords (``properties.py``, ``sasl_properties.py``). Each client's
configuration class lives with the client (``producer/config.py``, ...)."""
