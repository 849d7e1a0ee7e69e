import { randomUUID } from 'node:crypto';
import type { ArtifactInput, OpInput, Outputs, RunError, Workflow } from '../../contract';
import {
  effectiveCapMicros,
  expandMounts,
  isDataConnector,
  looksLikeBrokenReference,
  microsToUsd,
  mountedAddresses,
  parseReference,
  parseWorkflowRef,
  prepareWorkflow,
  validateWorkflow,
  type SpecLookup,
  type WorkflowRef,
} from '../../engine';
import type { NodeDefinition } from '../../nodes';
import { AppError } from '../../platform/app-error';
import type { RunStarter } from '../../runs';
import { InsufficientCreditError } from '../../store';
import type { AuthContext } from '../auth/auth-context';
import { DEFAULT_RECORD_CHECK_MS, followRunEvents } from '../routes/run-replay';
import type { StoredRun } from '../routes/run-ports';
import type { EventStream, Handler, OpContext, SequencedEvent } from './handler-types';

/** A published workflow version a `workflowRef` resolves to. */
export interface ResolvedWorkflow {
  workflowId: string;
  versionId: string;
  definition: Workflow;
}

/**
 * Port: resolves `workflowRef`s (and mounted workflow nodes) to published versions. The one
 * place run creation looks them up; published versions arrive with their own repository.
 */
export interface WorkflowResolver {
  resolve(ref: WorkflowRef, orgId: string): Promise<ResolvedWorkflow | null>;
}

/** Port: a run's events from `afterSeq` on, live until the terminal one (the run event bus). */
export interface RunEventSource {
  events(runId: string, options: { afterSeq?: number; signal?: AbortSignal }): AsyncIterable<SequencedEvent>;
}

export interface RunHandlerDeps {
  specs: SpecLookup;
  findNode(id: string): NodeDefinition | undefined;
  resolver: WorkflowResolver;
  starter: Pick<RunStarter, 'start' | 'startFailed'>;
  events: RunEventSource;
  /**
   * The run records: a stream silent for `recordCheckMs` reads its run's record, so that a run
   * finished in Postgres whose terminal event never reached the log still ends its stream.
   * Absent: the log alone.
   */
  records?: { getRun(runId: string, orgId: string): Promise<StoredRun | null> };
  recordCheckMs?: number;
}

/**
 * Starts a run whose events are followed from before it exists: the run's id is chosen here, so
 * the stream's subscription and first log read overlap the run's storage instead of coming after
 * it (the bus waits for a run's first event either way). A refused run gives the subscription
 * back before its error is thrown.
 */
async function startFollowed(deps: RunHandlerDeps, ctx: OpContext, orgId: string, start: (runId: string) => Promise<string>): Promise<{ runId: string; events: EventStream }> {
  const { signal } = ctx;
  const runId = randomUUID();
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) controller.abort();
  const iterator = followRun(deps, runId, orgId, ctx, controller.signal)[Symbol.asyncIterator]();
  // The first next() subscribes; what it resolves to is the stream's first event.
  const first = iterator.next();
  first.catch(() => undefined);
  const release = () => signal.removeEventListener('abort', stop);
  try {
    await start(runId);
  } catch (err) {
    controller.abort();
    await first.catch(() => undefined);
    await iterator.return?.(undefined);
    release();
    throw err;
  }
  return { runId, events: announced(runId, iterator, first, release) };
}

/**
 * A stored run's stream: its `run.started` first, at once, then the rest of an iteration whose
 * first `next()` is under way. The starter appended `run.started` as seq 1 before it returned,
 * so sending it without waiting for the log is sending the log's first event; a client whose
 * response has begun therefore always learns the run id, whatever Redis does next.
 */
async function* announced(runId: string, iterator: AsyncIterator<SequencedEvent>, first: Promise<IteratorResult<SequencedEvent>>, done: () => void): AsyncGenerator<SequencedEvent> {
  try {
    yield { seq: 1, event: { type: 'run.started', runId } };
    for (let step = await first; !step.done; step = await iterator.next()) {
      const { seq, event } = step.value;
      if (seq === 1 && event.type === 'run.started') continue;
      // Only a terminal event from the run's record can come at seq 1 (the log lost every event);
      // 2 keeps the ids the client sees increasing.
      yield seq > 1 ? step.value : { seq: 2, event };
    }
  } finally {
    done();
    await iterator.return?.(undefined);
  }
}

