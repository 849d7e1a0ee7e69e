import type { Workflow } from '../../../contract';
import type { StepViews } from '../runs/step-views';

/** How a node differs between two versions, for the history's diff. */
export type NodeChange = 'added' | 'removed' | 'changed';

export interface GraphViewProps {
  definition: Workflow;
  /** Saved canvas positions by node id; nodes without one are laid out automatically. */
  layout: { nodes: Record<string, { x: number; y: number }> } | null;
  /** Step states to colour nodes by (a run's live view or its record). */
  steps?: StepViews;
  /** Nodes to mark as added, removed or changed (a diff of two versions). */
  changes?: Readonly<Record<string, NodeChange>>;
  /** CSS height of the canvas; default 480px. */
  height?: number | string;
}

/** Placeholder: a read-only canvas of a workflow (version view, diff, run detail). */
export function GraphView(props: GraphViewProps) {
  return <div style={{ height: props.height ?? 480 }}>{props.definition.nodes.length} nodes</div>;
}
