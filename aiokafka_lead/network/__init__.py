"""Connections, SASL and the broker pool (the only layer that does socket I/O)."""
