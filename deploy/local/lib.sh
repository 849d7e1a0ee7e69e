#!/usr/bin/env bash
# Shared helpers of the deploy/local scripts.

die() { echo "error: $*" >&2; exit 1; }

is_root() { [ "$(id -u)" = 0 ]; }

# apt_get ARG...: apt-get ARG... that waits up to $APT_LOCK_TIMEOUT seconds (default 600) for
# the dpkg/apt lock (on a fresh machine unattended-upgrades may hold it for minutes) and says so
# once when it waits. Its whole output goes to a temporary log, named by $APT_LOG afterwards, so
# a failure can show apt's own words (apt_failure) instead of losing them.
apt_get() {
  local timeout="${APT_LOCK_TIMEOUT:-600}" status=0
  APT_LOG=$(mktemp "${TMPDIR:-/tmp}/apt-get.XXXXXX")
  # -q, not -qq: apt names the lock's holder ("Waiting for cache lock: ... held by process N
  # (name)") only at quiet level 1. The status goes through a file: the pipe's would be the reader's.
  { DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout="$timeout" "$@" 2>&1 || status=$?; echo "$status" >"$APT_LOG.status"; } \
    | apt_watch_lock "$APT_LOG" "$timeout"
  status=$(cat "$APT_LOG.status" 2>/dev/null || echo 1)
  rm -f "$APT_LOG.status"
  return "$status"
}

# apt_watch_lock LOG SECONDS: copies apt's output to LOG, printing one line the first time apt
# waits for its lock.
apt_watch_lock() {
  local log="$1" timeout="$2" line holder waited=""
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    if [ -z "$waited" ] && [[ "$line" == *"Waiting for cache lock"* ]]; then
      waited=1
      holder=$(printf '%s\n' "$line" | sed -n 's/.*held by process \([0-9]*\) (\([^)]*\)).*/\2 (pid \1)/p')
      echo "waiting for apt's lock held by ${holder:-another process} (unattended-upgrades?) up to $timeout s (APT_LOCK_TIMEOUT)" >&2
    fi
  done
}

# apt_failure WHAT: says that apt-get failed and shows the end of its output ($APT_LOG, kept).
apt_failure() {
  echo "apt-get failed while $1; its last lines (all of them in $APT_LOG):" >&2
  tail -n 15 "$APT_LOG" | sed 's/^/  | /' >&2
}

# apt_lock_timed_out: the last apt_get gave up waiting for the lock (retrying would wait again).
# Its error lines only: "Waiting for cache lock: Could not get lock" is printed while it waits.
apt_lock_timed_out() {
  grep -qE '^E: (Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock)' "$APT_LOG" 2>/dev/null
}

# install_packages WHAT PACKAGE...: installs the Debian packages as root (refreshing the package
# lists when they are missing or stale); otherwise says which command would, and fails. apt's
# errors are shown, never swallowed.
install_packages() {
  local what="$1"; shift
  if ! is_root; then
    die "$what is missing; install it with: sudo apt-get install -y --no-install-recommends $*"
  fi
  command -v apt-get >/dev/null 2>&1 || die "$what is missing and apt-get is not available; install: $*"
  echo "installing $* (for $what)..." >&2
  apt_get install -y --no-install-recommends "$@" && return 0
  if ! apt_lock_timed_out; then
    # Usually stale or missing package lists (a fresh image has none): refresh them and try again.
    apt_get update || apt_failure "refreshing the package lists (apt-get update)"
    apt_get install -y --no-install-recommends "$@" && return 0
  fi
  apt_failure "installing $*"
  die "could not install $*; install them with: sudo apt-get install -y --no-install-recommends $*"
}

# ensure_binary BINARY PACKAGE...: installs the Debian packages when BINARY is not on the PATH.
ensure_binary() {
  local binary="$1"; shift
  command -v "$binary" >/dev/null 2>&1 || install_packages "$binary" "$@"
}

# ensure_postgres: installs Debian's PostgreSQL server when no version of it is installed (its
# binaries live in a versioned directory, off the PATH).
ensure_postgres() {
  postgres_bin_dir >/dev/null || install_packages "PostgreSQL" postgresql
}

