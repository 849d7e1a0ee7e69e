import type { ArtifactInput } from '../../contract';
import { resolveStepInputs, type PreparedWorkflow } from '../../engine';
import type { NodeDefinition } from '../../nodes';

/** The process's nodes, as the choice of a first step to reserve with its run reads them. */
export interface FirstStepNodes {
  find(id: string): NodeDefinition | undefined;
  mayRunInline(uses: string): boolean;
}

/** A run's lone first step that may be reserved with the run, and its worst case for given inputs. */
export interface LocalFirstStep {
  nodeId: string;
  /** Its worst case with these run inputs; undefined when it cannot use them (its worker then reports that, as for any step). */
  estimateFor(inputs: Record<string, ArtifactInput>): number | undefined;
}

/**
 * The first step of a workflow's runs, when it is the only one and a local node of the platform
 * (bounded work, no provider): such a step is stored reserved with its run (`RunStarter`, and a
 * batch's feed for its rows), its job carries the attempt token, and its worker starts it without
 * a database round trip. None otherwise: steps that call providers, or run beside others, are
 * reserved by their worker, which checks that the run is still running before any money is at
 * stake.
 */
export function localFirstStep(prepared: PreparedWorkflow, nodes: FirstStepNodes): LocalFirstStep | undefined {
  const { workflow, plan } = prepared;
  if (plan.initial.length !== 1) return undefined;
  const nodeId = plan.initial[0]!;
  const node = workflow.nodes.get(nodeId);
  if (!node || node.role !== 'platform' || !nodes.mayRunInline(node.uses)) return undefined;
  const definition = nodes.find(node.uses);
  if (!definition) return undefined;
  return {
    nodeId,
    estimateFor(inputs) {
      try {
        return definition.estimate(resolveStepInputs(node, { workflow, inputs, stepOutputs: new Map() }));
      } catch {
        return undefined;
      }
    },
  };
}
