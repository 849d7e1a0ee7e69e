#!/usr/bin/env bash
# Shared helpers of the deploy/local scripts.

die() { echo "error: $*" >&2; exit 1; }

is_root() { [ "$(id -u)" = 0 ]; }

# ensure_binary BINARY PACKAGE...: installs the Debian packages when BINARY is missing.
ensure_binary() {
  local binary="$1"; shift
  if command -v "$binary" >/dev/null 2>&1 || [ -x "$binary" ]; then return 0; fi
  if ! is_root; then
    die "$binary is missing; install it with: sudo apt-get install -y --no-install-recommends $*"
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    die "$binary is missing and apt-get is not available; install the packages: $*"
  fi
  echo "installing $* (for $binary)..." >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
      || die "could not install $*; install them by hand"
  fi
}

# postgres_bin_dir: the newest installed PostgreSQL's binaries.
postgres_bin_dir() {
  local dir
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

# stop_pid_file FILE [SECONDS]: TERM the process in FILE, then KILL it after SECONDS.
stop_pid_file() {
  local file="$1" seconds="${2:-10}" pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    local deadline=$(( $(date +%s) + seconds ))
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$(date +%s)" -ge "$deadline" ]; then kill -9 "$pid" 2>/dev/null || true; break; fi
      sleep 0.1
    done
  fi
  rm -f "$file"
}
