"""A pytest plugin: ``pytest -p aiokafka_lead.testing.aiokafka_alias`` runs a suite written
against aiokafka on aiokafka_lead (``aiokafka_lead.as_aiokafka.install()`` when pytest loads
the plugin, before the suite's conftest files and test modules are imported)."""

from __future__ import annotations

from aiokafka_lead import as_aiokafka

as_aiokafka.install()
