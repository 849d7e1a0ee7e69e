import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useMemo } from 'react';
import type { Workflow } from '../../../contract';
import type { StepViews } from '../runs/step-views';
import { autoLayout } from './auto-layout';
import { useCatalog } from './catalog';
import './editor.css';
import { toFlow } from './flow';
import type { NodeChange } from './model';
import { nodeTypes } from './node-card';

export type { NodeChange } from './model';

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

/** A read-only canvas of a workflow (version view, diff, run detail): the editor's node rendering, not editable. */
export function GraphView(props: GraphViewProps) {
  return (
    <ReactFlowProvider>
      <GraphViewInner {...props} />
    </ReactFlowProvider>
  );
}

function GraphViewInner({ definition, layout, steps, changes, height = 480 }: GraphViewProps) {
  const { catalog } = useCatalog(definition);
  const flow = useMemo(() => {
    const placed = autoLayout(definition, layout ?? { nodes: {} }, catalog, layout !== null);
    return toFlow({ definition, layout: placed }, catalog, { steps, changes, editable: false });
  }, [definition, layout, catalog, steps, changes]);
  return (
    <div className="graph-view" style={{ height }} role="figure" aria-label={`Workflow graph with ${definition.nodes.length} node${definition.nodes.length === 1 ? '' : 's'}`}>
      <ReactFlow
        nodes={flow.nodes}
        edges={flow.edges}
        nodeTypes={nodeTypes}
        fitView
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        edgesFocusable={false}
        nodesFocusable={false}
        proOptions={{ hideAttribution: true }}
        minZoom={0.2}
      >
        <Background gap={20} />
        <Controls showInteractive={false} />
        {definition.nodes.length > 8 && <MiniMap pannable zoomable />}
      </ReactFlow>
    </div>
  );
}
