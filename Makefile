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

.PHONY: help run admin test test-faults lint typecheck migrate bench bench-quick profile profile-batch timeline io-per-run pg-per-run pg-instructions install system-deps stop clean-data studio

# make deletes the file of a target whose recipe it interrupts, on SIGINT, SIGTERM and SIGHUP
# alike, but passes only SIGTERM on to the recipe: run-dev.sh watches this file to stop on all.
RUN_SENTINEL := $(DATA_DIR)/make-run.pid

help:
	@echo "make run        start Redis + Postgres under .data/, migrate, create a dev org/user/token, serve API + worker"
	@echo "make test       unit + integration tests against throwaway Redis, Postgres and S3 servers"
	@echo "make test-faults  the fault suite (test/faults) at its full counts, then its table of figures"
	@echo "make lint       eslint + import-direction and cycle checks"
	@echo "make typecheck  tsc --noEmit (strict)"
	@echo "make migrate    apply pending migrations to DATABASE_URL"
	@echo "make bench      run the benchmarks in test/bench (the suite against its peers, fsync on) and print their figures"
	@echo "make bench-quick the same suite with shorter phases (a few minutes)"
	@echo "make profile    a CPU profile of the service under load, and what one run asks of Redis and Postgres"
	@echo "make profile-batch  the same for a batch's rows (ROWS, default 2,000): calls, scripts and statements per row"
	@echo "make timeline   where one run's latency goes: every Redis command and Postgres statement of a few runs, timed"
	@echo "make io-per-run what one run costs in system calls (writes, reads) and CPU, sequential and at 8 clients"
	@echo "make pg-per-run what one run asks of Postgres at 100/s: CPU, SQL functions, rows, WAL by record type"
	@echo "make pg-instructions  instructions one Postgres backend executes per run's SQL (callgrind; repeats to about 0.2%)"
	@echo "make stop       stop the Redis and Postgres started by make run"
	@echo "make admin ARGS=\"...\"  the admin command (accounts, credit, tokens) against make run's database"

# npm dependencies, installed when the lockfile is newer than the last install. onnxruntime-node's
# install script would fetch CUDA libraries from outside the npm registry; its CPU binary is in the package.
node_modules/.install-stamp: package.json package-lock.json
	ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund
	@touch $@

$(PRISMA_CLIENT): prisma/schema.prisma node_modules/.install-stamp
	PRISMA_SCHEMA_ENGINE_BINARY=/bin/true $(NODE_BIN)/prisma generate >/dev/null
	@touch $@

install: node_modules/.install-stamp $(PRISMA_CLIENT)

# The studio (services/studio), built by Vite when any source it bundles changed; the API serves it.
STUDIO_BUILD := services/studio/dist/index.html
STUDIO_SOURCES := $(shell find services/studio/src services/studio/index.html services/studio/vite.config.ts services/sdk/src services/contract services/engine -type f 2>/dev/null)

$(STUDIO_BUILD): $(STUDIO_SOURCES) node_modules/.install-stamp
	npm run -s build -w services/studio

studio: $(STUDIO_BUILD)

system-deps:
	bash deploy/local/install-deps.sh redis postgres media

run: $(RUN_SENTINEL)

# Not phony (see RUN_SENTINEL), yet remade every time: its prerequisites are phony.
$(RUN_SENTINEL): install studio system-deps
	bash deploy/local/run-dev.sh "$@"

# The settings make run wrote (DATABASE_URL above all), then the admin command with ARGS.
admin: install
	@[ -f "$(DATA_DIR)/env" ] || { echo "error: $(DATA_DIR)/env does not exist; start make run once first (it writes it), or run: DATABASE_URL=... npm run -s admin -- ..." >&2; exit 1; }
	@set -a; . "$(DATA_DIR)/env"; set +a; $(NODE_BIN)/tsx workers/admin.ts $(ARGS)

stop:
	bash deploy/local/redis.sh stop "$(DATA_DIR)/redis" "$(REDIS_PORT)" || true
	bash deploy/local/postgres.sh stop "$(DATA_DIR)/postgres" "$(PG_PORT)" || true

# Jest (unit and integration, real servers) and then Vitest (the studio's components and stores);
# the totals line adds both.
test: install studio
	bash deploy/local/install-deps.sh redis postgres s3 media browser prometheus
	@mkdir -p .test-artifacts
	@rm -f .test-artifacts/jest-results.json .test-artifacts/vitest-results.json .test-artifacts/fault-figures.jsonl
	$(NODE_BIN)/jest --json --outputFile=.test-artifacts/jest-results.json; status=$$?; \
	  (cd services/studio && ../../$(NODE_BIN)/vitest run --reporter=default --reporter=json --outputFile=../../.test-artifacts/vitest-results.json); vstatus=$$?; \
	  node deploy/local/fault-table.cjs .test-artifacts/fault-figures.jsonl || true; \
	  node deploy/local/test-totals.cjs .test-artifacts/jest-results.json .test-artifacts/vitest-results.json; \
	  if [ $$status -ne 0 ]; then exit $$status; fi; exit $$vstatus

# The fault suite alone at the issue's full counts (test/faults), then its table; fails when a
# test fails or a figure misses its goal.
test-faults: install studio
	bash deploy/local/install-deps.sh redis postgres s3 media browser nginx
	@mkdir -p .test-artifacts
	@rm -f .test-artifacts/fault-figures.jsonl
	FAULTS_FULL=1 $(NODE_BIN)/jest --selectProjects integration --runInBand test/faults; status=$$?; \
	  node deploy/local/fault-table.cjs .test-artifacts/fault-figures.jsonl; table=$$?; \
	  if [ $$status -ne 0 ]; then exit $$status; fi; exit $$table

lint: install
	$(NODE_BIN)/eslint .
	$(NODE_BIN)/depcruise --config .dependency-cruiser.cjs services workers

typecheck: install
	$(NODE_BIN)/tsc -p tsconfig.json --noEmit
	$(NODE_BIN)/tsc -p services/studio/tsconfig.json

migrate: install
	$(NODE_BIN)/tsx workers/migrate.ts

bench: install
	@for f in test/bench/*.bench.ts; do echo "== $$f"; $(NODE_BIN)/tsx "$$f" || exit 1; done

bench-quick: install
	BENCH_QUICK=1 $(NODE_BIN)/tsx test/bench/suite.bench.ts

timeline: install
	$(NODE_BIN)/tsx test/bench/run-timeline.ts

io-per-run: install
	$(NODE_BIN)/tsx test/bench/io-per-run.ts

pg-per-run: install
	$(NODE_BIN)/tsx test/bench/pg-per-run.ts

pg-instructions: install
	$(NODE_BIN)/tsx test/bench/pg-instructions.ts

profile: install
	@rm -rf .test-artifacts/profile && mkdir -p .test-artifacts/profile
	node --cpu-prof --cpu-prof-dir=.test-artifacts/profile --import tsx test/bench/profile-runs.ts
	node deploy/local/profile-summary.cjs "$$(ls -S .test-artifacts/profile/*.cpuprofile | head -1)" 40

profile-batch: install
	@rm -rf .test-artifacts/profile-batch && mkdir -p .test-artifacts/profile-batch
	node --cpu-prof --cpu-prof-dir=.test-artifacts/profile-batch --import tsx test/bench/profile-batch.ts
	node deploy/local/profile-summary.cjs "$$(ls -S .test-artifacts/profile-batch/*.cpuprofile | head -1)" 40

clean-data: stop
	rm -rf "$(DATA_DIR)"
