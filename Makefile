# The commands of the README. Every target installs and starts what it needs, idempotently.

SHELL := /bin/bash
CARGO ?= cargo

.PHONY: dev quickstart test chaos check fmt lint layers openapi migrate bench crash-test fuzz infra tools

## Install what is missing, start the servers, migrate, bootstrap a development user and
## project with a site, print their keys (kept in .dev/keys.env), and run all four binaries
## (Ctrl-C stops them).
dev: infra tools
	$(CARGO) build --bins
	scripts/dev.sh

## With `make dev` running (another terminal): send a first email and show it in the dev
## outbox, record a decision and find it by meaning (the README's Quickstart).
quickstart:
	scripts/quickstart.sh

## The whole test suite against the real PostgreSQL, RabbitMQ and Redis.
## Every cargo command here builds the whole workspace with its tests: one feature set, so
## each crate compiles once (`--bins` alone, or `-p e2e`, would leave out dev-dependencies'
## features and compile most of the workspace again).
test: infra tools
	scripts/check-layers.py
	scripts/check-sizes.py
	$(CARGO) build --workspace --bins --tests
	CARGO=$(CARGO) scripts/run-tests.sh
	$(CARGO) test --workspace --test chaos -- --test-threads 1 --nocapture
	scripts/client-test.sh
	scripts/ts-client-test.sh
	scripts/mcp-test.sh
	scripts/browser-test.sh
	FUZZ_EXAMPLES=10 scripts/fuzz.sh
	scripts/check-openapi.sh proto-docs/memory-api.openapi.json proto-docs/mail-api.openapi.json
	scripts/check-deploy.sh

## Formatting, lints, the import rules between modules and the file sizes, as CI checks them.
check: fmt lint layers

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## No module under mcp/ or jobs/ names http; no circle between modules (docs/ARCHITECTURE.md);
## no source file over 800 lines, no test file over 1,000 (docs/CONTRIBUTING.md).
layers:
	scripts/check-layers.py
	scripts/check-sizes.py

## Regenerate the committed OpenAPI documents (and the MIF JSON Schema, and the document of
## mail-api's MCP tool mirror) from the code, then the TypeScript clients from the documents.
openapi:
	$(CARGO) run -q -p memory-api -- openapi > proto-docs/memory-api.openapi.json
	$(CARGO) run -q -p mail-api -- openapi > proto-docs/mail-api.openapi.json
	$(CARGO) run -q -p memory-api -- schema mif-0.1.schema.json > proto-docs/mif-0.1.schema.json
	$(CARGO) run -q -p mail-api -- schema mail-mcp-tools.openapi.json > proto-docs/mail-mcp-tools.openapi.json
	scripts/ts-client-test.sh --generate

migrate: infra
	$(CARGO) run -q -p memory-api -- migrate
	$(CARGO) run -q -p mail-api -- migrate

## Throughput and latency per scenario against the release binaries, with pgbench alongside.
bench: infra tools
	$(CARGO) build --release --workspace --bins
	$(CARGO) build --release -p embed --example hard_set --example latency
	$(CARGO) build --release -p delivery --features testing --bin provider-stub
	scripts/bench.sh

## Chaos tests (also run by `test`): PostgreSQL restarted under write load, RabbitMQ stopped
## under /send load, Redis stopped under load, each a server of the test's own on spare ports;
## prints the counts.
chaos: infra tools
	$(CARGO) build --workspace --bins --tests
	$(CARGO) test --workspace --test chaos -- --test-threads 1 --nocapture

## Kill -9 the send worker in the middle of a burst of $(E2E_BURST) sends, through the Resend
## stub and then an SMTP server, with the release binaries; prints the counts.
E2E_BURST ?= 10000
crash-test: infra tools
	$(CARGO) build --release --workspace --bins
	E2E_BIN_DIR=$${CARGO_TARGET_DIR:-$(CURDIR)/target}/release E2E_BURST=$(E2E_BURST) \
		$(CARGO) test --release -p e2e --test send a_killed_worker -- --nocapture

## Schemathesis against both APIs (debug binaries, fresh databases, seeded data, every check,
## the stateful phase, warnings as failures, a fixed seed); prints a summary per service.
## `test` runs it with 10 examples per operation.
FUZZ_EXAMPLES ?= 40
fuzz: infra tools
	$(CARGO) build --bins
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) scripts/fuzz.sh

infra:
	scripts/infra.sh

tools:
	scripts/tools.sh
