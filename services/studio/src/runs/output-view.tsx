import { useEffect, useMemo, useState } from 'react';
import type { Artifact } from '../../../contract';
import { JsonTree } from './json-tree';
import './runs.css';

const EXTENSIONS: Record<string, string> = { image: 'png', audio: 'wav', video: 'mp4', text: 'txt', structured: 'json', embedding: 'json' };

/** The file name a download of this output gets. */
export function downloadName(name: string, artifact: Artifact): string {
  const fromMime = artifact.mimeType?.split('/')[1]?.split(/[;+]/)[0];
  const ext = artifact.value !== undefined ? (artifact.kind === 'text' ? 'txt' : 'json') : fromMime || EXTENSIONS[artifact.kind] || 'bin';
  return `${name.replace(/[^\w.-]+/g, '_') || 'output'}.${ext === 'jpeg' ? 'jpg' : ext === 'mpeg' ? 'mp3' : ext}`;
}

/** The text an inline value downloads as. */
export function inlineText(artifact: Artifact): string {
  if (artifact.kind === 'text' && typeof artifact.value === 'string') return artifact.value;
  return JSON.stringify(artifact.value, null, 2);
}

function useBlobUrl(artifact: Artifact): string | null {
  const text = artifact.ref === undefined ? inlineText(artifact) : null;
  const type = artifact.kind === 'text' ? 'text/plain;charset=utf-8' : 'application/json';
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    if (text === null || typeof URL.createObjectURL !== 'function') return;
    const created = URL.createObjectURL(new Blob([text], { type }));
    setUrl(created);
    return () => URL.revokeObjectURL(created);
  }, [text, type]);
  return url;
}

function CopyButton({ text }: { text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="button small"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        });
      }}
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

/** One output of a run shown as what it is, with a way to download it. */
export function OutputView({ name, artifact }: { name: string; artifact: Artifact }) {
  const blobUrl = useBlobUrl(artifact);
  const href = artifact.ref ?? blobUrl;
  const file = downloadName(name, artifact);
  const text = useMemo(() => (artifact.ref === undefined ? inlineText(artifact) : ''), [artifact]);
  const meta = artifact.metadata ? Object.entries(artifact.metadata).filter(([, v]) => typeof v !== 'object').map(([k, v]) => `${k} ${String(v)}`).join(' · ') : '';
  return (
    <section className="output" aria-label={`Output ${name}`}>
      <header className="output-head">
        <h4 className="output-name">{name}</h4>
        <span className="badge">{artifact.kind}</span>
        {meta ? <span className="muted small output-meta" title={meta}>{meta}</span> : <span className="spacer" />}
        {artifact.ref === undefined && (artifact.kind === 'text' || artifact.kind === 'structured' || artifact.kind === 'embedding') && <CopyButton text={text} />}
        {href && (
          <a className="button small" href={href} download={file} target={artifact.ref ? '_blank' : undefined} rel="noreferrer" aria-label={`Download ${name}`}>
            Download
          </a>
        )}
      </header>
      <div className="output-body">
        <OutputBody name={name} artifact={artifact} text={text} />
      </div>
    </section>
  );
}

function OutputBody({ name, artifact, text }: { name: string; artifact: Artifact; text: string }) {
  if (artifact.ref !== undefined) {
    switch (artifact.kind) {
      case 'image':
        return <img className="output-media" src={artifact.ref} alt={`Output ${name}`} />;
      case 'audio':
        return <audio className="output-audio" controls preload="metadata" src={artifact.ref} aria-label={`Output ${name}`} />;
      case 'video':
        return <video className="output-media" controls preload="metadata" src={artifact.ref} aria-label={`Output ${name}`} />;
      default:
        return (
          <a href={artifact.ref} target="_blank" rel="noreferrer" className="mono output-link">
            {artifact.ref.length > 90 ? `${artifact.ref.slice(0, 90)}…` : artifact.ref}
          </a>
        );
    }
  }
  const value = artifact.value;
  if (artifact.kind === 'text' && typeof value === 'string') return <pre className="output-text">{value}</pre>;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return <p className="output-scalar mono">{String(value)}</p>;
  }
  if (typeof value === 'string') return <pre className="output-text">{text}</pre>;
  return <JsonTree value={value} label={`Output ${name}`} />;
}

/** All outputs of a run, in the order the run gave them. */
export function OutputsList({ outputs }: { outputs: Readonly<Record<string, Artifact>> }) {
  const entries = Object.entries(outputs);
  if (entries.length === 0) return <p className="muted">The run gave no outputs.</p>;
  return (
    <div className="outputs">
      {entries.map(([name, artifact]) => (
        <OutputView key={name} name={name} artifact={artifact} />
      ))}
    </div>
  );
}
