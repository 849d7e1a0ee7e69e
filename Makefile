# The two commands: `make run` (the whole stack on loopback, API + worker) and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PORT ?= 8080
REDIS_PORT ?= 63790
PG_PORT ?= 54320
DATA_DIR ?= $(CURDIR)/.data
export PORT REDIS_PORT PG_PORT DATA_DIR

NODE_BIN := node_modules/.bin
PRISMA_CLIENT := node_modules/.svc-prisma/client/client.ts

.PHONY: help run test lint typecheck migrate bench install system-deps stop clean-data

help:
	@echo "make run        start Redis + Postgres under .data/, migrate, create a dev org/user/token, serve API + worker"
	@echo "make test       unit + integration tests against throwaway Redis, Postgres and S3 servers"
	@echo "make lint       eslint + import-direction and cycle checks"
	@echo "make typecheck  tsc --noEmit (strict)"
	@echo "make migrate    apply pending migrations to DATABASE_URL"
	@echo "make bench      run the benchmarks in test/bench and print their figures"
	@echo "make stop       stop the Redis and Postgres started by make run"

# npm dependencies, installed when the lockfile is newer than the last install.
node_modules/.install-stamp: package.json package-lock.json
	npm install --no-audit --no-fund
	@touch $@

$(PRISMA_CLIENT): prisma/schema.prisma node_modules/.install-stamp
	PRISMA_SCHEMA_ENGINE_BINARY=/bin/true $(NODE_BIN)/prisma generate >/dev/null
	@touch $@

install: node_modules/.install-stamp $(PRISMA_CLIENT)

system-deps:
	bash deploy/local/install-deps.sh redis postgres media

run: install system-deps
	bash deploy/local/run-dev.sh

stop:
	bash deploy/local/redis.sh stop "$(DATA_DIR)/redis" "$(REDIS_PORT)" || true
	bash deploy/local/postgres.sh stop "$(DATA_DIR)/postgres" "$(PG_PORT)" || true

test: install
	bash deploy/local/install-deps.sh redis postgres s3 media
	@mkdir -p .test-artifacts
	@rm -f .test-artifacts/jest-results.json
	$(NODE_BIN)/jest --json --outputFile=.test-artifacts/jest-results.json; status=$$?; \
	  node deploy/local/test-totals.cjs .test-artifacts/jest-results.json; exit $$status

lint: install
	$(NODE_BIN)/eslint .
	$(NODE_BIN)/depcruise --config .dependency-cruiser.cjs services workers

typecheck: install
	$(NODE_BIN)/tsc -p tsconfig.json --noEmit

migrate: install
	$(NODE_BIN)/tsx workers/migrate.ts

bench: install
	@if ls test/bench/*.bench.ts >/dev/null 2>&1; then \
	  for f in test/bench/*.bench.ts; do echo "== $$f"; $(NODE_BIN)/tsx "$$f" || exit 1; done; \
	else echo "no benchmarks yet (test/bench/*.bench.ts)"; fi

clean-data: stop
	rm -rf "$(DATA_DIR)"
