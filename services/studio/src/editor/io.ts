import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import type { Workflow } from '../../../contract';
import { BUILTIN_CONNECTOR_IDS } from '../../../contract';

/**
 * Import and export of a draft as JSON or YAML. The import checks the shape the contract's
 * WorkflowSchema fixes (version 2, nodes with id, uses, inputs, outputType, label, nothing else);
 * the meaning (references, types) is left to the server's validation, which reports problems.
 * The check is written out here because the contract's compiled validator needs `eval`, which
 * the studio's CSP forbids.
 */

export type Format = 'json' | 'yaml';

export function exportWorkflow(definition: Workflow, format: Format): string {
  return format === 'json' ? `${JSON.stringify(definition, null, 2)}\n` : stringifyYaml(definition);
}

export type ImportResult = { ok: true; definition: Workflow } | { ok: false; errors: string[] };

/** Parses JSON or YAML (JSON is YAML, but JSON's errors read better) and checks the workflow's shape. */
export function importWorkflow(text: string): ImportResult {
  let value: unknown;
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, errors: ['The file is empty.'] };
  try {
    value = trimmed.startsWith('{') ? JSON.parse(trimmed) : parseYaml(trimmed);
  } catch (err) {
    return { ok: false, errors: [`Not valid ${trimmed.startsWith('{') ? 'JSON' : 'YAML'}: ${err instanceof Error ? err.message : String(err)}`] };
  }
  const errors = workflowShapeErrors(value);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, definition: value as Workflow };
}

const NODE_KEYS = new Set(['id', 'uses', 'inputs', 'outputType', 'label']);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What is wrong with a value as a WorkflowSchema (schema version 2); empty when it fits. */
export function workflowShapeErrors(value: unknown): string[] {
  const errors: string[] = [];
  if (!isObject(value)) return ['A workflow is an object with "version": 2 and "nodes".'];
  for (const key of Object.keys(value)) if (key !== 'version' && key !== 'nodes') errors.push(`unknown field "${key}" (a workflow has only "version" and "nodes")`);
  if (value.version !== 2) errors.push(`"version" must be 2, got ${JSON.stringify(value.version)}`);
  if (!Array.isArray(value.nodes)) {
    errors.push('"nodes" must be a list');
    return errors;
  }
  if (value.nodes.length > 10000) errors.push('at most 10000 nodes');
  value.nodes.forEach((node: unknown, i: number) => {
    const at = `nodes[${i}]`;
    if (!isObject(node)) {
      errors.push(`${at} must be an object`);
      return;
    }
    for (const key of Object.keys(node)) if (!NODE_KEYS.has(key)) errors.push(`${at}: unknown field "${key}"`);
    if (typeof node.id !== 'string' || node.id.length === 0 || node.id.length > 200) errors.push(`${at}.id must be a string of 1 to 200 characters`);
    if (typeof node.uses !== 'string' || node.uses.length === 0 || node.uses.length > 300) errors.push(`${at}.uses must be a string of 1 to 300 characters`);
    if (node.inputs !== undefined && !isObject(node.inputs)) errors.push(`${at}.inputs must be an object`);
    if (node.outputType !== undefined && !(BUILTIN_CONNECTOR_IDS as readonly unknown[]).includes(node.outputType)) {
      errors.push(`${at}.outputType must be one of ${BUILTIN_CONNECTOR_IDS.join(', ')}`);
    }
    if (node.label !== undefined && (typeof node.label !== 'string' || node.label.length > 500)) errors.push(`${at}.label must be a string of at most 500 characters`);
  });
  return errors;
}

/** Hands the text to the browser as a file download. */
export function downloadText(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
