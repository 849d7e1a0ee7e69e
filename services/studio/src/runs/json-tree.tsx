import { useState } from 'react';

/** A collapsible, keyboard-usable tree of a JSON value (objects and arrays fold; leaves are typed). */
export function JsonTree({ value, label = 'value', defaultDepth = 2 }: { value: unknown; label?: string; defaultDepth?: number }) {
  return (
    <ul className="json-tree" role="tree" aria-label={label}>
      <JsonNode name={null} value={value} depth={0} defaultDepth={defaultDepth} />
    </ul>
  );
}

function leafClass(value: unknown): string {
  if (value === null) return 'json-null';
  return `json-${typeof value}`;
}

function JsonNode({ name, value, depth, defaultDepth }: { name: string | null; value: unknown; depth: number; defaultDepth: number }) {
  const branch = value !== null && typeof value === 'object';
  const [open, setOpen] = useState(depth < defaultDepth);
  const key = name === null ? null : <span className="json-key">{name}: </span>;
  if (!branch) {
    return (
      <li role="treeitem" aria-selected={false} className="json-leaf">
        {key}
        <span className={leafClass(value)}>{JSON.stringify(value)}</span>
      </li>
    );
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value as Record<string, unknown>);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  return (
    <li role="treeitem" aria-expanded={open} aria-selected={false}>
      <button type="button" className="json-toggle" onClick={() => setOpen(!open)} aria-label={`${open ? 'Collapse' : 'Expand'} ${name ?? 'value'}`}>
        <span aria-hidden="true" className="json-caret">{open ? '▾' : '▸'}</span>
      </button>
      {key}
      <span className="json-summary">{summary}</span>
      {open && entries.length > 0 && (
        <ul role="group">
          {entries.map(([k, v]) => (
            <JsonNode key={k} name={k} value={v} depth={depth + 1} defaultDepth={defaultDepth} />
          ))}
        </ul>
      )}
    </li>
  );
}
