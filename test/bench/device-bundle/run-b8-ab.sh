#!/usr/bin/env bash
# On the 16-core machine, from the repo root, with .b8dev carried (built by build-root.sh and
# build-nm.sh; base-src.tar.gz = `git archive <base> services workers prisma/functions | gzip`): B8 (1 -> 8
# worker processes) for this tree and for the base tree (its services/, workers/ and prisma/functions/,
# with this tree's bench code and migrations), quick, B8_ROUNDS times (default 1) alternated; then
# this tree at full length unless B8_FULL=0. Output under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
REPO=$PWD
bash test/bench/device-bundle/device.sh true 2>&1 | tee "$OUT/setup.txt" || { echo "setup failed"; exit 1; }
export PATH=/opt/b8/bin:/opt/b8/usr/lib/postgresql/15/bin:$PATH PG_BIN_DIR=/opt/b8/usr/lib/postgresql/15/bin LC_ALL=C
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true
echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo); $(free -g | sed -n 2p)"
df -h /tmp | tail -1
bench() { env BENCH_API_PROCESSES=${B8_APIS:-4} BENCH_MAX_WORKERS=${B8_MAX:-8} BENCH_ONLY=B8 "$@" node node_modules/.bin/tsx test/bench/suite.bench.ts; }
# the base tree
rm -rf /tmp/base && mkdir -p /tmp/base
tar -C "$REPO" --exclude=./node_modules --exclude=./.b8dev --exclude=./.git -cf - . | tar -C /tmp/base -xf -
rm -rf /tmp/base/services /tmp/base/workers /tmp/base/prisma/functions
gzip -dc .b8dev/base-src.tar.gz | tar -C /tmp/base -xf -
ln -s "$REPO/node_modules" /tmp/base/node_modules
for round in $(seq 1 "${B8_ROUNDS:-1}"); do
  echo "== new, quick ($round)"; (cd "$REPO" && bench BENCH_QUICK=1) 2>&1 | tee "$OUT/new-quick-$round.txt" | grep -vE '^\s+→'
  echo "== base, quick ($round)"; (cd /tmp/base && bench BENCH_QUICK=1) 2>&1 | tee "$OUT/base-quick-$round.txt" | grep -vE '^\s+→'
done
if [ "${B8_FULL:-1}" = 1 ]; then echo "== new, full"; (cd "$REPO" && bench) 2>&1 | tee "$OUT/new-full.txt" | grep -vE '^\s+→'; fi