# ensure_ceph: installs the parts of Ceph that s3.sh runs (about 90 s the first time).
ensure_ceph() {
  local binary
  for binary in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
    command -v "$binary" >/dev/null 2>&1 || { install_packages "$binary" ceph-mon ceph-osd radosgw; return; }
  done
}

# ensure_media: installs the programs of the local tool nodes (speech, OCR, audio and video) that
# are missing, in one apt-get call. When that fails it says which nodes are left out of the
# catalog and the command that installs them, and fails (callers treat it as a warning).
ensure_media() {
  local missing=() nodes=()
  command -v espeak-ng >/dev/null 2>&1 || { missing+=(espeak-ng); nodes+=(speech-espeak); }
  { command -v ffmpeg && command -v ffprobe; } >/dev/null 2>&1 \
    || { missing+=(ffmpeg); nodes+=(audio-convert audio-trim audio-concat audio-waveform video-thumbnail video-frames media-probe); }
  command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
  tesseract --list-langs 2>/dev/null | grep -qx eng || missing+=(tesseract-ocr-eng)
  [[ " ${missing[*]} " == *" tesseract-ocr"* ]] && nodes+=(ocr-tesseract)
  [ "${#missing[@]}" -eq 0 ] && return 0
  ( install_packages "the local tool nodes' programs" "${missing[@]}" ) && return 0
  echo "warning: ${nodes[*]} are left out of the node catalog (a workflow naming them gets a 400 saying so);" \
    "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" \
    "(or make system-deps), then restart the service" >&2
  return 1
}

# postgres_bin_dir: $PG_BIN_DIR when it holds a postgres, else the newest installed PostgreSQL's binaries.
postgres_bin_dir() {
  local dir
  # PG_BIN_DIR: a relocated PostgreSQL, e.g. the bundle that runs benchmarks where Debian's packages are not.
  if [ -n "${PG_BIN_DIR:-}" ] && [ -x "$PG_BIN_DIR/postgres" ]; then echo "$PG_BIN_DIR"; return; fi
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] || return 1
  echo "$dir"
}

# wait_until SECONDS COMMAND...: retries COMMAND every 0.1 s until it succeeds or time runs out.
wait_until() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# free_port: a TCP port nobody listens on at this moment.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# running PID: the process exists and is not a zombie (a killed daemon stays one until
# whichever process adopted it reaps it, which can take a second).
running() {
  local state
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# none_running PID...: none of the processes is running.
none_running() {
  local pid
  for pid in "$@"; do ! running "$pid" || return 1; done
}

# pid_alive FILE [NAME]: the process whose pid FILE holds is running (and, given NAME, is that
# program: after a reboot or a killed run the pid may belong to someone else by now).
pid_alive() {
  local file="$1" name="${2:-}" pid
  [ -f "$file" ] || return 1
  pid=$(tr -dc 0-9 <"$file" 2>/dev/null || true)
  [ -n "$pid" ] && running "$pid" || return 1
  [ -z "$name" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${name:0:15}" ]
}

# stop_pid_file FILE [SECONDS] [NAME]: TERM the process in FILE (only if it is NAME, when given),
# then KILL it after SECONDS; removes FILE.
stop_pid_file() {
  local file="$1" seconds="${2:-10}" name="${3:-}" pid
  [ -f "$file" ] || return 0
  if pid_alive "$file" "$name"; then
    pid=$(tr -dc 0-9 <"$file")
    kill "$pid" 2>/dev/null || true
    local deadline=$(( $(date +%s) + seconds ))
    while running "$pid"; do
      if [ "$(date +%s)" -ge "$deadline" ]; then kill -9 "$pid" 2>/dev/null || true; break; fi
      sleep 0.1
    done
  fi
  rm -f "$file"
}

# port_free PORT: nothing listens on 127.0.0.1:PORT (so a server failing to bind is caught early,
# instead of some other program answering the readiness probe).
port_free() {
  node -e 'const s=require("net").createServer();s.once("error",()=>process.exit(1));s.listen(+process.argv[1],"127.0.0.1",()=>s.close())' "$1"
}

# http_answers URL: something answers HTTP at URL (any status).
http_answers() {
  node -e 'require("http").get(process.argv[1], (r) => process.exit(r.statusCode ? 0 : 1)).on("error", () => process.exit(1)).setTimeout(2000, () => process.exit(1))' "$1"
}
