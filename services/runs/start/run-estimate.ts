import type { ArtifactInput, Connector } from '../../contract';
import { isDataConnector, microsToUsd, resolveStepInputs, type CheckedNode, type PreparedWorkflow } from '../../engine';
import type { NodeDefinition } from '../../nodes';

/** One node of a run estimate. */
export interface NodeEstimate {
  nodeId: string;
  uses: string;
  /** The reservation its step will make (its pricing function's worst case); null when that depends on values only a run produces. */
  worstCaseUsd: number | null;
  /** The upstream outputs (`node.port`) its worst case depends on; empty when it is known now. */
  dependsOn: string[];
  /** What it is likely to cost: the organization's median for this node, at most the worst case; else the worst case. */
  expectedUsd: number | null;
  /** Where `expectedUsd` comes from: `history` (with `samples` completed steps), or `worst_case`. */
  expectedFrom: 'history' | 'worst_case' | null;
  samples: number;
}

/** What `POST /v1/runs/estimate` answers. */
export interface RunEstimate {
  nodes: NodeEstimate[];
  /** The sum of the nodes' worst cases; null when one of them is not known before running. */
  worstCaseUsd: number | null;
  /** The sum of the nodes' expected costs; null when one of them is not known. */
  expectedUsd: number | null;
  /** The run's spend cap (maxCostUsd, or the default, at most the ceiling). */
  maxCostUsd: number;
  /** Whether the worst case fits the cap; null when the worst case is not known. */
  fitsCap: boolean | null;
  /** What the organization may still spend: its balance less what its unfinished runs hold. */
  availableUsd: number;
  /** Whether the available balance covers what the run would hold (its worst case, at most its cap). */
  fitsBalance: boolean;
}

/** Port: what an estimate reads of an organization (`RunCosts`): its past costs by node (`uses`), and what it may still spend. */
export interface CostSources {
  /** Median micro-USD of its recent completed steps of each node spec, and how many. */
  medianCosts(orgId: string, uses: readonly string[]): Promise<ReadonlyMap<string, { medianMicros: number; samples: number }>>;
  /** Its balance less what its unfinished runs hold. */
  availableMicros(orgId: string): Promise<number>;
}

/** The node specs (`uses`) of a prepared run's steps. */
export function uniqueUses(prepared: PreparedWorkflow): string[] {
  return [...new Set(prepared.plan.order.map((id) => prepared.workflow.nodes.get(id)!.uses))];
}

/**
 * Two stand-ins for every value a run has not produced yet: small, then large (an upstream step's
 * text output as empty and as 100,000 characters, a number as 1 and as 100,000, an image as
 * 64x64 and 8192x8192 pixels, a list as empty and as 100 items). A pricing function that answers
 * the same for both does not read the value, and the step's worst case is known now; one that
 * answers differently (an LLM's prompt, a count of images) depends on it.
 */
function standIn(connector: Connector | undefined, large: boolean): unknown {
  const one = (): unknown => {
    const id = connector?.id ?? 'STRUCTURED';
    if (isDataConnector(id)) {
      const side = large ? 8192 : 64;
      return { kind: 'file', ref: 'https://estimate.invalid/value', metadata: { width: side, height: side, durationSeconds: large ? 3600 : 1, sizeBytes: large ? 100_000_000 : 1 } };
    }
    switch (id) {
      case 'TEXT':
        return large ? 'x'.repeat(100_000) : '';
      case 'INT':
      case 'FLOAT':
        return large ? 100_000 : 1;
      case 'BOOLEAN':
        return large;
      case 'EMBEDDING':
        return large ? Array.from({ length: 4096 }, () => 0.5) : [0.5];
      default:
        return large ? { value: 'x'.repeat(100_000) } : {};
    }
  };
  if (connector?.isArray) return large ? Array.from({ length: 100 }, one) : [];
  return one();
}

