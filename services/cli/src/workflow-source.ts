import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ArtifactInput, Workflow } from '../../sdk/src/index';
import { usageError } from './cli-error';

/** What `svc run` runs: a workflow read from a file, or a published one by reference. */
export type WorkflowSource =
  | { type: 'file'; path: string; workflow: Workflow; inputs: Record<string, ArtifactInput>; maxCostUsd?: number }
  | { type: 'ref'; ref: string };

const SLUG = '[a-z0-9]+(?:-[a-z0-9]+)*';
const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
/** `latest`, a bare major or a full semver (a partial `1.2` is refused by the service, so not a ref here). */
const SELECTOR = '(?:latest|\\d+|\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?)';
/**
 * The grammar of services/engine/workflow-ref.ts (which the CLI may not import): an address
 * `<org-slug>/<workflow-slug>` or a UUID, optionally `@<selector>`.
 */
const WORKFLOW_REF = new RegExp(`^(?:${SLUG}/${SLUG}|${UUID})(?:@${SELECTOR})?$`);

export function isWorkflowRef(text: string): boolean {
  return text.length <= 400 && WORKFLOW_REF.test(text);
}

/**
 * SPEC: the argument is a file if it exists as a file (a directory does not count); otherwise
 * a ref if it parses as one; otherwise neither, and the error says both.
 */
export function resolveSource(argument: string): WorkflowSource {
  let isFile = false;
  let isDirectory = false;
  try {
    const info = fs.statSync(argument);
    isFile = info.isFile();
    isDirectory = info.isDirectory();
  } catch {
    // Not there: maybe a ref.
  }
  if (isFile) return { type: 'file', path: argument, ...readWorkflowFile(argument) };
  if (isWorkflowRef(argument)) return { type: 'ref', ref: argument };
  const noFile = isDirectory ? `${argument} is a directory, not a workflow file` : `no file named ${argument}`;
  throw usageError(`${noFile}, and ${argument} is not a workflow ref such as acme/flow@1`, 'not_found');
}

/**
 * A workflow file: JSON or YAML of the definition (`{ version: 2, nodes }`), or of a
 * `POST /v1/runs` body (`{ workflow, inputs?, maxCostUsd? }`, as in docs/examples), whose inputs
 * and cap become defaults of the command line's.
 */
export function readWorkflowFile(file: string): { workflow: Workflow; inputs: Record<string, ArtifactInput>; maxCostUsd?: number } {
  const text = fs.readFileSync(file, 'utf8');
  const document = parseDocument(text, file);
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw usageError(`${file} is not a workflow: expected an object with "version": 2 and "nodes"`, 'invalid_workflow');
  }
  const body = document as Record<string, unknown>;
  if ('workflow' in body) {
    const inputs = body.inputs === undefined ? {} : (body.inputs as Record<string, ArtifactInput>);
    const maxCostUsd = typeof body.maxCostUsd === 'number' ? body.maxCostUsd : undefined;
    return { workflow: body.workflow as Workflow, inputs, ...(maxCostUsd === undefined ? {} : { maxCostUsd }) };
  }
  if (!Array.isArray(body.nodes)) throw usageError(`${file} is not a workflow: expected "version": 2 and a "nodes" array`, 'invalid_workflow');
  return { workflow: body as unknown as Workflow, inputs: {} };
}

function parseDocument(text: string, file: string): unknown {
  const extension = path.extname(file).toLowerCase();
  try {
    // YAML is a superset of JSON; JSON.parse first keeps JSON's own messages for .json files.
    return extension === '.json' ? (JSON.parse(text) as unknown) : (parseYaml(text) as unknown);
  } catch (err) {
    throw usageError(`${file} is not valid ${extension === '.json' ? 'JSON' : 'YAML or JSON'}: ${(err as Error).message}`, 'invalid_workflow');
  }
}

/** The workflow's inputs, each input node's id with its connector (`outputType`). */
export function declaredInputs(workflow: Workflow): Map<string, string> {
  const inputs = new Map<string, string>();
  for (const node of Array.isArray(workflow.nodes) ? workflow.nodes : []) {
    if (node && node.uses === 'input' && typeof node.id === 'string') inputs.set(node.id, typeof node.outputType === 'string' ? node.outputType : 'STRUCTURED');
  }
  return inputs;
}
