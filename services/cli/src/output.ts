import type { RunEstimateBody } from '../../contract';
import type { Artifact, NodeSpec, Outputs } from '../../sdk/src/index';
import { usd } from './format';

/** Writes results on stdout: what a pipe or a script reads. */
export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** `--json`: exactly one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** An artifact as a person reads it: text as is, a ref as its URL, numbers and booleans plain, anything else as JSON. */
export function artifactText(artifact: Artifact): string {
  if (artifact.ref !== undefined) return artifact.ref;
  const value = artifact.value;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** One `name: value` line per output. */
export function outputsText(outputs: Outputs): string {
  const names = Object.keys(outputs);
  if (names.length === 0) return '(no outputs)';
  return names.map((name) => `${name}: ${artifactText(outputs[name]!)}`).join('\n');
}

/** A plain table: columns padded to their widest cell, the last one left free. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function nodesTable(nodes: readonly NodeSpec[]): string {
  if (nodes.length === 0) return 'no nodes match';
  // An EXAMPLE column (example input values, cut to fit a line) only where a listed node has one.
  if (!nodes.some((n) => n.example)) return table(['ID', 'KIND', 'CATEGORY', 'TITLE'], nodes.map((n) => [n.id, n.kind, n.category, n.title]));
  return table(['ID', 'KIND', 'CATEGORY', 'TITLE', 'EXAMPLE'], nodes.map((n) => [n.id, n.kind, n.category, n.title, exampleText(n.example)]));
}

/** `prompt="a fox" num_images=2`, at most 60 characters. */
function exampleText(example: Record<string, unknown> | undefined): string {
  if (!example) return '';
  const text = Object.entries(example).map(([name, value]) => `${name}=${JSON.stringify(value)}`).join(' ');
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** One port as `svc nodes <id>` shows it: name, connector and its constraints. */
function portLine(name: string, c: NodeSpec['inputs'][string]['connector']): string[] {
  const constraints = [
    c.isOptional ? 'optional' : '',
    c.defaultValue !== undefined ? `default ${JSON.stringify(c.defaultValue)}` : '',
    c.optionValues ? `one of ${c.optionValues.map((o) => JSON.stringify(o)).join(', ')}` : '',
    c.minValue !== undefined ? `min ${c.minValue}` : '',
    c.maxValue !== undefined ? `max ${c.maxValue}` : '',
    c.maxLength !== undefined ? `at most ${c.maxLength} characters` : '',
  ].filter(Boolean);
  return [name, c.isArray ? `list of ${c.id}` : c.id, constraints.join('; ')];
}

/** `svc nodes <id>` when the query is one node's id: its description, ports with their constraints, and its example inputs. */
export function nodeDetail(spec: NodeSpec): string {
  const lines = [`${spec.id} (${spec.kind}, ${spec.category}): ${spec.title}`, '', spec.description, ''];
  lines.push(table(['INPUT', 'TYPE', 'CONSTRAINTS'], Object.entries(spec.inputs).map(([name, port]) => portLine(name, port.connector))), '');
  lines.push(table(['OUTPUT', 'TYPE', ''], Object.entries(spec.outputs).map(([name, port]) => portLine(name, port.connector))));
  if (spec.example && Object.keys(spec.example).length > 0) lines.push('', 'Example inputs:', JSON.stringify(spec.example, null, 2));
  return lines.join('\n');
}

/** `svc run --estimate`: one line per node (its worst case, or what it depends on; its expected cost), the totals, and whether they fit. */
export function estimateText(estimate: RunEstimateBody): string {
  const rows = estimate.nodes.map((n) => [
    n.nodeId,
    n.uses,
    n.worstCaseUsd === null ? `depends on ${n.dependsOn.join(', ')}` : usd(n.worstCaseUsd),
    n.expectedUsd === null ? '-' : `${usd(n.expectedUsd)}${n.expectedFrom === 'history' ? ` (median of ${n.samples})` : ''}`,
  ]);
  rows.push(['total', '', estimate.worstCaseUsd === null ? 'unknown until it runs' : usd(estimate.worstCaseUsd), estimate.expectedUsd === null ? '-' : usd(estimate.expectedUsd)]);
  const cap = `cap ${usd(estimate.maxCostUsd)}: ${estimate.fitsCap === null ? 'the run stops at it if it gets there' : estimate.fitsCap ? 'the worst case fits' : 'the worst case does not fit (the run stops at the cap)'}`;
  const balance = `available ${usd(estimate.availableUsd)}: ${estimate.fitsBalance ? 'enough' : 'not enough for what the run would hold'}`;
  return `${table(['NODE', 'USES', 'WORST CASE', 'EXPECTED'], rows)}\n${cap}\n${balance}\nNothing ran.`;
}