/** A started run's events, from its first, to its terminal one (from its record if the log lacks it). */
function followRun(deps: RunHandlerDeps, runId: string, orgId: string, ctx: OpContext, signal: AbortSignal): EventStream {
  const { records } = deps;
  if (!records) return deps.events.events(runId, { signal });
  return followRunEvents(deps.events, () => records.getRun(runId, orgId), {
    runId,
    afterSeq: 0,
    signal,
    checkMs: deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS,
    // The stream rides these out (Redis or Postgres blinking); worth a line, not an error.
    onTrouble: (err, what) => ctx.log.warn({ err, runId }, what === 'log' ? 'run event stream broke; reopening it' : 'run record not read; checking again later'),
  });
}

function callerOf(ctx: OpContext): AuthContext {
  // The contract marks both operations `auth: 'required'`; the middleware guarantees a caller.
  if (!ctx.auth) throw new AppError({ code: 'unauthorized', message: 'this operation needs an access token' });
  return ctx.auth;
}

async function resolveDefinition(input: OpInput<'runs.create'>, orgId: string, resolver: WorkflowResolver): Promise<{ definition: Workflow; resolved?: ResolvedWorkflow }> {
  if (input.workflow) return { definition: input.workflow };
  const text = input.workflowRef!;
  const parsed = parseWorkflowRef(text);
  if (!parsed.ok) throw new AppError({ code: 'bad_request', message: `${parsed.message}; write <org-slug>/<workflow-slug>@<version> or <uuid>@<version>` });
  const resolved = await resolver.resolve(parsed.value, orgId);
  if (!resolved) {
    throw new AppError({ code: 'not_found', message: `workflowRef "${text}" does not resolve to a published workflow version; check the address and the version` });
  }
  return { definition: resolved.definition, resolved };
}

/** Most distinct workflows one run may mount, at any depth. */
const MAX_MOUNTED_WORKFLOWS = 50;

/** The latest definitions of every workflow the definition mounts, at any depth; 404 for one that does not resolve. */
async function resolveMounts(definition: Workflow, orgId: string, resolver: WorkflowResolver): Promise<Map<string, Workflow>> {
  const found = new Map<string, Workflow>();
  const queue = mountedAddresses(definition);
  while (queue.length > 0) {
    const address = queue.shift()!;
    if (found.has(address)) continue;
    if (found.size >= MAX_MOUNTED_WORKFLOWS) throw new AppError({ code: 'validation_failed', message: `this workflow mounts more than ${MAX_MOUNTED_WORKFLOWS} workflows` });
    const [org, slug] = address.split('/') as [string, string];
    const resolved = await resolver.resolve({ id: { kind: 'address', org, slug }, selector: { kind: 'latest' }, explicitSelector: false }, orgId);
    if (!resolved) throw new AppError({ code: 'not_found', message: `the workflow mounts "${address}", which does not resolve to a published workflow version` });
    found.set(address, resolved.definition);
    queue.push(...mountedAddresses(resolved.definition));
  }
  return found;
}

/** Checks, mounts, balance and start of a run; returns its id. Every refusal is an HTTP error before any stream. */
async function startRun(
  deps: RunHandlerDeps,
  auth: AuthContext,
  definition: Workflow,
  given: Record<string, ArtifactInput>,
  maxCostUsd: number | undefined,
  resolved: ResolvedWorkflow | undefined,
  runId: string,
): Promise<string> {
  const request = {
    runId,
    orgId: auth.orgId,
    userId: auth.userId,
    tokenId: auth.tokenId,
    capMicros: effectiveCapMicros(maxCostUsd),
    workflowId: resolved?.workflowId ?? null,
    workflowVersionId: resolved?.versionId ?? null,
    requireCredit: true,
  };
  let graph = definition;
  const mounts = mountedAddresses(definition);
  if (mounts.length > 0) {
    // The graph as written first (ids, shapes, literals), then with the mounted workflows spliced in.
    const written = validateWorkflow(definition, deps.specs);
    if (!written.ok) throw new AppError({ code: 'validation_failed', message: written.message, details: { issues: written.problems } });
    const expanded = expandMounts(definition, await resolveMounts(definition, auth.orgId, deps.resolver));
    if (!expanded.ok) {
      if (expanded.code === 'mount_invalid') throw new AppError({ code: 'validation_failed', message: expanded.message });
      if (expanded.code === 'mount_not_found') throw new AppError({ code: 'not_found', message: expanded.message });
      // A pinned or recursive mount is a run-time failure (SPEC): the run is recorded and fails.
      const error = { code: expanded.code, message: expanded.message };
      return withCredit(() => deps.starter.startFailed({ ...request, definition, inputs: given }, error));
    }
    graph = expanded.workflow;
  }
  const prepared = prepareWorkflow(graph, deps.specs, given, { spliced: mounts.length > 0 });
  if (!prepared.ok) throw new AppError({ code: 'validation_failed', message: prepared.message, details: { issues: prepared.problems } });
  return withCredit(() => deps.starter.start({ ...request, definition: graph, prepared: prepared.prepared, inputs: prepared.inputs }));
}

