// Prints the fault suite's figures (test/faults/support/figures.ts writes them, one JSON line
// each) as one table, scenario by scenario, and exits 1 when any goal was missed or none was
// recorded. Usage: node deploy/local/fault-table.cjs [figures.jsonl]
const fs = require('node:fs');
const file = process.argv[2] ?? '.test-artifacts/fault-figures.jsonl';
let lines = [];
try {
  lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
} catch {
  console.log(`fault suite: no figures in ${file}`);
  process.exit(1);
}
const goalText = (g) => {
  if (!g) return '(reported)';
  const parts = [];
  if (g.equals !== undefined) parts.push(`= ${g.equals}`);
  if (g.min !== undefined) parts.push(`≥ ${g.min}`);
  if (g.max !== undefined) parts.push(`≤ ${g.max}`);
  return parts.join(', ');
};
const order = (s) => ['R', 'M', 'S'].indexOf(s[0]) * 100 + Number(s.slice(1)) || 999;
lines.sort((a, b) => order(a.scenario) - order(b.scenario) || a.at.localeCompare(b.at));
const rows = lines.map((f) => [f.scenario, f.name, `${typeof f.value === 'number' ? +f.value.toFixed(3) : f.value}${f.unit ? ` ${f.unit}` : ''}`, goalText(f.goal), f.met ? 'met' : 'MISSED']);
const head = ['id', 'figure', 'value', 'goal', ''];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (r) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
console.log(`\nfault suite figures (${lines.some((f) => f.full) ? 'full' : 'shortened'} run)`);
console.log(line(head));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of rows) console.log(line(r));
const missed = lines.filter((f) => !f.met);
console.log(missed.length ? `${missed.length} goal(s) missed` : `all ${lines.length} goals met`);
process.exit(missed.length ? 1 : 0);
