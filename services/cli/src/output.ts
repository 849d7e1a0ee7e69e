import type { Artifact, NodeSpec, Outputs } from '../../sdk/src/index';

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
  return table(['ID', 'KIND', 'CATEGORY', 'TITLE'], nodes.map((n) => [n.id, n.kind, n.category, n.title]));
}
