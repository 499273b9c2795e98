"""Leader-move measurement shared by ``aiokafka-lead demo`` and ``benchmarks/``."""
