#!/usr/bin/env bash
# redis.sh start|stop DIR PORT: a Redis on 127.0.0.1:PORT with its state in DIR.
# REDIS_PERSIST=no (the test harness) turns persistence off; otherwise AOF with fsync every
# second, as BullMQ wants in production, so `make run` keeps its queues across restarts.
# REDIS_CLUSTER=yes starts it as a node of a Redis Cluster (its nodes.conf in DIR); the nodes are
# then joined with `redis-cli --cluster create` (test/support/redis-cluster.ts).
# Starts in about 0.15 s; a stop (TERM, AOF flushed) takes about 0.1 s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
action="${1:-}"; dir="${2:-}"; port="${3:-}"
[ -n "$action" ] && [ -n "$dir" ] && [ -n "$port" ] || die "usage: redis.sh start|stop DIR PORT"

case "$action" in
  start)
    ensure_binary redis-server redis-server
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if pid_alive "$dir/redis.pid" redis-server; then
      echo "redis already running from $dir" >&2; exit 0
    fi
    port_free "$port" || die "port $port is in use; choose another Redis port"
    persist=(--appendonly yes --appendfsync everysec)
    [ "${REDIS_PERSIST:-yes}" = no ] && persist=(--appendonly no)
    cluster=()
    [ "${REDIS_CLUSTER:-no}" = yes ] && cluster=(--cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000)
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
      --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' \
      --maxmemory-policy noeviction "${persist[@]}" "${cluster[@]}"
    wait_until 10 redis-cli -h 127.0.0.1 -p "$port" ping || die "redis did not answer on port $port; see $dir/redis.log"
    echo "redis ready on 127.0.0.1:$port" >&2
    ;;
  stop)
    # TERM is a clean SHUTDOWN (the AOF is flushed); the pid file, not the port, says which
    # server is ours.
    stop_pid_file "$dir/redis.pid" 10 redis-server
    ;;
  *) die "usage: redis.sh start|stop DIR PORT" ;;
esac
