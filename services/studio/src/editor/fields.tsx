import { useEffect, useId, useRef, useState } from 'react';
import type { Connector } from '../../../contract';
import { artifactKindOf } from '../../../engine/connector-values';
import { errorText } from '../lib/api';
import { literalProblem } from './model';

/** Names of text ports that get a multi-line box. */
const LONG_TEXT = /prompt|template|text|system|instructions|content|body|message|query/i;

export interface ValueFieldProps {
  label: string;
  /** The port's connector: which widget, and what the literal must be. */
  connector: Connector;
  value: unknown;
  /** Whether the node holds a value for this port at all (else the default applies). */
  present: boolean;
  onChange(value: unknown): void;
  /** Removes the value, so the default (or nothing) applies. */
  onReset?: () => void;
  /** The server's problems for this field. */
  problems?: readonly string[];
  /** Uploads a file and answers its artifact (file connectors). */
  upload?: (file: File) => Promise<unknown>;
  hint?: string;
  testId?: string;
}

const isFile = (c: Connector) => !c.isArray && artifactKindOf(c.id) !== null && ['IMAGE', 'AUDIO', 'VIDEO', 'FILE'].includes(c.id);

function placeholderOf(c: Connector): string | undefined {
  if (c.defaultValue === undefined) return c.isOptional ? 'optional' : undefined;
  return typeof c.defaultValue === 'string' ? c.defaultValue : JSON.stringify(c.defaultValue);
}

/** One literal input, its widget chosen by the connector; the engine's literal check runs as you type. */
export function ValueField(props: ValueFieldProps) {
  const { label, connector, value, present, onReset, problems = [], hint, testId } = props;
  const id = useId();
  const live = present ? literalProblem(connector, value) : null;
  const messages = [...(live ? [`${label} ${live}`] : []), ...problems];
  const describedBy = messages.length > 0 ? `${id}-problems` : undefined;
  return (
    <div className={`field port-field${messages.length > 0 ? ' invalid' : ''}`} data-testid={testId}>
      <div className="port-field-head">
        <label htmlFor={id}>{label}</label>
        <span className="port-field-type">{connector.isArray ? `list of ${connector.id}` : connector.id}{connector.isOptional ? ' · optional' : ''}{connector.maxLength !== undefined ? ` · at most ${connector.maxLength} characters` : ''}</span>
        {present && onReset && (
          <button type="button" className="button subtle small" onClick={onReset} title={connector.defaultValue !== undefined ? 'Reset to the default' : 'Clear the value'}>
            {connector.defaultValue !== undefined ? 'Reset' : 'Clear'}
          </button>
        )}
      </div>
      <Widget {...props} id={id} describedBy={describedBy} />
      {hint && <span className="hint">{hint}</span>}
      {messages.length > 0 && (
        <ul className="field-problems" id={describedBy}>
          {messages.map((m, i) => <li key={i}>{m}</li>)}
        </ul>
      )}
    </div>
  );
}

function Widget({ connector, value, present, onChange, upload, id, describedBy, label }: ValueFieldProps & { id: string; describedBy?: string }) {
  const common = { id, 'aria-describedby': describedBy, 'aria-invalid': describedBy ? true : undefined };
  const c = connector;
  if (c.optionValues && c.optionValues.length > 0 && !c.isArray) {
    const index = present ? c.optionValues.findIndex((o) => JSON.stringify(o) === JSON.stringify(value)) : -1;
    return (
      <select {...common} value={index < 0 ? '' : String(index)} onChange={(e) => (e.target.value === '' ? onChange(undefined) : onChange(c.optionValues![Number(e.target.value)]))}>
        <option value="">{c.defaultValue !== undefined ? `Default (${String(c.defaultValue)})` : '— choose —'}</option>
        {c.optionValues.map((o, i) => <option key={i} value={String(i)}>{typeof o === 'string' ? o : JSON.stringify(o)}</option>)}
      </select>
    );
  }
  if (c.id === 'BOOLEAN' && !c.isArray) {
    const on = present ? value === true : c.defaultValue === true;
    return (
      <label className="switch">
        <input {...common} type="checkbox" role="switch" checked={on} onChange={(e) => onChange(e.target.checked)} />
        <span>{on ? 'On' : 'Off'}{!present && c.defaultValue !== undefined ? ' (default)' : ''}</span>
      </label>
    );
  }
  if ((c.id === 'INT' || c.id === 'FLOAT') && !c.isArray) {
    return <NumberInput {...common} connector={c} value={present ? value : undefined} onChange={onChange} />;
  }
  if (c.id === 'TEXT' && !c.isArray) {
    const text = present ? (typeof value === 'string' ? value : JSON.stringify(value)) : '';
    const long = LONG_TEXT.test(label) || text.length > 60 || text.includes('\n');
    return long ? (
      <textarea {...common} rows={4} value={text} placeholder={placeholderOf(c)} onChange={(e) => onChange(e.target.value)} />
    ) : (
      <input {...common} type="text" value={text} placeholder={placeholderOf(c)} onChange={(e) => onChange(e.target.value)} />
    );
  }
  if (isFile(c)) return <FileInput {...common} connector={c} value={present ? value : undefined} onChange={onChange} upload={upload} />;
  return <JsonInput {...common} value={value} present={present} placeholder={placeholderOf(c)} onChange={onChange} />;
}

