#!/usr/bin/env bash
# `make run`: Redis and Postgres on loopback with their data under $DATA_DIR (reused next time),
# migrations, the dev organization/user/token, then the API and a step worker in one process.
# Ctrl-C stops the service, then Redis and Postgres.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

: "${PORT:=8080}" "${REDIS_PORT:=63790}" "${PG_PORT:=54320}" "${DATA_DIR:=$root/.data}"
mkdir -p "$DATA_DIR"
chmod 700 "$DATA_DIR"

stop_servers() {
  echo "stopping Redis and Postgres (data kept in $DATA_DIR)" >&2
  bash "$here/redis.sh" stop "$DATA_DIR/redis" "$REDIS_PORT" || true
  bash "$here/postgres.sh" stop "$DATA_DIR/postgres" "$PG_PORT" || true
}
trap stop_servers EXIT

bash "$here/redis.sh" start "$DATA_DIR/redis" "$REDIS_PORT"
bash "$here/postgres.sh" start "$DATA_DIR/postgres" "$PG_PORT"

if ! psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'svc'" | grep -q 1; then
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE svc"
fi

# One signing secret per data directory, so blob URLs stay valid across restarts.
secret_file="$DATA_DIR/blob-signing-secret"
if [ ! -s "$secret_file" ]; then
  (umask 077 && node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64url"))' >"$secret_file")
fi

export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:$PG_PORT/svc}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:$REDIS_PORT}"
export BLOB_SIGNING_SECRET="${BLOB_SIGNING_SECRET:-$(cat "$secret_file")}"
export DATA_DIR PORT

node_modules/.bin/tsx workers/migrate.ts
node_modules/.bin/tsx workers/dev-bootstrap.ts

# Not exec: the EXIT trap must run after the service stops. A no-op INT handler (not an
# ignore, which children would inherit) lets the service shut down gracefully first.
trap : INT
node_modules/.bin/tsx workers/serve.ts
