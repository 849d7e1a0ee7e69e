import { validate, WorkflowSchema, type ArtifactInput, type NodeSpec, type Workflow } from '../../contract';
import { artifactKindOf, isDataConnector } from '../../engine/connector-values';
import { checkStartValues } from '../../engine/start-values';
import { summarizeProblems, validateWorkflow, type CheckedWorkflow, type SpecLookup } from '../../engine/validate-workflow';

/** One problem of a workflow draft: where it is (`nodes[2].inputs.width`) and what is wrong. */
export interface WorkflowValidationProblem {
  /**
   * Path inside the workflow definition. The server reports the same problem of a `runs.create`
   * body under `workflow.` (`workflow.nodes[2].inputs.width`); the message is the same.
   */
  path: string;
  message: string;
}

/** What `validate()` found: nothing, or every problem and the one-line message the server would give. */
export type WorkflowValidation = { ok: true } | { ok: false; problems: WorkflowValidationProblem[]; message: string };

/**
 * What online validation needs of a client: `nodes.get`, which rejects with an error whose
 * `status` is 404 for an unknown node id. The SDK's client has this shape; so does any object
 * that serves NodeSpecs the same way (a cache, a test double).
 */
export interface NodeSpecSource {
  ops: {
    // Method syntax: a client whose options type has more (optional) fields still fits.
    'nodes.get'(input: { id: string }, options?: { signal?: AbortSignal }): Promise<NodeSpec>;
  };
}

/** Options of online validation. */
export interface OnlineValidateOptions {
  /** Where the NodeSpecs of the draft's platform nodes come from, one `nodes.get` per distinct node id. */
  client: NodeSpecSource;
  /** Cancels the `nodes.get` calls; validation then rejects with the abort reason. */
  signal?: AbortSignal;
}

const NO_SPECS: SpecLookup = { get: () => undefined };

function failed(problems: readonly WorkflowValidationProblem[], message: string): WorkflowValidation {
  return { ok: false, problems: problems.map(({ path, message: text }) => ({ path, message: text })), message };
}

/** The contract's schema first, as the API checks a request body before anything else. */
function checkSchema(workflow: Workflow): WorkflowValidation | null {
  const shape = validate(WorkflowSchema, workflow);
  return shape.ok ? null : failed(shape.issues, shape.message);
}

/** Whether `uses` names a platform node, as the engine tells roles apart. */
function isPlatformUses(uses: string): boolean {
  return uses !== 'input' && uses !== 'output' && uses !== 'const' && !uses.includes('/');
}

/**
 * Checks a definition without NodeSpecs: the contract's schema, then the engine's structure checks
 * (ids, interface nodes, literals of input and const nodes, references to nodes and their `value`
 * ports, cycles, an output node). Platform nodes' ports, literals and connectors need their specs
 * and are left to online validation.
 */
export function validateOffline(workflow: Workflow): WorkflowValidation {
  const shape = checkSchema(workflow);
  if (shape) return shape;
  const check = validateWorkflow(workflow, NO_SPECS, { skipUnknownSpecs: true });
  return check.ok ? { ok: true } : failed(check.problems, check.message);
}

function statusOf(err: unknown): unknown {
  return err !== null && typeof err === 'object' ? (err as { status?: unknown }).status : undefined;
}

async function fetchSpecs(workflow: Workflow, options: OnlineValidateOptions): Promise<Map<string, NodeSpec>> {
  const ids = [...new Set(workflow.nodes.map((node) => node.uses).filter(isPlatformUses))];
  const specs = new Map<string, NodeSpec>();
  await Promise.all(
    ids.map(async (id) => {
      try {
        specs.set(id, await options.client.ops['nodes.get']({ id }, { signal: options.signal }));
      } catch (err) {
        // Unknown: left out of the lookup, so the engine reports it in the server's words.
        if (statusOf(err) !== 404) throw err;
      }
    }),
  );
  return specs;
}

/**
 * The run inputs of a run that gives none: every input's default, as the server fills them. A
 * data input's default is an artifact (a recipe asset), a value input's its plain value.
 */
function defaultInputs(workflow: CheckedWorkflow): Record<string, ArtifactInput> {
  const inputs: Record<string, ArtifactInput> = {};
  for (const node of workflow.list) {
    if (node.role !== 'input' || !Object.hasOwn(node.inputs, 'default')) continue;
    const connector = node.outputs!.value!.id;
    const kind = artifactKindOf(connector)!;
    inputs[node.id] = isDataConnector(connector) ? { ...(node.inputs.default as ArtifactInput), kind } : { kind, value: node.inputs.default };
  }
  return inputs;
}

/**
 * Checks a definition as `runs.create` does, with the live NodeSpecs: the schema, then
 * `validateWorkflow` against the specs (unknown nodes, unknown and missing ports, literals against
 * connectors with their `optionValues` and bounds, references against the ports they read and
 * feed), then const values and input defaults against the ports they reach, as the server checks
 * a run whose caller leaves those inputs out. Mounted workflows are not resolved: their inputs
 * and outputs are checked when a run is created.
 */
export async function validateOnline(workflow: Workflow, options: OnlineValidateOptions): Promise<WorkflowValidation> {
  const shape = checkSchema(workflow);
  if (shape) return shape;
  const specs = await fetchSpecs(workflow, options);
  const check = validateWorkflow(workflow, { get: (id) => specs.get(id) });
  if (!check.ok) return failed(check.problems, check.message);
  const values = checkStartValues(check.workflow, defaultInputs(check.workflow), {});
  return values.length > 0 ? failed(values, summarizeProblems(values)) : { ok: true };
}
