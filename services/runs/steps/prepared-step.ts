import type { NodeDefinition } from '../../nodes';

/** A step whose inputs and worst case are known before it is reserved. */
export interface PreparedStep {
  nodeId: string;
  definition: NodeDefinition;
  inputs: Record<string, unknown>;
  estimate: number;
}
