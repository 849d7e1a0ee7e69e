#!/usr/bin/env bash
# `make run`: Redis and Postgres on loopback with their data under $DATA_DIR (reused next time),
# migrations, the dev organization/user/token, then the API and a step worker in one process.
# The settings it used go to $DATA_DIR/env, for `make admin` and hand-run commands.
#
# run-dev.sh [SENTINEL]: SENTINEL is a file make deletes when it is interrupted. make passes
# SIGTERM on to this script but not SIGINT or SIGHUP (it waits for its children instead), so the
# file's disappearance is how a signal sent to make alone reaches us. Whatever the signal, and
# whichever process gets it (make, this script or the service), the service stops first, then
# Redis and Postgres.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
. "$here/lib.sh"

: "${PORT:=8080}" "${REDIS_PORT:=63790}" "${PG_PORT:=54320}" "${DATA_DIR:=$root/.data}"
sentinel="${1:-}"

# Before anything starts: otherwise a taken port shows up only after Redis, Postgres and the
# migrations, as a stack trace, after we printed an address where someone else's server answers.
if ! port_free "$PORT"; then
  echo "error: port $PORT is already in use on 127.0.0.1 (another program listens there); choose another with: make run PORT=<port>" >&2
  exit 1
fi

mkdir -p "$DATA_DIR"
chmod 700 "$DATA_DIR"
if [ -n "$sentinel" ]; then
  # Rewritten, not kept: make deletes it only when its time differs from the one make saw.
  rm -f "$sentinel"
  echo "$$" >"$sentinel"
fi

service_pid=""
grace_s=$(( ${SHUTDOWN_GRACE_MS:-10000} / 1000 + 5 ))

# Asks the service to stop and waits for it (up to its own hard-stop time, then KILL).
stop_service() {
  [ -n "$service_pid" ] || return 0
  kill -TERM "$service_pid" 2>/dev/null || true
  local deadline=$(( $(date +%s) + grace_s ))
  while running "$service_pid"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$service_pid" 2>/dev/null || true; break; fi
    sleep 0.1
  done
}

shut_down() {
  # A second Ctrl-C must not cut the stopping short and leave a server running.
  trap '' HUP INT TERM
  stop_service
  echo "stopping Redis and Postgres (data kept in $DATA_DIR)" >&2
  bash "$here/redis.sh" stop "$DATA_DIR/redis" "$REDIS_PORT" || true
  bash "$here/postgres.sh" stop "$DATA_DIR/postgres" "$PG_PORT" || true
  [ -z "$sentinel" ] || rm -f "$sentinel"
}
trap shut_down EXIT
# Before the service runs a signal ends the script (the EXIT trap stops the servers); once it
# runs, the signal is passed on to it and the loop below notices it has stopped.
on_signal() {
  if [ -n "$service_pid" ]; then kill -TERM "$service_pid" 2>/dev/null || true; else exit "$1"; fi
}
trap 'on_signal 129' HUP
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

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

# `set -a; . .data/env; set +a` gives a shell what the service got (the admin command needs
# DATABASE_URL); it holds the signing secret, hence 0600.
(
  # The umask must hold when the file is created, so the redirection is inside the subshell.
  umask 077
  {
    printf '# written by make run; load with: set -a; . %s; set +a\n' "$DATA_DIR/env"
    for name in DATABASE_URL REDIS_URL BLOB_SIGNING_SECRET DATA_DIR PORT; do printf '%s=%q\n' "$name" "${!name}"; done
    printf 'SERVICE_URL=%q\n' "${PUBLIC_BASE_URL:-http://127.0.0.1:$PORT}"
  } >"$DATA_DIR/env.tmp"
  chmod 600 "$DATA_DIR/env.tmp"
)
mv "$DATA_DIR/env.tmp" "$DATA_DIR/env"

node_modules/.bin/tsx workers/migrate.ts
node_modules/.bin/tsx workers/dev-bootstrap.ts

# One process (node with tsx's loader, not the tsx launcher, which would be a second), in the
# background so that the traps above run while it serves.
node --import tsx workers/serve.ts &
service_pid=$!
while running "$service_pid"; do
  if [ -n "$sentinel" ] && [ ! -e "$sentinel" ]; then
    kill -TERM "$service_pid" 2>/dev/null || true
    sentinel=""
  fi
  sleep 0.2
done
status=0
wait "$service_pid" || status=$?
service_pid=""
exit "$status"
