#!/usr/bin/env bash
# device.sh COMMAND...: run from the repo root, as root, on a machine with no Node.js, PostgreSQL
# or Redis (and no network): installs the bundle in .b8dev (node, redis and PostgreSQL 15 under
# /opt/b8, carrying their own glibc; the node_modules the B8 bench needs) and runs COMMAND with it:
#   bash .b8dev/device.sh env BENCH_ONLY=B8 node node_modules/.bin/tsx test/bench/suite.bench.ts
set -euo pipefail

say() { echo "[b8dev] $*" >&2; }
die() { echo "[b8dev] FATAL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it writes /opt/b8 and may add the postgres user)"
[ "$#" -gt 0 ] || die "usage: bash .b8dev/device.sh COMMAND... (run from the repo root)"
[ -f package.json ] && [ -d deploy/local ] || die "run from the repo root (no package.json or deploy/local in $PWD)"
REPO=$PWD

# the bundle: beside this script, else ./.b8dev
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUNDLE=""
for d in "$HERE" "$REPO/.b8dev"; do
  if ls "$d"/root.tar.* >/dev/null 2>&1; then BUNDLE=$d; break; fi
done
[ -n "$BUNDLE" ] || die "no root.tar.* beside $0 nor in $REPO/.b8dev (was .b8dev carried?)"
pick() { local f; for f in "$BUNDLE/$1".tar.xz "$BUNDLE/$1".tar.zst "$BUNDLE/$1".tar.gz; do [ -f "$f" ] && { echo "$f"; return; }; done; return 1; }
ROOT_TAR=$(pick root) || die "no root.tar.{xz,zst,gz} in $BUNDLE"
NM_TAR=$(pick node_modules) || die "no node_modules.tar.{xz,zst,gz} in $BUNDLE"

# decompress FILE: to stdout, with whatever this machine has (tar's -J needs an xz program, which
# minimal images often lack): xz, python3's lzma, else the xz carried in xzboot.tar.gz, run
# through its own glibc loader.
XZBOOT=""
decompress() {
  local f="$1"
  case "$f" in
    *.gz) gzip -dc "$f"; return ;;
    *.zst) command -v zstd >/dev/null 2>&1 || die "$f needs zstd, which is missing"; zstd -dc "$f"; return ;;
  esac
  if command -v xz >/dev/null 2>&1; then say "(with xz)"; xz -dc "$f"; return; fi
  if command -v python3 >/dev/null 2>&1 && python3 -c 'import lzma' 2>/dev/null; then
    say "(no xz: with python3's lzma)"
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer, 1 << 20)' "$f"; return
  fi
  if [ -z "$XZBOOT" ]; then
    [ -f "$BUNDLE/xzboot.tar.gz" ] || die "no xz, no python3 lzma and no $BUNDLE/xzboot.tar.gz to decompress $f"
    XZBOOT=$(mktemp -d)
    gzip -dc "$BUNDLE/xzboot.tar.gz" | tar -C "$XZBOOT" -xf - || die "could not unpack xzboot.tar.gz"
  fi
  say "(no xz, no python3 lzma: with the xz of xzboot.tar.gz)"
  "$XZBOOT/xzboot/ld-linux-x86-64.so.2" --library-path "$XZBOOT/xzboot" "$XZBOOT/xzboot/xz" -dc "$f"
}

for c in tar gzip id runuser bash find chown chmod mktemp sed tr sort tail ls date sleep dirname cat; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' is missing on this machine (deploy/local/*.sh need it)"
done

say "unpacking $(basename "$ROOT_TAR") into /opt/b8"
rm -rf /opt/b8
decompress "$ROOT_TAR" | tar -C / -xf - || die "could not unpack $ROOT_TAR"
[ -x /opt/b8/bin/node ] && [ -x /opt/b8/lib/ld-linux-x86-64.so.2 ] || die "/opt/b8 is incomplete after unpacking"
chmod 755 /opt /opt/b8   # the postgres user must reach its binaries

say "unpacking $(basename "$NM_TAR") into $REPO"
decompress "$NM_TAR" | tar -C "$REPO" -xf - || die "could not unpack $NM_TAR"
[ -e "$REPO/node_modules/.bin/tsx" ] && [ -d "$REPO/node_modules/.svc-prisma" ] || die "node_modules is incomplete after unpacking"
[ -z "$XZBOOT" ] || rm -rf "$XZBOOT"

# Postgres' binaries read time zones from /usr/share/zoneinfo (Debian builds them so)
if [ ! -d /usr/share/zoneinfo ]; then
  say "/usr/share/zoneinfo is missing: copying /opt/b8/zoneinfo there"
  mkdir -p /usr/share && cp -a /opt/b8/zoneinfo /usr/share/zoneinfo
fi

# deploy/local/postgres.sh runs Postgres as the postgres user when root (initdb refuses root)
if ! id -u postgres >/dev/null 2>&1; then
  say "adding the postgres user"
  if command -v useradd >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/postgresql --shell /bin/sh postgres \
      || say "useradd postgres failed; appending to /etc/passwd and /etc/group instead"
  fi
  if ! id -u postgres >/dev/null 2>&1; then
    n=990; while grep -q "^[^:]*:[^:]*:$n:" /etc/passwd /etc/group 2>/dev/null; do n=$((n - 1)); done
    grep -q '^postgres:' /etc/group || echo "postgres:x:$n:" >>/etc/group
    gid=$(sed -n 's/^postgres:[^:]*:\([0-9]*\):.*/\1/p' /etc/group)
    echo "postgres:x:$n:$gid:PostgreSQL:/var/lib/postgresql:/bin/sh" >>/etc/passwd
  fi
  id -u postgres >/dev/null 2>&1 || die "could not add the postgres user"
fi
runuser -u postgres -- true || die "runuser -u postgres does not work here"

export PATH="/opt/b8/bin:/opt/b8/usr/lib/postgresql/15/bin:$PATH"
export PG_BIN_DIR=/opt/b8/usr/lib/postgresql/15/bin
export LC_ALL=C
unset LANG LANGUAGE || true
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# what runs, and a smoke test of each program as the postgres user too (it must reach /opt/b8)
say "node: $(node --version 2>&1)" ; node -e 'process.exit(process.execPath === "/opt/b8/bin/node" ? 0 : 1)' || die "node is not /opt/b8/bin/node"
say "postgres: $("$PG_BIN_DIR/postgres" --version 2>&1)"
runuser -u postgres -- "$PG_BIN_DIR/postgres" --version >/dev/null 2>&1 || die "the postgres user cannot run $PG_BIN_DIR/postgres"
runuser -u postgres -- "$PG_BIN_DIR/initdb" --version >/dev/null 2>&1 || die "the postgres user cannot run $PG_BIN_DIR/initdb"
say "redis: $(redis-server --version 2>&1)"
redis-cli --version >/dev/null 2>&1 || die "redis-cli does not run"
say "nproc: $(nproc 2>/dev/null || echo '?')"
say "device glibc: $(ldd --version 2>/dev/null | head -1 || echo 'unknown (no ldd)'); kernel $(uname -r)"
say "bundle glibc: $(/opt/b8/lib/ld-linux-x86-64.so.2 --version 2>/dev/null | head -1 || echo '?')"
say "ulimit -n: $(ulimit -n); tmpdir: ${TMPDIR:-/tmp} ($(df -h "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR==2 {print $4 " free"}'))"
say "running: $*"
exec "$@"
