#!/usr/bin/env bash
# Builds .b8dev/node_modules.tar.xz: the packages the B8 bench needs (build/packages.txt, made by
# build/pkgs.py from strace logs of B8 runs), without files no run reads: type declarations, docs,
# the source maps the traced run did not open (build/maps.txt), Prisma's query compilers for other
# databases. Plus the generated Prisma client (.svc-prisma), .bin/tsx and the @svc/* workspace links.
# Rerun after `prisma generate` or a change of dependencies.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUTDIR=$REPO/.b8dev; mkdir -p "$OUTDIR"
STAGE=/tmp/b8build/nm
rm -rf "$STAGE"; mkdir -p "$STAGE/node_modules"
{ cat "$HERE/packages.txt"; printf '%s\n' .svc-prisma .bin/tsx @svc/sdk @svc/cli @svc/studio; } |
  (cd "$REPO/node_modules" && tar -cf - -T -) | tar -C "$STAGE/node_modules" -xf -
cd "$STAGE/node_modules"
find . -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.md' -o -name '*.markdown' \) -delete
find . -type f -name '*.map' | sed 's#^\./##' | sort > /tmp/b8build/all-maps.txt
comm -23 /tmp/b8build/all-maps.txt <(sort "$HERE/maps.txt") | tr '\n' '\0' | xargs -0 -r rm -f
# (the generated client, .svc-prisma/client/internal/class.ts, imports query_compiler_fast_bg.postgresql{,.wasm-base64}.js)
find @prisma/client/runtime -type f -name 'query_compiler_*' ! -name 'query_compiler_fast_bg.postgresql.js' ! -name 'query_compiler_fast_bg.postgresql.wasm-base64.js' -delete
# esbuild's own bin/esbuild is a copy of @esbuild/linux-x64's binary (the one its API runs)
if [ -f esbuild/bin/esbuild ] && cmp -s esbuild/bin/esbuild @esbuild/linux-x64/bin/esbuild; then
  rm esbuild/bin/esbuild; ln -s ../../@esbuild/linux-x64/bin/esbuild esbuild/bin/esbuild
fi
find . -type d -empty -delete
cd "$STAGE"
du -sh node_modules
rm -f "$OUTDIR"/node_modules.tar.*
tar --owner=0 --group=0 --numeric-owner -cf - node_modules | xz -9e -T1 > "$OUTDIR/node_modules.tar.xz"
ls -la "$OUTDIR/node_modules.tar.xz"
