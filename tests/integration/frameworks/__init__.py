"""Programs and plugins that the framework tests run in subprocesses (with aiokafka, and
with aiokafka_lead behind ``aiokafka_lead.as_aiokafka``)."""