type Common = { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean };

function NumberInput({ connector, value, onChange, ...common }: Common & { connector: Connector; value: unknown; onChange(v: unknown): void }) {
  const [text, setText] = useState(value === undefined ? '' : String(value));
  const last = useRef(value);
  useEffect(() => {
    if (value !== last.current) setText(value === undefined ? '' : String(value));
    last.current = value;
  }, [value]);
  return (
    <input
      {...common}
      type="number"
      inputMode={connector.id === 'INT' ? 'numeric' : 'decimal'}
      step={connector.id === 'INT' ? 1 : 'any'}
      min={connector.minValue}
      max={connector.maxValue}
      placeholder={placeholderOf(connector)}
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        const v = e.target.value.trim() === '' ? undefined : Number(e.target.value);
        last.current = v;
        if (v === undefined || Number.isFinite(v)) onChange(v);
      }}
    />
  );
}

function JsonInput({ value, present, placeholder, onChange, ...common }: Common & { value: unknown; present: boolean; placeholder?: string; onChange(v: unknown): void }) {
  const shown = present ? JSON.stringify(value, null, 2) : '';
  const [text, setText] = useState(shown);
  const [error, setError] = useState<string | null>(null);
  const last = useRef(shown);
  useEffect(() => {
    if (shown !== last.current) {
      setText(shown);
      setError(null);
    }
    last.current = shown;
  }, [shown]);
  return (
    <>
      <textarea
        {...common}
        className="mono"
        rows={4}
        spellCheck={false}
        value={text}
        placeholder={placeholder ? `JSON, default ${placeholder}` : 'JSON'}
        onChange={(e) => {
          setText(e.target.value);
          if (e.target.value.trim() === '') {
            setError(null);
            last.current = '';
            onChange(undefined);
            return;
          }
          try {
            const parsed: unknown = JSON.parse(e.target.value);
            setError(null);
            last.current = JSON.stringify(parsed, null, 2);
            onChange(parsed);
          } catch (err) {
            setError(`Not valid JSON yet: ${errorText(err)}`);
          }
        }}
      />
      {error && <span className="error-text small" role="status">{error}</span>}
    </>
  );
}

function FileInput({ connector, value, onChange, upload, ...common }: Common & { connector: Connector; value: unknown; onChange(v: unknown): void; upload?: (file: File) => Promise<unknown> }) {
  const kind = artifactKindOf(connector.id)!;
  const ref = value && typeof value === 'object' && typeof (value as { ref?: unknown }).ref === 'string' ? (value as { ref: string }).ref : '';
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const accept = kind === 'file' ? undefined : `${kind}/*`;
  return (
    <div className="file-field">
      <input
        {...common}
        type="url"
        placeholder="https://… or upload a file"
        value={ref}
        onChange={(e) => onChange(e.target.value === '' ? undefined : { kind, ref: e.target.value })}
      />
      {upload && (
        <label className="button small">
          {busy ? 'Uploading…' : 'Upload…'}
          <input
            type="file"
            className="visually-hidden"
            accept={accept}
            disabled={busy}
            onChange={(e) => {
              const file = e.target.files?.[0];
              e.target.value = '';
              if (!file) return;
              setBusy(true);
              setError(null);
              upload(file).then(
                (artifact) => onChange(artifact),
                (err: unknown) => setError(errorText(err)),
              ).finally(() => setBusy(false));
            }}
          />
        </label>
      )}
      {error && <span className="error-text small" role="alert">{error}</span>}
      {kind === 'image' && ref.startsWith('http') && <img className="file-preview" src={ref} alt="" loading="lazy" />}
    </div>
  );
}
