import type { SaveState } from './draft-saving';
import { CONNECTOR_IDS } from './model';
import { connectorClass } from './node-card';
import type { NodeProblem } from './problems';

/** Whether the draft is saved on the server; a failed save is a button that tries again. */
export function SaveIndicator({ save, onRetry }: { save: SaveState; onRetry(): void }) {
  if (save.kind === 'error') {
    return (
      <button type="button" className="save-state error" onClick={onRetry} title="Save again" data-testid="save-state">
        Not saved · Retry
      </button>
    );
  }
  const text = save.kind === 'saved' ? 'Saved' : save.kind === 'saving' ? 'Saving…' : 'Unsaved changes';
  return <span className={`save-state ${save.kind}`} role="status" data-testid="save-state">{text}</span>;
}

/** The draft's problems, each a button that selects its node. */
export function ProblemsList({ problems, onSelect }: { problems: readonly NodeProblem[]; onSelect(id: string): void }) {
  return (
    <section className="problems-panel" aria-labelledby="problems-title">
      <h2 id="problems-title">
        Problems <span className={`badge ${problems.length > 0 ? 'failed' : 'completed'}`}>{problems.length}</span>
      </h2>
      {problems.length === 0 ? (
        <p className="muted small">None: the draft can be published.</p>
      ) : (
        <ul>
          {problems.map((p, i) => (
            <li key={i}>
              {p.nodeId ? (
                <button type="button" className="problem-item" onClick={() => onSelect(p.nodeId!)}>
                  <span className="mono">{p.nodeId}{p.field ? `.${p.field}` : ''}</span>
                  <span>{p.message}</span>
                </button>
              ) : (
                <div className="problem-item"><span>{p.message}</span></div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** What the port colours and marks mean. */
export function Legend() {
  return (
    <details className="legend">
      <summary>Port types</summary>
      <ul>
        {CONNECTOR_IDS.map((c) => <li key={c} className={connectorClass(c)}><span className="swatch" />{c}</li>)}
        <li className={connectorClass('CUSTOM:x')}><span className="swatch" />CUSTOM</li>
        <li className="c-any"><span className="swatch hollow" />optional: dimmer name</li>
        <li className="c-any"><span className="swatch ring" />list: [ ] and double ring</li>
      </ul>
    </details>
  );
}

/** Why an imported file is not a workflow; nothing was changed. */
export function ImportErrorsDialog({ errors, onClose }: { errors: readonly string[]; onClose(): void }) {
  return (
    <div className="dialog-backdrop" onClick={onClose}>
      <div className="dialog" role="dialog" aria-modal="true" aria-labelledby="import-title" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === 'Escape' && onClose()}>
        <h2 id="import-title">This file is not a workflow</h2>
        <p className="muted">Nothing was changed. What is wrong:</p>
        <ul className="import-errors">{errors.map((m, i) => <li key={i}>{m}</li>)}</ul>
        <div className="actions">
          <button type="button" className="button primary" autoFocus onClick={onClose}>Close</button>
        </div>
      </div>
    </div>
  );
}

/** The side panel with no single node selected: how to select, or what to do with several. */
export function SelectionSummary({ count, onDelete }: { count: number; onDelete(): void }) {
  return (
    <div className="inspector inspector-empty">
      <h2>{count > 1 ? `${count} nodes selected` : 'Nothing selected'}</h2>
      <p className="muted small">
        {count > 1 ? 'Copy with Ctrl+C, paste with Ctrl+V, delete with Delete.' : 'Select a node to edit its inputs. Shift-click or Shift-drag selects several.'}
      </p>
      {count > 1 && <button type="button" className="button danger small" onClick={onDelete}>Delete {count} nodes</button>}
    </div>
  );
}