/** Runs a start that takes the run's hold on the balance as it stores the run; nothing available is 402. */
async function withCredit(start: () => Promise<string>): Promise<string> {
  try {
    return await start();
  } catch (err) {
    if (!(err instanceof InsufficientCreditError)) throw err;
    // What may still be spent: the balance less what unfinished runs hold (docs/money.md, Holds); never shown below zero.
    const balanceUsd = microsToUsd(Math.max(0, err.balanceMicros));
    throw new AppError({
      code: 'insufficient_credit',
      message: `your organization's available balance is $${balanceUsd} (its balance less what its unfinished runs hold); add credit, or wait for those runs to finish`,
      details: { balanceUsd },
    });
  }
}

/** A run failure as the error of a JSON answer (runs.node has no stream to carry `run.failed`). */
function runFailedError(runId: string, error: RunError): AppError {
  return new AppError({
    code: error.code === 'validation_failed' ? 'validation_failed' : 'run_failed',
    message: error.message,
    details: { runId, runError: error },
  });
}

/**
 * The one-node workflow `runs.node` runs: the node, and an output per output port. An inline
 * artifact given to a value port (`{"kind":"structured","value":…}` for STRUCTURED, the only way
 * the contract lets an object reach one) is its value there, as a run input's would be.
 */
function singleNodeWorkflow(node: NodeDefinition, inputs: Record<string, unknown>): Workflow {
  // fromEntries defines own keys: an input named "__proto__" stays an input (and is refused as unknown), not a prototype.
  const literals = Object.fromEntries(
    Object.entries(inputs).map(([port, value]) => {
      const connector = Object.hasOwn(node.spec.inputs, port) ? node.spec.inputs[port]!.connector : undefined;
      const inline = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, 'value');
      return [port, connector && inline && !isDataConnector(connector.id) ? (value as { value: unknown }).value : value];
    }),
  );
  const outputs = Object.keys(node.spec.outputs).map((port) => ({ id: port, uses: 'output', inputs: { value: `\${node.${port}}` } }));
  return { version: 2, nodes: [{ id: 'node', uses: node.spec.id, inputs: literals }, ...outputs] };
}

/** `runs.create` (a stream of events) and `runs.node` (one node, one JSON answer). */
export function runHandlers(deps: RunHandlerDeps): { 'runs.create': Handler<'runs.create'>; 'runs.node': Handler<'runs.node'> } {
  return {
    'runs.create': async (input, ctx): Promise<EventStream> => {
      const auth = callerOf(ctx);
      const { definition, resolved } = await resolveDefinition(input, auth.orgId, deps.resolver);
      // The stream replays the run's log from its first event, so nothing appended before the
      // subscription is missed; a client that goes away ends the stream, never the run.
      const { runId, events } = await startFollowed(deps, ctx, auth.orgId, (id) => startRun(deps, auth, definition, input.inputs ?? {}, input.maxCostUsd, resolved, id));
      ctx.log.info({ runId }, 'run started');
      return events;
    },

    'runs.node': async (input, ctx) => {
      const auth = callerOf(ctx);
      const node = deps.findNode(input.node);
      if (!node) throw new AppError({ code: 'not_found', message: `no node with id "${input.node}"; list nodes with GET /v1/nodes?q=<text>` });
      if (node.spec.kind !== 'model' && node.spec.kind !== 'llm') {
        throw new AppError({ code: 'bad_request', message: `runs.node runs model and llm nodes; "${input.node}" is a ${node.spec.kind} node` });
      }
      for (const [port, value] of Object.entries(input.inputs)) {
        if (parseReference(value) !== null || looksLikeBrokenReference(value)) {
          throw new AppError({ code: 'validation_failed', message: `input "${port}" looks like a reference; runs.node takes values, not \${node.port} references` });
        }
      }
      // The answer waits for the run, not for the client: a client that goes away stops waiting,
      // the run still completes and is recorded.
      const { runId, events } = await startFollowed(deps, ctx, auth.orgId, (id) => startRun(deps, auth, singleNodeWorkflow(node, input.inputs), {}, input.maxCostUsd, undefined, id));
      for await (const { event } of events) {
        if (event.type === 'run.completed') return { outputs: event.outputs as Outputs };
        if (event.type === 'run.failed') throw runFailedError(runId, event.error);
      }
      throw new AppError({ code: 'unavailable', message: `run ${runId} is still running; read it with GET /v1/runs/${runId}` });
    },
  };
}
