import { useEffect, useId, useState } from 'react';
import type { BuiltinConnectorId, GraphNode } from '../../../contract';
import { parseReference } from '../../../engine/references';
import {
  CONNECTOR_IDS, connectionProblem, literalConnector, literalKey, outputPortsWithReferences, portsOf, renameProblem, type Catalog, type Graph,
} from './model';
import type { NodeProblem } from './problems';
import { ValueField } from './fields';

export interface InspectorProps {
  graph: Graph;
  catalog: Catalog;
  node: GraphNode;
  problems: readonly NodeProblem[];
  onSetInput(key: string, value: unknown, coalesce?: string): void;
  /** Connects an output of another node into an input of this one. */
  onConnect(sourceId: string, sourcePort: string, targetPort: string): void;
  onSetFields(fields: { label?: string; outputType?: BuiltinConnectorId }): void;
  onRename(to: string): void;
  /** Changes a mounted workflow's version selector. */
  onSetMountVersion(selector: string): void;
  onDelete(): void;
  onSelect(id: string): void;
  upload(file: File): Promise<unknown>;
}

/** The selected node's settings: id, label, type, and each input by its connector (or where it is connected from). */
export function Inspector({ graph, catalog, node, problems, onSetInput, onConnect, onSetFields, onRename, onSetMountVersion, onDelete, onSelect, upload }: InspectorProps) {
  const ports = portsOf(node, catalog);
  const inputs = node.inputs ?? {};
  const fieldProblems = (field: string) => problems.filter((p) => p.field === field).map((p) => p.message);
  const shownFields = new Set<string | null>();
  const key = literalKey(node);
  const headingId = useId();

  const portFields = ports.inputs.map((port) => {
    shownFields.add(port.name);
    const value = inputs[port.name];
    const ref = parseReference(value);
    if (ref) {
      return (
        <div key={port.name} className={`field port-field connected${fieldProblems(port.name).length > 0 ? ' invalid' : ''}`} data-testid={`field-${port.name}`}>
          <div className="port-field-head">
            <span className="label">{port.name}</span>
            <span className="port-field-type">{port.anyType ? 'any type' : port.connector.id}</span>
          </div>
          <div className="connected-from">
            from{' '}
            <button type="button" className="link-button mono" onClick={() => onSelect(ref.nodeId)}>{ref.nodeId}.{ref.port}</button>
            <button type="button" className="button small" onClick={() => onSetInput(port.name, undefined)} aria-label={`Disconnect ${port.name}`}>Disconnect</button>
          </div>
          {fieldProblems(port.name).length > 0 && <ul className="field-problems">{fieldProblems(port.name).map((m, i) => <li key={i}>{m}</li>)}</ul>}
        </div>
      );
    }
    if (ports.role === 'output') {
      return (
        <div key={port.name} className={`field port-field${fieldProblems(port.name).length > 0 ? ' invalid' : ''}`} data-testid={`field-${port.name}`}>
          <span className="label">value</span>
          <p className="muted small">Drag from an output port (right side of a node) to this node, or choose one:</p>
          <ConnectFrom graph={graph} catalog={catalog} node={node} port={port.name} onConnect={onConnect} />
          {fieldProblems(port.name).length > 0 && <ul className="field-problems">{fieldProblems(port.name).map((m, i) => <li key={i}>{m}</li>)}</ul>}
        </div>
      );
    }
    return (
      <div key={port.name} className="port-field-wrap">
      <ValueField
        testId={`field-${port.name}`}
        label={port.name}
        connector={port.connector}
        value={value}
        present={Object.hasOwn(inputs, port.name)}
        onChange={(v) => onSetInput(port.name, v, `input:${node.id}:${port.name}`)}
        onReset={() => onSetInput(port.name, undefined)}
        problems={fieldProblems(port.name)}
        upload={upload}
      />
      <ConnectFrom graph={graph} catalog={catalog} node={node} port={port.name} onConnect={onConnect} compact />
      </div>
    );
  });

  // Inputs the node holds that its kind does not declare (the server reports them too).
  const extra = Object.keys(inputs).filter((k) => !shownFields.has(k) && k !== key);
  if (key) shownFields.add(key);
  shownFields.add('outputType');
  shownFields.add('id');
  shownFields.add('label');
  if (ports.role === 'mounted') shownFields.add('uses');
  const nodeProblems = problems.filter((p) => !shownFields.has(p.field) || extra.includes(p.field ?? ''));

  return (
    <section className="inspector" aria-labelledby={headingId}>
      <header className="inspector-head">
        <h2 id={headingId}>{ports.title}</h2>
        <span className="muted mono small">{node.uses}</span>
        {ports.description && <p className="muted small">{ports.description}</p>}
      </header>
      {nodeProblems.length > 0 && (
        <ul className="node-problems" aria-label="Problems with this node">
          {nodeProblems.map((p, i) => <li key={i}>{p.message}</li>)}
        </ul>
      )}
      <IdField key={node.id} graph={graph} id={node.id} problems={fieldProblems('id')} onRename={onRename} />
      <div className="field">
        <label htmlFor={`${headingId}-label`}>Label</label>
        <input id={`${headingId}-label`} type="text" maxLength={500} value={node.label ?? ''} placeholder={ports.role === 'platform' ? 'Shown instead of the node title' : 'Shown to people running it'} onChange={(e) => onSetFields({ label: e.target.value })} />
      </div>
      {ports.role === 'mounted' && (
        <MountVersionField key={node.uses} uses={node.uses} problems={fieldProblems('uses')} onCommit={onSetMountVersion} />
      )}
      {(ports.role === 'input' || ports.role === 'const') && (
        <div className={`field${fieldProblems('outputType').length > 0 ? ' invalid' : ''}`}>
          <label htmlFor={`${headingId}-type`}>Type</label>
          <select id={`${headingId}-type`} value={node.outputType ?? ''} onChange={(e) => onSetFields({ outputType: e.target.value as BuiltinConnectorId })}>
            {!node.outputType && <option value="">— choose —</option>}
            {CONNECTOR_IDS.map((c) => <option key={c} value={c}>{c}</option>)}
          </select>
          {fieldProblems('outputType').length > 0 && <ul className="field-problems">{fieldProblems('outputType').map((m, i) => <li key={i}>{m}</li>)}</ul>}
        </div>
      )}
      {key && (
        <ValueField
          testId={`field-${key}`}
          label={key === 'default' ? 'Default' : 'Value'}
          connector={{ ...literalConnector(node), isOptional: key === 'default' }}
          value={inputs[key]}
          present={Object.hasOwn(inputs, key)}
          onChange={(v) => onSetInput(key, v, `input:${node.id}:${key}`)}
          onReset={() => onSetInput(key, undefined)}
          problems={fieldProblems(key)}
          upload={upload}
          hint={key === 'default' ? 'Without a default, callers must give this input.' : undefined}
        />
      )}
      {ports.inputs.length > 0 && <h3 className="inspector-section">Inputs</h3>}
      {portFields}
      {extra.map((k) => (
        <div key={k} className="field port-field invalid">
          <span className="label">{k}</span>
          <code className="small">{JSON.stringify(inputs[k])}</code>
          {fieldProblems(k).length > 0 && <ul className="field-problems">{fieldProblems(k).map((m, i) => <li key={i}>{m}</li>)}</ul>}
          <button type="button" className="button small" onClick={() => onSetInput(k, undefined)}>Remove</button>
        </div>
      ))}
      {ports.outputs.length > 0 && (
        <>
          <h3 className="inspector-section">Outputs</h3>
          <ul className="output-list">
            {ports.outputs.map((p) => <li key={p.name}><span className="mono">{p.name}</span> <span className="muted small">{p.anyType ? 'any type' : p.connector.isArray ? `list of ${p.connector.id}` : p.connector.id}</span></li>)}
          </ul>
        </>
      )}
      <div className="inspector-actions">
        <button type="button" className="button danger small" onClick={onDelete}>Delete node</button>
      </div>
    </section>
  );
}

