#!/usr/bin/env bash
# redis.sh start|stop DIR PORT: a Redis on 127.0.0.1:PORT with its state in DIR.
# REDIS_PERSIST=no (the test harness) turns persistence off; otherwise AOF with fsync every
# second, as BullMQ wants in production, so `make run` keeps its queues across restarts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
action="${1:-}"; dir="${2:-}"; port="${3:-}"
[ -n "$action" ] && [ -n "$dir" ] && [ -n "$port" ] || die "usage: redis.sh start|stop DIR PORT"

case "$action" in
  start)
    ensure_binary redis-server redis-server
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
      echo "redis already running on 127.0.0.1:$port" >&2; exit 0
    fi
    persist=(--appendonly yes --appendfsync everysec)
    [ "${REDIS_PERSIST:-yes}" = no ] && persist=(--appendonly no)
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
      --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' \
      --maxmemory-policy noeviction "${persist[@]}"
    wait_until 10 redis-cli -h 127.0.0.1 -p "$port" ping || die "redis did not answer on port $port; see $dir/redis.log"
    echo "redis ready on 127.0.0.1:$port" >&2
    ;;
  stop)
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
    stop_pid_file "$dir/redis.pid" 5
    ;;
  *) die "usage: redis.sh start|stop DIR PORT" ;;
esac
