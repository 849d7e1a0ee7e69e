"""Which node_modules packages the B8 bench needs, written to packages.txt beside this file, and which of
their source maps its run opened (tsx turns source maps on), to maps.txt beside it.

Sources: strace logs of B8 runs (TRACES: any strace -f output naming paths; a failed-only one as
/tmp/b8trace/st.txt, or a full %file one of a run with a complete node_modules), the root
package.json's dependencies (but sharp, which only the image nodes load, lazily), and the closure of
all of those over each package's dependencies and optionalDependencies."""
import json, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
NM = os.path.join(REPO, 'node_modules')
TRACES = [t for t in ['/tmp/b8trace/st.txt', '/tmp/b8build/st2.txt'] if os.path.exists(t)]
ROOTS = [REPO, '/tmp/b8wt']          # the trees the traced runs ran in
SKIP = {'sharp'}
# typescript: tsx reads only its package.json (tsconfig handling); the 23 MB package is not loaded
ONLY_PACKAGE_JSON = {'typescript'}

def top(rel):
    parts = rel.split('/')
    if parts[0].startswith('@'):
        return parts[0] + '/' + parts[1] if len(parts) > 1 and parts[1] else None
    return parts[0] or None

pk, maps = set(), set()
for t in TRACES:
    for line in open(t, errors='replace'):
        if 'node_modules' not in line: continue
        for m in re.finditer(r'"([^"]*node_modules/[^"]*)"', line):
            p = m.group(1)
            if not p.startswith('/'): p = os.path.normpath(os.path.join(REPO, p))
            for root in ROOTS:
                nm = root + '/node_modules/'
                if p.startswith(nm):
                    rel = p[len(nm):]
                    name = top(rel)
                    if name and os.path.lexists(os.path.join(NM, name)):
                        pk.add(name)
                        if rel.endswith('.map') and '= -1' not in line: maps.add(rel)
root_deps = json.load(open(os.path.join(REPO, 'package.json'))).get('dependencies', {})
pk |= {d for d in root_deps if d not in SKIP and os.path.isdir(os.path.join(NM, d))}

def deps_of(d):
    try: j = json.load(open(os.path.join(d, 'package.json')))
    except Exception: return []
    return list((j.get('dependencies') or {}).keys()) + list((j.get('optionalDependencies') or {}).keys())
def resolve(name, frm):
    d = frm
    while True:
        c = os.path.join(d, 'node_modules', name)
        if os.path.isdir(c): return c
        if d in (REPO, '/'): return None
        d = os.path.dirname(d)
todo = [os.path.join(NM, p) for p in pk if p not in ONLY_PACKAGE_JSON]
seen = set()
while todo:
    d = todo.pop()
    if d in seen: continue
    seen.add(d)
    for n in deps_of(d):
        if n in SKIP: continue
        r = resolve(n, d)
        if r and r not in seen: todo.append(r)
for d in seen:
    rel = os.path.relpath(d, NM)
    if not rel.startswith('..'): pk.add(top(rel))
pk = sorted(p for p in pk if p and not p.startswith('.'))
with open(os.path.join(HERE, 'packages.txt'), 'w') as f:
    for p in pk: f.write((p + '/package.json' if p in ONLY_PACKAGE_JSON else p) + '\n')
open(os.path.join(HERE, 'maps.txt'), 'w').write(''.join(m + '\n' for m in sorted(maps)))
print(f'{len(pk)} packages, {len(maps)} source maps opened; traces: {TRACES}', file=sys.stderr)
