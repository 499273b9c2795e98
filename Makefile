# The two set-up commands of the README:
#   make demo   -- the leader-move demo on a local 3-node KRaft cluster it starts itself
#   make test   -- the whole test suite (lint, types, codec drift check, unit + real-cluster tests)
# Both create .venv, install what they need and provision the Kafka jars (cached per user).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-aiokafka-suite test-compat lint typecheck codegen-check unit venv clean kafka-image test-docker bench-release

$(STAMP): pyproject.toml setup.py aiokafka_lead/_speedups.c aiokafka_lead/_speedups_producer.c aiokafka_lead/_speedups_producer_columns.c aiokafka_lead/_speedups_producer.h aiokafka_lead/_speedups_share.c aiokafka_lead/_speedups_columns.c
	@echo ">> creating $(VENV) and installing aiokafka_lead[dev,spark]"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	@# GSSAPI (Kerberos) builds against the MIT headers: installed where they are (.ci/run adds them)
	@if command -v krb5-config >/dev/null; then $(BIN)/python -m pip install --quiet -e '.[gssapi]'; fi
	@touch $@

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check aiokafka_lead tests tools benchmarks examples setup.py

typecheck: $(STAMP)
	$(BIN)/mypy

# Checks protocol/generated/ against the message specs inside the pinned kafka-clients jar
# (downloaded into the per-user cache with the other Kafka jars, if not there yet), and
# docs/configuration.md and the constructors' keywords against the option declarations, the
# metrics table of docs/observability.md against the metric catalogue, and
# the error classes and ErrorCode against the error table.
codegen-check: $(STAMP)
	$(BIN)/python tools/gen_protocol.py --check
	$(BIN)/python tools/gen_config_docs.py --check
	$(BIN)/python tools/gen_metrics_docs.py --check
	$(BIN)/python tools/gen_keywords.py --check
	$(BIN)/python tools/gen_error_code.py --check

# Everything, against Kafka 4.4 (the harness's default), plus the compatibility subset against
# every other broker version the client is tested with (tests/integration/test_compat.py).
test: $(STAMP) lint typecheck codegen-check
	$(BIN)/python -m aiokafka_lead.testing.cluster provision --tested
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# aiokafka 0.14's own public-API tests on aiokafka_lead (tests/integration/test_aiokafka_suite.py).
# Not in `test`: PyPI's aiokafka sdist has no tests/, so their files come from the cache of
# tools/aiokafka_suite.py or AIOKAFKA_SUITE_TESTS=DIR (a checkout of aiokafka at v0.14.0).
test-aiokafka-suite: $(STAMP)
	$(BIN)/python -m aiokafka_lead.testing.cluster provision
	$(BIN)/python -m pytest -m aiokafka_suite tests/integration/test_aiokafka_suite.py $(PYTEST_ARGS)

# The version matrix alone: the compatibility subset against each tested broker version.
test-compat: $(STAMP)
	$(BIN)/python -m aiokafka_lead.testing.cluster provision --tested
	$(BIN)/python -m pytest -m compat $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -m 'not integration' $(PYTEST_ARGS)

demo: $(STAMP)
	$(BIN)/python -m aiokafka_lead.testing.cluster provision
	$(BIN)/aiokafka-lead demo $(DEMO_ARGS)

# The KRaft broker image for Docker tests where apache/kafka cannot be pulled (debootstrap
# base, Debian JRE, the cached Kafka jars); then KAFKA_IMAGE=aiokafka-lead/kafka:4.4.0.
kafka-image: $(STAMP)
	$(BIN)/python -m aiokafka_lead.testing.kafka_image build

# The integration tests against a Docker cluster instead of the jar harness's JVMs.
test-docker: $(STAMP)
	AIOKAFKA_LEAD_CLUSTER=docker $(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

# Before every release: throughput loads A and B against every peer on a local 3-node
# cluster (quiet machine; about 15 minutes); their figures go to docs/benchmarks.md with the
# commit. BASELINE=DIR adds the previous release's checkout as the client ours-base.
RELEASE_CLIENTS := ours,ours-base,ours-py,aiokafka,confluent,confluent-aio,java
RELEASE_BASELINE = $(if $(BASELINE),--baseline $(BASELINE) --clients $(RELEASE_CLIENTS))
bench-release: $(STAMP)
	$(BIN)/python -m aiokafka_lead.testing.cluster provision
	$(BIN)/python benchmarks/throughput.py --brokers 3 --runs 5 $(RELEASE_BASELINE)
	$(BIN)/python benchmarks/throughput.py --brokers 3 --acks all --replication 3 --min-insync 2 \
		--size 1024 --records 300000 --runs 5 --name throughput_b $(RELEASE_BASELINE)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
