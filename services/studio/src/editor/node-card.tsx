import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import type { GraphNode } from '../../../contract';
import { parseReference } from '../../../engine/references';
import { formatMs, formatUsd } from '../lib/format';
import { showConnector, type NodeChange, type NodePorts, type PortInfo } from './model';
import type { NodeProblem } from './problems';
import type { StepView } from '../runs/step-views';

/** What one canvas node draws: the definition's node, its ports, and how to colour it. */
export interface CardData extends Record<string, unknown> {
  node: GraphNode;
  ports: NodePorts;
  step?: StepView;
  change?: NodeChange;
  problems?: readonly NodeProblem[];
  /** Inputs that hold a connection. */
  connected?: ReadonlySet<string>;
  editable: boolean;
}

export type CardNode = Node<CardData, 'card'>;

/** The colour class of a connector: `c-text`, `c-image`, `c-custom`. */
export function connectorClass(id: string): string {
  return `c-${id.startsWith('CUSTOM:') ? 'custom' : id.toLowerCase()}`;
}

/** A literal as a short preview on the card. */
export function previewValue(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (value && typeof value === 'object' && typeof (value as { ref?: unknown }).ref === 'string') text = ((value as { ref: string }).ref.split('/').pop() ?? 'file');
  else text = JSON.stringify(value) ?? String(value);
  return text.length > 22 ? `${text.slice(0, 21)}…` : text;
}

function PortRow({ nodeId, port, side, editable, connected, problem, literal }: { nodeId: string; port: PortInfo; side: 'in' | 'out'; editable: boolean; connected: boolean; problem: boolean; literal?: { value: unknown } }) {
  const c = port.connector;
  const type = port.anyType ? 'any type' : showConnector(c);
  const classes = ['port', side, connectorClass(port.anyType ? 'ANY' : c.id), c.isArray ? 'list' : '', c.isOptional ? 'optional' : '', problem ? 'has-problem' : ''].filter(Boolean).join(' ');
  return (
    <div className={classes} title={`${port.name}: ${type}${c.isOptional ? ' (optional)' : ''}`}>
      <Handle
        type={side === 'in' ? 'target' : 'source'}
        position={side === 'in' ? Position.Left : Position.Right}
        id={`${side}:${port.name}`}
        data-testid={`handle-${nodeId}-${side}-${port.name}`}
        aria-label={`${side === 'in' ? 'Input' : 'Output'} ${port.name} (${type})`}
        isConnectable={editable}
        className={`handle ${connectorClass(port.anyType ? 'ANY' : c.id)}${c.isArray ? ' list' : ''}${connected ? ' connected' : ''}`}
      />
      <span className="port-name">{port.name}{c.isArray ? ' [ ]' : ''}</span>
      {!literal && <span className="port-type">{port.anyType ? 'any' : c.id.replace('CUSTOM:', '')}</span>}
      {literal && <span className="port-literal mono" title={JSON.stringify(literal.value)}>= {previewValue(literal.value)}</span>}
    </div>
  );
}

function CardView({ data, selected }: NodeProps<CardNode>) {
  const { node, ports, step, change, problems = [], connected, editable } = data;
  const problemFields = new Set(problems.map((p) => p.field));
  const status = step?.status;
  const classes = [
    'card-node',
    `role-${ports.role}`,
    selected ? 'selected' : '',
    problems.length > 0 ? 'invalid' : '',
    status ? `step-${status}` : '',
    change ? `change-${change}` : '',
    ports.unknown ? 'unknown' : '',
  ].filter(Boolean).join(' ');
  const progress = step?.progress;
  return (
    <div className={classes} data-testid={`node-${node.id}`} aria-label={`${ports.title} (${node.id})${problems.length > 0 ? `, ${problems.length} problem${problems.length === 1 ? '' : 's'}` : ''}`}>
      <div className="card-head">
        <span className="card-title">{ports.title}</span>
        {problems.length > 0 && (
          <span className="problem-count" title={problems.map((p) => p.message).join('\n')}>{problems.length}</span>
        )}
        {change && <span className={`change-badge ${change}`}>{change}</span>}
      </div>
      <div className="card-id mono">{node.id}{ports.role === 'mounted' ? ` · ${node.uses}` : ports.role === 'platform' && node.label ? ` · ${node.uses}` : ''}</div>
      <div className="card-ports">
        <div className="ports-in">
          {ports.inputs.map((p) => (
            <PortRow
              key={p.name}
              nodeId={node.id}
              port={p}
              side="in"
              editable={editable}
              connected={connected?.has(p.name) ?? false}
              problem={problemFields.has(p.name)}
              literal={node.inputs && Object.hasOwn(node.inputs, p.name) && !connected?.has(p.name) && parseReference(node.inputs[p.name]) === null ? { value: node.inputs[p.name] } : undefined}
            />
          ))}
        </div>
        <div className="ports-out">
          {ports.outputs.map((p) => (
            <PortRow key={p.name} nodeId={node.id} port={p} side="out" editable={editable} connected={false} problem={false} />
          ))}
        </div>
      </div>
      {ports.role === 'input' && (
        <div className="card-note muted mono">{node.inputs && Object.hasOwn(node.inputs, 'default') ? `default = ${previewValue(node.inputs.default)}` : 'required'}</div>
      )}
      {ports.role === 'const' && node.inputs && Object.hasOwn(node.inputs, 'value') && (
        <div className="card-note muted mono">= {previewValue(node.inputs.value)}</div>
      )}
      {ports.unknown && <div className="card-note muted">{ports.role === 'mounted' ? 'Loading interface…' : 'Unknown node kind'}</div>}
      {status === 'running' && (
        <div className="card-progress" role="progressbar" aria-label="Progress" aria-valuemin={0} aria-valuemax={100} aria-valuenow={progress !== undefined ? Math.round(progress * 100) : undefined}>
          <div className={progress === undefined ? 'bar indeterminate' : 'bar'} style={progress !== undefined ? { width: `${Math.round(progress * 100)}%` } : undefined} />
        </div>
      )}
      {step?.message && status === 'running' && <div className="card-note muted">{step.message}</div>}
      {step && status === 'completed' && (step.costUsd !== undefined || step.ms !== undefined) && (
        <div className="card-note step-done">
          {step.ms !== undefined && <span>{formatMs(step.ms)}</span>}
          {step.costUsd !== undefined && <span>{formatUsd(step.costUsd)}</span>}
        </div>
      )}
      {step && status === 'failed' && step.error && <div className="card-note step-error" role="alert">{step.error.message}</div>}
    </div>
  );
}

export const NodeCard = memo(CardView);
export const nodeTypes = { card: NodeCard };
