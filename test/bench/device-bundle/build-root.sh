#!/usr/bin/env bash
# Builds .b8dev/root.tar.xz: node, redis and PostgreSQL 15 with this machine's glibc under /opt/b8,
# every ELF patched to use /opt/b8/lib/ld-linux-x86-64.so.2 and RPATH /opt/b8/lib.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
OUTDIR=$REPO/.b8dev; mkdir -p "$OUTDIR"
STAGE=/tmp/b8build/root
PGV=15
rm -rf "$STAGE"; mkdir -p "$STAGE/opt/b8"/{bin,lib}
B=$STAGE/opt/b8
PGBIN=$B/usr/lib/postgresql/$PGV/bin PGLIB=$B/usr/lib/postgresql/$PGV/lib PGSHARE=$B/usr/share/postgresql/$PGV
mkdir -p "$PGBIN" "$PGLIB" "$PGSHARE"

cp -L /usr/bin/node "$B/bin/node"
cp -L /usr/bin/redis-server "$B/bin/redis-server"   # a symlink to redis-check-rdb; the binary picks its mode from argv[0]
cp -L /usr/bin/redis-cli "$B/bin/redis-cli"
for f in postgres initdb pg_ctl pg_isready psql pg_controldata pg_resetwal pg_dump pg_dumpall pg_restore \
         createdb dropdb createuser pg_config pg_waldump pg_test_fsync pgbench; do
  cp -L /usr/lib/postgresql/$PGV/bin/$f "$PGBIN/$f"
done
ln -s postgres "$PGBIN/postmaster"
# the whole pkglibdir but LLVM JIT (it needs libLLVM, ~100 MB; Postgres turns JIT off when llvmjit.so is absent)
( cd /usr/lib/postgresql/$PGV/lib && tar -cf - --exclude=./llvmjit.so --exclude=./llvmjit_types.bc --exclude=./bitcode . ) | tar -C "$PGLIB" -xf -
( cd /usr/share/postgresql/$PGV && tar -cf - --exclude=./man . ) | tar -C "$PGSHARE" -xf -
cp -a /usr/share/zoneinfo "$B/zoneinfo"

# the shared libraries: ldd closure of every ELF above, copied under their soname, flat
elves=$(find "$B/bin" "$PGBIN" "$PGLIB" -type f | while read -r f; do file -b "$f" | grep -q '^ELF' && echo "$f"; done)
{ for f in $elves; do ldd "$f" | awk '/=>/ && $3 ~ /^\// {print $1, $3}'; done
  # glibc's parts that may be loaded at run time without being in a DT_NEEDED
  for l in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 libresolv.so.2 librt.so.1 libutil.so.1 libgcc_s.so.1 libanl.so.1 libnss_files.so.2 libnss_dns.so.2 libnss_compat.so.2; do
    [ -e /lib/x86_64-linux-gnu/$l ] && echo "$l /lib/x86_64-linux-gnu/$l"
  done
} | sort -u | while read -r name path; do
  [ -e "$B/lib/$name" ] || cp -L "$path" "$B/lib/$name"
done
cp -L /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$B/lib/ld-linux-x86-64.so.2"
# libicudata.so.72 (31 MB: all of ICU's data) is only there for Postgres' ICU collations, which the
# service never uses (initdb --no-locale: C collation); initdb still lists ICU's locales and opens a
# collator for each (ucol_open falls back to the root collation). So it is rebuilt with a subset of
# the data: the collation tree, the locale index, English names, normalization; no converters,
# break iterators, currencies, units, zones, transliterators or per-locale formatting data.
if [ -e "$B/lib/libicudata.so.72" ]; then
  ICU=/tmp/b8build/icu; rm -rf "$ICU"; mkdir -p "$ICU"
  python3 - "$ICU" <<'PY'
import re, subprocess, sys
d = sys.argv[1]; lib = '/lib/x86_64-linux-gnu/libicudata.so.72'
for l in subprocess.check_output(['readelf', '-sW', '--dyn-syms', lib]).decode().splitlines():
    if l.split()[-1:] == ['icudt72_dat']:
        f = l.split(); val = int(f[1], 16); size = int(f[2], 0)
