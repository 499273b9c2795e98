"""Integrations with observability libraries; each needs its own extra
(``aiokafka_lead.instrumentation.opentelemetry``: ``pip install aiokafka_lead[otel]``)."""
