import { OPERATIONS, type NodeSpec, type OpInput, type Outputs, type PublishedWorkflow, type Workflow } from '../../contract';
import type { CallOptions } from './call';
import type { Client, RunCallOptions } from './client';
import type { RunHandle } from './run-handle';

/** The palette filter of {@link searchNodes}: all optional. */
export type NodeSearch = OpInput<'nodes.list'>;

/** What {@link run} and {@link startRun} take: `runs.create`'s input; `workflow` may also be a builder draft (anything with `toJSON()`). */
export type RunInput = Omit<OpInput<'runs.create'>, 'workflow'> & { workflow?: Workflow | { toJSON(): Workflow } };

/** `nodes.list`: the node palette, filtered by text (`q`, matching id, title and description), `category` and `limit`. */
export function searchNodes(client: Client, search: NodeSearch = {}, options?: CallOptions): Promise<NodeSpec[]> {
  return client.ops['nodes.list'](search, options);
}

/** `nodes.get`: one NodeSpec with its full port map; a `NotFoundError` for an unknown id. */
export function getNode(client: Client, id: string, options?: CallOptions): Promise<NodeSpec> {
  return client.ops['nodes.get']({ id }, options);
}

/**
 * `workflows.get`: a published version. `ref` is an address (`acme/flow`) or UUID, optionally with
 * a selector (`acme/flow@1.2.0`, `acme/flow@2`, `acme/flow@latest`); without one, the latest.
 */
export function getWorkflow(client: Client, ref: string, options?: CallOptions): Promise<PublishedWorkflow> {
  return client.ops['workflows.get']({ id: ref }, options);
}

/**
 * `runs.create`, followed: a handle whose `runId` resolves at `run.started`, whose `events()`
 * yields every event with its `seq`, and whose `result()` resolves with the outputs (or throws
 * `RunFailedError`). The stream resumes by itself when its connection drops.
 */
export function startRun(client: Client, input: RunInput, options?: RunCallOptions): RunHandle {
  const workflow = input.workflow && 'toJSON' in input.workflow && typeof input.workflow.toJSON === 'function' ? input.workflow.toJSON() : input.workflow;
  const body = { ...input, ...(workflow === undefined ? {} : { workflow }) } as OpInput<'runs.create'>;
  return client.follow(OPERATIONS['runs.create'], body, options);
}

/** `runs.create`: runs a workflow and resolves with its final outputs; throws `RunFailedError` on `run.failed`. */
export function run(client: Client, input: RunInput, options?: RunCallOptions): Promise<Outputs> {
  return startRun(client, input, options).result();
}