/** A keyboard way to connect: the outputs of other nodes that this input accepts. */
function ConnectFrom({ graph, catalog, node, port, onConnect, compact }: { graph: Graph; catalog: Catalog; node: GraphNode; port: string; onConnect: InspectorProps['onConnect']; compact?: boolean }) {
  const options: { value: string; label: string }[] = [];
  for (const other of graph.definition.nodes) {
    if (other.id === node.id) continue;
    for (const out of outputPortsWithReferences(graph, other, catalog)) {
      if (connectionProblem(graph, catalog, { source: other.id, sourcePort: out.name, target: node.id, targetPort: port }) === null) {
        options.push({ value: `${other.id}\u0000${out.name}`, label: `${other.id}.${out.name}${out.anyType ? '' : ` (${out.connector.id})`}` });
      }
    }
  }
  const id = useId();
  if (options.length === 0) return compact ? null : <p className="muted small">No node has a compatible output yet.</p>;
  return (
    <div className={`connect-from${compact ? ' compact' : ''}`}>
      <label htmlFor={id} className={compact ? 'visually-hidden' : undefined}>Connect {port} from</label>
      <select
        id={id}
        value=""
        onChange={(e) => {
          const [source, sourcePort] = e.target.value.split('\u0000');
          if (source && sourcePort) onConnect(source, sourcePort, port);
        }}
      >
        <option value="">{compact ? 'or connect from…' : 'Connect from…'}</option>
        {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
      </select>
    </div>
  );
}

function MountVersionField({ uses, problems, onCommit }: { uses: string; problems: string[]; onCommit(selector: string): void }) {
  const current = uses.includes('@') ? uses.slice(uses.indexOf('@') + 1) : '';
  const [text, setText] = useState(current);
  const id = useId();
  const commit = () => {
    if (text.trim() !== current) onCommit(text);
  };
  return (
    <div className={`field${problems.length > 0 ? ' invalid' : ''}`}>
      <label htmlFor={id}>Version</label>
      <input
        id={id}
        className="mono"
        type="text"
        value={text}
        placeholder="latest"
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => e.key === 'Enter' && commit()}
        aria-describedby={`${id}-hint`}
      />
      <span className="hint" id={`${id}-hint`}>A major (1) follows its newest 1.x; a full version (1.2.0) pins it.</span>
      {problems.length > 0 && <ul className="field-problems">{problems.map((m, i) => <li key={i}>{m}</li>)}</ul>}
    </div>
  );
}

function IdField({ graph, id, problems, onRename }: { graph: Graph; id: string; problems: string[]; onRename(to: string): void }) {
  const [text, setText] = useState(id);
  useEffect(() => setText(id), [id]);
  const problem = renameProblem(graph, id, text);
  const inputId = useId();
  const commit = () => {
    if (text !== id && problem === null) onRename(text);
    else setText(id);
  };
  const messages = [...(problem && text !== id ? [problem] : []), ...problems];
  return (
    <div className={`field${messages.length > 0 ? ' invalid' : ''}`}>
      <label htmlFor={inputId}>Id <span className="hint">(references use it; renaming updates them)</span></label>
      <input
        id={inputId}
        className="mono"
        type="text"
        value={text}
        aria-invalid={messages.length > 0 || undefined}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit();
          if (e.key === 'Escape') setText(id);
        }}
      />
      {messages.length > 0 && <ul className="field-problems">{messages.map((m, i) => <li key={i}>{m}</li>)}</ul>}
    </div>
  );
}