for l in subprocess.check_output(['readelf', '-SW', lib]).decode().splitlines():
    if ' .rodata ' in l:
        p = l.split(']')[1].split(); addr = int(p[2], 16); off = int(p[3], 16)
        with open(lib, 'rb') as fh:
            fh.seek(off + val - addr); open(d + '/icudt72l.dat', 'wb').write(fh.read(size))
items = subprocess.check_output(['icupkg', '-l', d + '/icudt72l.dat']).decode().split()
keep = re.compile(r'^(root|en|en_US|en_001|en_150|res_index|pool)\.res$')
rm = []
for it in items:
    parts = it.split('/'); n = parts[-1]
    if len(parts) == 1:
        if n.endswith(('.cnv', '.spp', '.cfu')) or n == 'unames.icu': rm.append(it)
        elif re.match(r'^[a-z]{2,3}(_[A-Za-z0-9]+)*\.res$', n) and not keep.match(n): rm.append(it)
    elif parts[0] in ('brkitr', 'curr', 'unit', 'zone', 'rbnf', 'translit'): rm.append(it)
    elif parts[0] in ('lang', 'region') and not keep.match(n): rm.append(it)
open(d + '/remove.txt', 'w').write('\n'.join(rm) + '\n')
PY
  # (the output keeps the name icudt72l.dat: icupkg names the items after the output file, and ICU
  # looks them up as icudt72l/...)
  mkdir -p "$ICU/small"
  icupkg -r "$ICU/remove.txt" "$ICU/icudt72l.dat" "$ICU/small/icudt72l.dat"
  printf '%s\n' '.section .rodata' '.globl icudt72_dat' '.type icudt72_dat, @object' '.balign 16' \
    'icudt72_dat:' ".incbin \"$ICU/small/icudt72l.dat\"" '.size icudt72_dat, . - icudt72_dat' \
    '.section .note.GNU-stack,"",@progbits' > "$ICU/icudt.S"
  grep -qa "icudt72l/coll/root.res" "$ICU/small/icudt72l.dat" || { echo "ICU subset: unexpected item names" >&2; exit 1; }
  gcc -shared -nostdlib -Wl,-soname,libicudata.so.72 -Wl,-z,noexecstack -o "$B/lib/libicudata.so.72" "$ICU/icudt.S"
fi
chmod 755 "$B/lib/"*

# glibc's own objects are left unstripped (already stripped by Debian; their symbols matter)
is_glibc() { case "$(basename "$1")" in ld-linux-*|libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|libresolv.so.2|librt.so.1|libutil.so.1|libanl.so.1|libnss_*) return 0;; esac; return 1; }
for f in $elves "$B"/lib/*; do
  is_glibc "$f" || strip --strip-unneeded "$f"
done
for f in $elves; do
  if readelf -l "$f" | grep -q 'Requesting program interpreter'; then
    patchelf --set-interpreter /opt/b8/lib/ld-linux-x86-64.so.2 "$f"
  fi
  patchelf --force-rpath --set-rpath /opt/b8/lib "$f"
done
for f in "$B"/lib/*; do
  case "$(basename "$f")" in ld-linux-*) continue;; esac
  patchelf --force-rpath --set-rpath /opt/b8/lib "$f"
done
chmod -R a+rX "$B"

# xz may be missing on the device (tar then fails with "xz: Cannot exec"); device.sh can fall back
# to this one, run through its own loader: gzip is everywhere.
BOOT=/tmp/b8build/xzboot; rm -rf "$BOOT"; mkdir -p "$BOOT/xzboot"
cp -L /usr/bin/xz /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/liblzma.so.5 "$BOOT/xzboot/"
tar -C "$BOOT" --owner=0 --group=0 --numeric-owner -cf - xzboot | gzip -9 > "$OUTDIR/xzboot.tar.gz"
rm -f "$OUTDIR"/root.tar.*
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner -cf - opt/b8 | xz -T1 --x86 --lzma2=preset=9e,dict=192MiB > "$OUTDIR/root.tar.xz"
ls -la "$OUTDIR/root.tar.xz"