/** The estimate of one step: its worst case now, or the references it depends on. */
function worstCaseOf(node: CheckedNode, definition: NodeDefinition, prepared: PreparedWorkflow, inputs: Record<string, ArtifactInput>): { micros: number | null; dependsOn: string[] } {
  const { workflow } = prepared;
  const upstream = node.references.filter(({ ref }) => {
    const role = workflow.nodes.get(ref.nodeId)?.role;
    return role === 'platform' || role === 'mounted';
  });
  const estimateWith = (large: boolean): number | null => {
    const stepOutputs = new Map<string, Record<string, unknown>>();
    for (const { ref } of upstream) {
      const source = workflow.nodes.get(ref.nodeId)!;
      const outputs = stepOutputs.get(ref.nodeId) ?? {};
      outputs[ref.port] = standIn(source.outputs?.[ref.port], large);
      stepOutputs.set(ref.nodeId, outputs);
    }
    try {
      return definition.estimate(resolveStepInputs(node, { workflow, inputs, stepOutputs }));
    } catch {
      // A stand-in the node refuses (out of its range): its worst case is not known before running.
      return null;
    }
  };
  const small = estimateWith(false);
  if (upstream.length === 0) return { micros: small, dependsOn: [] };
  const large = estimateWith(true);
  if (small !== null && small === large) return { micros: small, dependsOn: [] };
  return { micros: null, dependsOn: [...new Set(upstream.map(({ ref }) => `${ref.nodeId}.${ref.port}`))] };
}

const sumOrNull = (values: (number | null)[]): number | null => (values.some((v) => v === null) ? null : values.reduce<number>((a, b) => a + b!, 0));
const usdOrNull = (micros: number | null): number | null => (micros === null ? null : microsToUsd(micros));

/**
 * A run's cost before it runs (docs/runs.md, Cost estimates): each step's worst case from its
 * node's pricing function on the inputs known now (the very reservation its worker will make),
 * its expected cost from the organization's history, the totals, and whether they fit the cap and
 * the balance. Pure: the caller loads the history and the balance.
 */
export function estimateRun(
  prepared: PreparedWorkflow,
  inputs: Record<string, ArtifactInput>,
  options: { findNode(uses: string): NodeDefinition | undefined; medians: ReadonlyMap<string, { medianMicros: number; samples: number }>; capMicros: number; availableMicros: number },
): RunEstimate {
  const worst: (number | null)[] = [];
  const expected: (number | null)[] = [];
  const nodes = prepared.plan.order.map((nodeId): NodeEstimate => {
    const node = prepared.workflow.nodes.get(nodeId)!;
    const definition = options.findNode(node.uses);
    const { micros, dependsOn } = definition ? worstCaseOf(node, definition, prepared, inputs) : { micros: null, dependsOn: [] };
    const history = options.medians.get(node.uses);
    const fromHistory = history && history.samples > 0 ? (micros === null ? history.medianMicros : Math.min(history.medianMicros, micros)) : null;
    const expectedMicros = fromHistory ?? micros;
    worst.push(micros);
    expected.push(expectedMicros);
    return {
      nodeId,
      uses: node.uses,
      worstCaseUsd: usdOrNull(micros),
      dependsOn,
      expectedUsd: usdOrNull(expectedMicros),
      expectedFrom: fromHistory !== null ? 'history' : micros !== null ? 'worst_case' : null,
      samples: history?.samples ?? 0,
    };
  });
  const worstMicros = sumOrNull(worst);
  const needs = Math.min(options.capMicros, worstMicros ?? options.capMicros);
  return {
    nodes,
    worstCaseUsd: usdOrNull(worstMicros),
    expectedUsd: usdOrNull(sumOrNull(expected)),
    maxCostUsd: microsToUsd(options.capMicros),
    fitsCap: worstMicros === null ? null : worstMicros <= options.capMicros,
    availableUsd: microsToUsd(Math.max(0, options.availableMicros)),
    fitsBalance: options.availableMicros > 0 && options.availableMicros >= needs,
  };
}
