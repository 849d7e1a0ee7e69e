import type { ArtifactInput, OpInput, OutputCacheMode, Outputs, RunError, SequencedEvent, Workflow } from '../../contract';
import {
  effectiveCapMicros,
  expandMounts,
  isDataConnector,
  looksLikeBrokenReference,
  microsToUsd,
  mountedAddresses,
  parseReference,
  parseWorkflowRef,
  prepareGraph,
  prepareWorkflow,
  validateWorkflow,
  type PreparedWorkflow,
  type PublishedVersion,
  type SpecLookup,
  type WorkflowRef,
} from '../../engine';
import type { NodeDefinition, PinnedNodes } from '../../nodes';
import { AppError, isAppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import { startFollowed, type FollowDeps, type FollowedRun } from './followed-start';
import { estimateRun, uniqueUses, type CostSources, type RunEstimate } from './run-estimate';
import type { RunStarter } from './run-starter';

/** Port: resolves `workflowRef`s (and mounted workflow nodes) to published versions (`WorkflowRepository`). */
export interface WorkflowResolver {
  resolve(ref: WorkflowRef, orgId: string): Promise<PublishedVersion | null>;
}

/** Who starts a run, and the call it comes with. */
export interface RunCaller {
  orgId: string;
  userId: string;
  tokenId: string | null;
  /** Ends the caller's stream (it went away), never the run. */
  signal: AbortSignal;
  log: Logger;
  /** The run's own deadline, seconds after it is stored (the `Max-Duration-Seconds` option). */
  maxDurationSeconds?: number;
  /** How the run's steps use the output cache (the `Output-Cache` option); absent: auto. */
  outputCache?: OutputCacheMode;
  /** The request's `Idempotency-Key` and the fingerprint of its request: an unexpired one attaches to its run. */
  idempotency?: { key: string; requestHash: string };
  /** Where the run's events are POSTed (`Webhook-Url`), and which (`Webhook-Events`). */
  webhook?: { url: string; events: readonly string[] };
  /** The schedule whose tick starts the run. */
  scheduleId?: string;
}

export interface RunLauncherDeps extends FollowDeps {
  specs: SpecLookup;
  findNode(id: string): NodeDefinition | undefined;
  /** The catalog file nodes among a run's, as they are now (`NodeRegistry.pin`): what the run keeps. */
  pinNodes(uses: Iterable<string>): PinnedNodes;
  resolver: WorkflowResolver;
  starter: Pick<RunStarter, 'start' | 'startFailed'>;
}

/** The workflow an inline definition is recorded under (the editor's draft runs); no version. */
export interface RunOrigin {
  workflowId: string;
}

/** Most distinct workflows one run may mount, at any depth. */
const MAX_MOUNTED_WORKFLOWS = 50;

/**
 * Starts runs as `runs.create` and `runs.node` ask: resolves the workflow (inline, by
 * reference, and every workflow it mounts), validates the graph and the inputs, takes the cap
 * and the balance hold as the run is stored, and follows the run's events from before it is
 * stored. Every refusal is an `AppError` thrown before any event.
 */
export class RunLauncher {
  constructor(private readonly deps: RunLauncherDeps) {}

  /**
   * `runs.create`: the run and its events, from `run.started` to the terminal one. With `origin`,
   * an inline definition is recorded under that workflow (`editor.workflows.run`).
   */
  async create(input: OpInput<'runs.create'>, caller: RunCaller, origin?: RunOrigin): Promise<FollowedRun> {
    const { definition, resolved } = await this.resolveDefinition(input, caller.orgId);
    // The stream replays the run's log from its first event, so nothing appended before the
    // subscription is missed; a caller that goes away ends the stream, never the run.
    const followed = await startFollowed(this.deps, caller, (id) => this.start(caller, definition, input.inputs ?? {}, effectiveCapMicros(input.maxCostUsd), resolved, id, origin));
    caller.log.info({ runId: followed.runId }, 'run started');
    return followed;
  }

  /**
   * A run no caller follows (a schedule's tick): the checks and the start of `runs.create`, with
   * the run id chosen by the caller; answers its id (that of the idempotency key's run when the
   * key was used). Refusals are the same `AppError`s.
   */
  async startUnfollowed(input: { workflowRef: string; inputs: Record<string, ArtifactInput>; capMicros: number }, caller: Omit<RunCaller, 'signal'>, runId: string): Promise<string> {
    const { definition, resolved } = await this.resolveDefinition({ workflowRef: input.workflowRef }, caller.orgId);
    return this.start({ ...caller, signal: new AbortController().signal }, definition, input.inputs, input.capMicros, resolved, runId);
  }

  /**
   * The checks of `runs.create` with nothing started (a schedule's, as it is created): the same
   * 400s and 404s; a workflow every run of which would fail as it starts is a 400 here.
   */
  async checkRun(input: { workflowRef: string; inputs: Record<string, ArtifactInput> }, orgId: string): Promise<void> {
    const { definition } = await this.resolveDefinition({ workflowRef: input.workflowRef }, orgId);
    const checked = await this.check(definition, input.inputs, orgId);
    if (!checked.ok) throw new AppError({ code: 'bad_request', message: `every run of this schedule would fail as it starts: ${checked.error.message}` });
  }

  /**
   * `runs.node`: one model or llm node run as a one-node workflow; answers its outputs. The
   * answer waits for the run, not for the caller: a caller that goes away stops waiting, the
   * run still completes and is recorded.
   */
  async runNode(input: OpInput<'runs.node'>, caller: RunCaller): Promise<{ outputs: Outputs }> {
    const node = this.deps.findNode(input.node);
    if (!node) throw new AppError({ code: 'not_found', message: `no node with id "${input.node}"; list nodes with GET /v1/nodes?q=<text>` });
    if (node.spec.kind !== 'model' && node.spec.kind !== 'llm') {
      throw new AppError({ code: 'bad_request', message: `runs.node runs model and llm nodes; "${input.node}" is a ${node.spec.kind} node` });
    }
    for (const [port, value] of Object.entries(input.inputs)) {
      if (parseReference(value) !== null || looksLikeBrokenReference(value)) {
        throw new AppError({ code: 'validation_failed', message: `input "${port}" looks like a reference; runs.node takes values, not \${node.port} references` });
      }
    }
    const { runId, events } = await startFollowed(this.deps, caller, (id) => this.start(caller, singleNodeWorkflow(node, input.inputs), {}, effectiveCapMicros(input.maxCostUsd), undefined, id));
    return outputsOf(runId, events);
  }

  private async resolveDefinition(input: { workflow?: Workflow; workflowRef?: string }, orgId: string): Promise<{ definition: Workflow; resolved?: PublishedVersion }> {
    if (input.workflow) return { definition: input.workflow };
    const text = input.workflowRef!;
    const parsed = parseWorkflowRef(text);
    if (!parsed.ok) throw new AppError({ code: 'bad_request', message: `${parsed.message}; write <org-slug>/<workflow-slug>@<version> or <uuid>@<version>` });
    const resolved = await this.deps.resolver.resolve(parsed.value, orgId);
    if (!resolved) {
      throw new AppError({ code: 'not_found', message: `workflowRef "${text}" does not resolve to a published workflow version; check the address and the version` });
    }
    return { definition: resolved.definition, resolved };
  }

  /** The latest definitions of every workflow the definition mounts, at any depth; 404 for one that does not resolve. */
  private async resolveMounts(definition: Workflow, orgId: string): Promise<Map<string, Workflow>> {
    const found = new Map<string, Workflow>();
    const queue = mountedAddresses(definition);
    while (queue.length > 0) {
      const address = queue.shift()!;
      if (found.has(address)) continue;
      if (found.size >= MAX_MOUNTED_WORKFLOWS) throw new AppError({ code: 'validation_failed', message: `this workflow mounts more than ${MAX_MOUNTED_WORKFLOWS} workflows` });
      const [org, slug] = address.split('/') as [string, string];
      const resolved = await this.deps.resolver.resolve({ id: { kind: 'address', org, slug }, selector: { kind: 'latest' }, explicitSelector: false }, orgId);
      if (!resolved) throw new AppError({ code: 'not_found', message: `the workflow mounts "${address}", which does not resolve to a published workflow version` });
      found.set(address, resolved.definition);
      queue.push(...mountedAddresses(resolved.definition));
    }
    return found;
  }

  /** Checks, mounts, balance and start of a run; returns its id. */
  private async start(
    caller: RunCaller,
    definition: Workflow,
    given: Record<string, ArtifactInput>,
    capMicros: number,
    resolved: PublishedVersion | undefined,
    runId: string,
    origin?: RunOrigin,
  ): Promise<string> {
    const request = {
      runId,
      orgId: caller.orgId,
      userId: caller.userId,
      tokenId: caller.tokenId,
      capMicros,
      workflowId: resolved?.workflowId ?? origin?.workflowId ?? null,
      workflowVersionId: resolved?.versionId ?? null,
      requireCredit: true,
      ...(caller.maxDurationSeconds === undefined ? {} : { maxDurationSeconds: caller.maxDurationSeconds }),
      ...(caller.outputCache === undefined ? {} : { outputCache: caller.outputCache }),
      ...(caller.idempotency === undefined ? {} : { idempotency: caller.idempotency }),
      ...(caller.webhook === undefined ? {} : { webhook: caller.webhook }),
      ...(caller.scheduleId === undefined ? {} : { scheduleId: caller.scheduleId }),
    };
    const { starter } = this.deps;
    const checked = await this.check(definition, given, caller.orgId);
    // A pinned or recursive mount is a run-time failure (SPEC): the run is recorded and fails.
    if (!checked.ok) return withCredit(() => starter.startFailed({ ...request, definition, inputs: given }, checked.error));
    return withCredit(() => starter.start({ ...request, definition: checked.graph, prepared: checked.prepared, inputs: checked.inputs, pinned: checked.pinned }));
  }

  /**
   * `runs.estimate`: the checks of `runs.create` (the same 400s and 404s), then what the run would
   * cost, node by node, from the pricing functions (docs/runs.md, Cost estimates). Nothing is
   * stored, held or run.
   */
  async estimate(input: OpInput<'runs.create'>, orgId: string, costs: CostSources): Promise<RunEstimate> {
    const { definition } = await this.resolveDefinition(input, orgId);
    const checked = await this.check(definition, input.inputs ?? {}, orgId);
    if (!checked.ok) throw new AppError({ code: 'bad_request', message: `this run would fail as it starts: ${checked.error.message}` });
    const [medians, available] = await Promise.all([costs.medianCosts(orgId, uniqueUses(checked.prepared)), costs.availableMicros(orgId)]);
    return estimateRun(checked.prepared, checked.inputs, { findNode: this.deps.findNode, medians, capMicros: effectiveCapMicros(input.maxCostUsd), availableMicros: available });
  }

  /**
   * A definition checked as a run of it would be: mounted workflows spliced in, then validated and
   * planned against the inputs given. A mount that can only fail at run time is `ok: false`.
   */
  private async check(definition: Workflow, given: Record<string, ArtifactInput>, orgId: string): Promise<CheckedRun> {
    const expanded = await this.expand(definition, orgId);
    if (!expanded.ok) return expanded;
    const prepared = prepareWorkflow(expanded.graph, this.deps.specs, given, { spliced: expanded.spliced });
    if (!prepared.ok) throw new AppError({ code: 'validation_failed', message: prepared.message, details: { issues: prepared.problems } });
    // In the same turn as the validation: a reload of the catalog cannot come between the specs checked and the definitions kept.
    const pinned = this.deps.pinNodes(Array.from(prepared.prepared.workflow.nodes.values(), (node) => node.uses));
    return { ok: true, graph: expanded.graph, prepared: prepared.prepared, inputs: prepared.inputs, pinned };
  }

  /**
   * A batch's workflow (docs/batches.md): resolved once (every row runs the same version), mounts
   * spliced in, the graph checked and planned without inputs; each row's inputs are then checked
   * against its interface. The same 400s and 404s as `runs.create`; a workflow every run of which
   * would fail as it starts is a 400 here (a batch of failures helps nobody).
   */
  async prepareBatch(input: { workflow?: Workflow; workflowRef?: string }, orgId: string): Promise<BatchWorkflow> {
    const { definition, resolved } = await this.resolveDefinition(input, orgId);
    const expanded = await this.expand(definition, orgId);
    if (!expanded.ok) throw new AppError({ code: 'bad_request', message: `every row of this batch would fail as it starts: ${expanded.error.message}` });
    const prepared = prepareGraph(expanded.graph, this.deps.specs, { spliced: expanded.spliced });
    if (!prepared.ok) throw new AppError({ code: 'validation_failed', message: prepared.message, details: { issues: prepared.problems } });
    const pinned = this.deps.pinNodes(Array.from(prepared.prepared.workflow.nodes.values(), (node) => node.uses));
    return { graph: expanded.graph, prepared: prepared.prepared, pinned, ...(resolved ? { resolved } : {}) };
  }

  /** The definition with its mounted workflows spliced in; a mount that can only fail at run time is `ok: false`. */
  private async expand(definition: Workflow, orgId: string): Promise<{ ok: true; graph: Workflow; spliced: boolean } | { ok: false; error: RunError }> {
    const mounts = mountedAddresses(definition);
    if (mounts.length === 0) return { ok: true, graph: definition, spliced: false };
    // The graph as written first (ids, shapes, literals), then with the mounted workflows spliced in.
    const written = validateWorkflow(definition, this.deps.specs);
    if (!written.ok) throw new AppError({ code: 'validation_failed', message: written.message, details: { issues: written.problems } });
    const expanded = expandMounts(definition, await this.resolveMounts(definition, orgId));
    if (!expanded.ok) {
      if (expanded.code === 'mount_invalid') throw new AppError({ code: 'validation_failed', message: expanded.message });
      if (expanded.code === 'mount_not_found') throw new AppError({ code: 'not_found', message: expanded.message });
      return { ok: false, error: { code: expanded.code, message: expanded.message } };
    }
    return { ok: true, graph: expanded.workflow, spliced: true };
  }
}

/** A batch's workflow, checked once for all its rows. */
export interface BatchWorkflow {
  /** The graph every row runs (mounts spliced in). */
  graph: Workflow;
  prepared: PreparedWorkflow;
  pinned: PinnedNodes;
  /** The published version, for a workflowRef. */
  resolved?: PublishedVersion;
}

type CheckedRun = { ok: true; graph: Workflow; prepared: PreparedWorkflow; inputs: Record<string, ArtifactInput>; pinned: PinnedNodes } | { ok: false; error: RunError };

/** Runs a start that takes the run's hold on the balance as it stores the run; nothing available is 402. */
async function withCredit(start: () => Promise<string>): Promise<string> {
  try {
    return await start();
  } catch (err) {
    if (!isAppError(err, 'insufficient_credit')) throw err;
    // What may still be spent: the balance less what unfinished runs hold (docs/money.md, Holds); never shown below zero.
    const { balanceMicros = 0 } = (err.details ?? {}) as { balanceMicros?: number };
    const balanceUsd = microsToUsd(Math.max(0, balanceMicros));
    throw new AppError({
      code: 'insufficient_credit',
      message: `your organization's available balance is $${balanceUsd} (its balance less what its unfinished runs hold); add credit, or wait for those runs to finish`,
      details: { balanceUsd },
    });
  }
}

/** The outputs of a followed run's `run.completed`; its `run.failed` as an error (a JSON answer has no stream to carry it). */
async function outputsOf(runId: string, events: AsyncIterable<SequencedEvent>): Promise<{ outputs: Outputs }> {
  for await (const { event } of events) {
    if (event.type === 'run.completed') return { outputs: event.outputs as Outputs };
    if (event.type === 'run.failed') throw runFailedError(runId, event.error);
  }
  throw new AppError({ code: 'unavailable', message: `run ${runId} is still running; read it with GET /v1/runs/${runId}` });
}

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
