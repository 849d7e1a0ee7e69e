#!/usr/bin/env bash
# postgres.sh start|stop DIR PORT: a PostgreSQL cluster in DIR on 127.0.0.1:PORT (trust auth,
# superuser `postgres`), created on first start and reused afterwards. As root the server runs
# as the `postgres` OS user, as initdb refuses root. PG_FAST=yes (the test harness) turns fsync
# off. PG_OPTIONS adds server options (`-c name=value ...`; make pg-per-run preloads
# pg_stat_statements with it). The first start (initdb) takes about 1-2 s, later ones about 0.2 s; a stop about 0.1 s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
action="${1:-}"; dir="${2:-}"; port="${3:-}"
[ -n "$action" ] && [ -n "$dir" ] && [ -n "$port" ] || die "usage: postgres.sh start|stop DIR PORT"

bin=$(postgres_bin_dir || true)
as_owner() {
  if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
  start)
    if [ -z "$bin" ]; then
      ensure_postgres
      bin=$(postgres_bin_dir) || die "PostgreSQL binaries not found under /usr/lib/postgresql"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if is_root; then
      chown postgres:postgres "$dir"; chmod 700 "$dir"
      # The postgres user must be able to reach DIR: grant traversal (not listing) on its parents.
      parent=$(dirname "$dir")
      while [ "$parent" != / ]; do
        [ -n "$(find "$parent" -maxdepth 0 -perm -o+x)" ] || chmod o+x "$parent"
        parent=$(dirname "$parent")
      done
    fi
    if [ ! -f "$dir/PG_VERSION" ]; then
      # initdb wants an empty directory, so its log goes beside it until the cluster exists.
      log=$(mktemp); chmod 644 "$log"
      if ! as_owner "$bin/initdb" -D "$dir" -A trust -U postgres -E UTF8 --no-locale >"$log" 2>&1; then
        cat "$log" >&2; rm -f "$log"; die "initdb failed in $dir"
      fi
      mv "$log" "$dir/initdb.log"
    fi
    if as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
      echo "postgres already running in $dir" >&2; exit 0
    fi
    port_free "$port" || die "port $port is in use; choose another Postgres port"
    # fsync stays on for make run; the harness turns it off through PG_FAST=yes (throwaway data).
    extra=""
    [ "${PG_FAST:-no}" = yes ] && extra="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 $extra ${PG_OPTIONS:-}" start >/dev/null \
      || die "postgres did not start on port $port; see $dir/server.log"
    wait_until 20 "$bin/pg_isready" -h 127.0.0.1 -p "$port" || die "postgres not ready on port $port; see $dir/server.log"
    echo "postgres ready on 127.0.0.1:$port" >&2
    ;;
  stop)
    [ -n "$bin" ] && [ -f "$dir/postmaster.pid" ] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    ;;
  *) die "usage: postgres.sh start|stop DIR PORT" ;;
esac
