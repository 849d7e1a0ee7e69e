#!/usr/bin/env bash
# On the 16-core machine, from the repo root, with .b8dev carried (built by build-root.sh and
# build-nm.sh; base-src.tar.gz = `git archive <base> services workers prisma/functions | gzip`): B8 (1 -> 8
# worker processes) for this tree and for the base tree (its services/, workers/ and prisma/functions/,
# with this tree's bench code and migrations), quick, in the order of B8_VARIANTS (default "new base":
# words "new" or "base", each optionally followed by ":NAME=VALUE,..." for its service's environment,
# e.g. "new base new:RUN_CREATIONS_PER_ORG=1"); then this tree at full length unless B8_FULL=0.
# Output under $OUT.
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
n=0
for variant in ${B8_VARIANTS:-new base}; do
  n=$((n + 1)); tree=${variant%%:*}; extra=""
  [ "$tree" = "$variant" ] || extra=$(echo "${variant#*:}" | tr ',' ' ')
  dir=$REPO; [ "$tree" = base ] && dir=/tmp/base
  echo "== $variant, quick"
  # shellcheck disable=SC2086 # extra is a list of NAME=VALUE words
  (cd "$dir" && bench BENCH_QUICK=1 $extra) 2>&1 | tee "$OUT/$n-${tree}-quick.txt" | grep -vE '^\s+→'
done
if [ "${B8_FULL:-1}" = 1 ]; then echo "== new, full"; (cd "$REPO" && bench) 2>&1 | tee "$OUT/new-full.txt" | grep -vE '^\s+→'; fi
