#!/usr/bin/env node
// profile-summary.cjs FILE.cpuprofile [TOP]: where a V8 CPU profile's time went: self time by
// function (with its file), and by package or source folder (node_modules/<pkg>, services/<x>,
// node: internals), as percentages of the samples. For `make profile`'s output.
'use strict';
const fs = require('node:fs');

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary.cjs FILE.cpuprofile [TOP]');
  process.exit(2);
}
const top = Number(topArg ?? 40);
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfSamples = new Map();
for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
const total = profile.samples.length;

function where(url) {
  if (!url) return null;
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `npm:${pkg[1]}`;
  const ours = /\/(services\/[^/]+|test\/[^/]+|workers)\//.exec(path);
  if (ours) return ours[1];
  if (path.startsWith('node:')) return 'node:internals';
  return path;
}

const fnTotals = new Map();
const placeTotals = new Map();
for (const [id, count] of selfSamples) {
  const node = byId.get(id);
  const { functionName, url, lineNumber } = node.callFrame;
  const name = `${functionName || '(anonymous)'}  ${url ? `${url.replace(/^.*\/(node_modules\/|services\/|test\/)/, '$1')}:${lineNumber + 1}` : ''}`;
  fnTotals.set(name, (fnTotals.get(name) ?? 0) + count);
  // Built-ins (JSON.parse, crypto, the GC, idle) have no url: they are named as themselves.
  const place = where(url) ?? `native: ${functionName || '(anonymous)'}`;
  placeTotals.set(place, (placeTotals.get(place) ?? 0) + count);
}
const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
console.log(`${total} samples, ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s`);
console.log('\nby package / folder (self time)');
for (const [place, n] of [...placeTotals].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${pct(n)}  ${place}`);
console.log(`\ntop ${top} functions (self time)`);
for (const [name, n] of [...fnTotals].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(n)}  ${name}`);

// By owner: each sample goes to the project function nearest the leaf (services/ or test/), so a
// library's time (ioredis, pg, the socket writes under them) is charged to the code that called
// it; the timing wrappers around every Redis command and Postgres statement are looked through.
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const WRAPPERS = /services\/(queue\/redis-connection|store\/database)\.ts$/;
const owners = new Map();
for (const [id, count] of selfSamples) {
  let label;
  for (let cur = id; cur !== undefined; cur = parentOf.get(cur)) {
    const { url, functionName } = byId.get(cur).callFrame;
    if (/\/(services|test)\//.test(url) && !url.includes('node_modules') && !WRAPPERS.test(url)) {
      label = `${url.replace(/^.*\/(services\/|test\/)/, '$1')} ${functionName || '(anonymous)'}`;
      break;
    }
  }
  label ??= `(no project frame) ${byId.get(id).callFrame.functionName || '(anonymous)'}`;
  owners.set(label, (owners.get(label) ?? 0) + count);
}
console.log(`\ntop ${top} owners (self time of the samples under each project function)`);
for (const [name, n] of [...owners].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(n)}  ${name}`);
