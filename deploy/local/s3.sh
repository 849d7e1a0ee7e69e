#!/usr/bin/env bash
# s3.sh start|stop DIR PORT ACCESS_KEY SECRET_KEY: a real S3 server on 127.0.0.1:PORT, a
# single-node Ceph (one monitor, one in-memory OSD, the RADOS gateway) with every file it
# writes (config, data, sockets, pids, logs) under DIR, so several can run side by side.
# ACCESS_KEY/SECRET_KEY become the credentials of an S3 user `dev`.
#
# The objects live in memory: a stop loses them and a start builds a fresh cluster. The monitor
# port is S3_MON_PORT when set, otherwise a free one; OSD ports are picked by Ceph itself. The
# memory store's size cap is S3_MEMORY_BYTES (default 2 GiB).
# A start takes about 2 s (the first bucket then about 0.2 s more); a stop about 0.1 s. Installing
# the packages, when missing, takes about 90 s more.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
action="${1:-}"; dir="${2:-}"; port="${3:-}"
usage="usage: s3.sh start DIR PORT ACCESS_KEY SECRET_KEY | s3.sh stop DIR [PORT]"
[ -n "$action" ] && [ -n "$dir" ] || die "$usage"

# Pid file and program name of each daemon.
daemons=(client.rgw:radosgw osd.0:ceph-osd mon.a:ceph-mon)

# ceph_cli COMMAND ARGS...: a Ceph tool pointed at this cluster only.
ceph_cli() { "$1" -c "$dir/ceph.conf" "${@:2}"; }

# ceph_retry COMMAND ARGS...: ceph_cli, tried up to 5 times. On a busy machine the `ceph` tool
# now and then sends a command before it has the monitor map ("EPERM: problem getting command
# descriptions"); the commands used here are idempotent, so trying again is safe.
ceph_retry() {
  local attempt
  for attempt in 1 2 3 4 5; do
    ceph_cli "$@" && return 0
    [ "$attempt" = 5 ] || sleep 0.5
  done
  return 1
}

# mon_is_ours: the monitor answering on the port is this cluster's (another cluster's could hold
# the port if two runs picked the same free port at the same moment).
mon_is_ours() { [ "$(ceph_cli ceph --connect-timeout 2 fsid 2>/dev/null)" = "$fsid" ]; }

# stop_all: KILL every daemon at once and wait for them to go. Nothing is worth flushing (the
# objects live in memory and the next start rebuilds the cluster), while a polite TERM costs
# about 2 s per daemon.
stop_all() {
  local daemon file pids=()
  for daemon in "${daemons[@]}"; do
    file="$dir/run/${daemon%%:*}.pid"
    if pid_alive "$file" "${daemon#*:}"; then pids+=("$(tr -dc 0-9 <"$file")"); fi
    rm -f "$file"
  done
  [ "${#pids[@]}" -gt 0 ] || return 0
  kill -9 "${pids[@]}" 2>/dev/null || true
  wait_until 10 none_running "${pids[@]}" \
    || die "ceph daemons ${pids[*]} did not exit"
}

case "$action" in
  start)
    access_key="${4:-}"; secret_key="${5:-}"
    [ -n "$port" ] && [ -n "$access_key" ] && [ -n "$secret_key" ] || die "$usage"
    ensure_ceph
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if pid_alive "$dir/run/client.rgw.pid" radosgw; then
      echo "s3 (ceph rgw) already running in $dir" >&2; exit 0
    fi
    port_free "$port" || die "port $port is in use; choose another S3 port"
    # Memory-backed, so nothing is worth keeping from a previous start: clear it all.
    stop_all
    rm -rf "$dir/mon" "$dir/osd" "$dir/run" "$dir/log" "$dir/ceph.conf" "$dir/monmap"
    mkdir -p "$dir/mon" "$dir/osd/ceph-0" "$dir/run" "$dir/log"

    mon_port="${S3_MON_PORT:-$(free_port)}"
    fsid=$(cat /proc/sys/kernel/random/uuid)
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
keyring = $dir/\$name.keyring
crash dir = $dir/log/crash
mon cluster log file = default=$dir/log/\$channel.log cluster=$dir/log/cluster.log
mon data = $dir/mon/\$id
osd data = $dir/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = ${S3_MEMORY_BYTES:-2147483648}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
# Without these two the OSD exits at start with "wrong fsid".
osd class update on start = false
osd crush update on start = false
mon warn on pool no redundancy = false
# A monitor batches map changes for a second by default; the gateway's start-up makes a dozen
# of them in a row (one per pool), so a short interval takes the start from ~11 s to ~2 s.
paxos propose interval = 0.05
paxos min wait = 0.01

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$port
rgw data = $dir/rgw
rgw enable usage log = false
EOF

    # From here on a failure leaves no daemon behind.
    stop_on_failure() { local status=$?; [ "$status" = 0 ] || stop_all; }
    trap stop_on_failure EXIT
    monmaptool --create --add a "v1:127.0.0.1:$mon_port" --fsid "$fsid" "$dir/monmap" >/dev/null
    ceph_cli ceph-mon --mkfs -i a --monmap "$dir/monmap" >"$dir/log/setup.log" 2>&1 \
      || die "ceph-mon --mkfs failed; see $dir/log/setup.log"
    ceph_cli ceph-mon -i a >>"$dir/log/start.log" 2>&1 || die "ceph-mon did not start; see $dir/log/mon.a.log"
    wait_until 30 mon_is_ours \
      || die "the ceph monitor did not answer on port $mon_port (or another cluster's did); see $dir/log/mon.a.log"

    {
      ceph_retry ceph osd create "$osd_uuid" &&
        ceph_cli ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid" &&
        ceph_retry ceph osd crush add osd.0 1.0 host=localhost root=default
    } >>"$dir/log/setup.log" 2>&1 || die "creating the OSD failed; see $dir/log/setup.log"
    ceph_cli ceph-osd -i 0 >>"$dir/log/start.log" 2>&1 || die "ceph-osd did not start; see $dir/log/osd.0.log"

    ceph_cli radosgw -n client.rgw >>"$dir/log/start.log" 2>&1 || die "radosgw did not start; see $dir/log/client.rgw.log"
    # The daemon writes its pid file right after forking and removes it when it exits; a gateway
    # that is gone has failed (its log says why) and waiting longer is pointless.
    rgw_failed() { die "radosgw exited: $(grep -m1 -- ' -1 ' "$dir/log/client.rgw.log" | cut -d' ' -f4- || true)"; }
    wait_until 10 test -s "$dir/run/client.rgw.pid" || rgw_failed
    rgw_pid=$(tr -dc 0-9 <"$dir/run/client.rgw.pid")
    deadline=$(( $(date +%s) + 60 ))
    until http_answers "http://127.0.0.1:$port/"; do
      running "$rgw_pid" || rgw_failed
      [ "$(date +%s)" -lt "$deadline" ] || die "the S3 gateway did not answer on port $port; see $dir/log/client.rgw.log"
      sleep 0.1
    done
    ceph_cli radosgw-admin user create --uid=dev --display-name=dev \
      --access-key="$access_key" --secret="$secret_key" >>"$dir/log/setup.log" 2>&1 \
      || die "creating the S3 user failed; see $dir/log/setup.log"
    trap - EXIT
    echo "s3 (ceph rgw) ready on 127.0.0.1:$port" >&2
    ;;
  stop)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0
    stop_all
    ;;
  *) die "$usage" ;;
esac
