import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { TokenCreatedBody, TokenSummaryBody } from '../../../contract';
import { client, errorText } from '../lib/api';
import { formatTime } from '../lib/format';
import { DialogActions, Modal, useDialogAction } from '../publish/modal';
import { When } from '../workflows/when';
import { customDateBounds, EXPIRY_PRESETS, expiryDate, expiryDays, MAX_TOKEN_DAYS, type ExpiryChoice } from './token-expiry';
import { LoadFailed, Loading } from '../ui/load-states';
import './tokens.css';

type Load = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'ready'; tokens: TokenSummaryBody[] };
type Scope = 'read' | 'run';

const KIND_TEXT: Record<TokenSummaryBody['kind'], string> = {
  personal: 'Personal',
  session: 'CLI session',
  browser: 'Browser session',
  oauth: 'MCP client',
};

const KIND_HINT: Record<TokenSummaryBody['kind'], string> = {
  personal: 'A personal access token you created',
  session: 'Made by `svc login` (device login)',
  browser: 'A signed-in web browser',
  oauth: 'Granted to an MCP client through OAuth',
};

/** `/settings/tokens`: Settings, API tokens. */
export function TokensPage() {
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [currentId, setCurrentId] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<TokenCreatedBody | null>(null);
  const [revoking, setRevoking] = useState<TokenSummaryBody | null>(null);

  const fetchList = useCallback(async () => {
    try {
      const { tokens } = await client.routes['tokens.list']({});
      setLoad({ status: 'ready', tokens });
    } catch (err) {
      setLoad({ status: 'failed', message: errorText(err) });
    }
  }, []);

  useEffect(() => {
    document.title = 'API tokens · Studio';
    void fetchList();
    // Which token is this browser's own session (not revocable from here).
    client.routes['me.get']({}).then(
      (me) => setCurrentId(me.token.id),
      () => setCurrentId(null),
    );
  }, [fetchList]);

  const tokens = load.status === 'ready' ? load.tokens : [];
  const personal = tokens.filter((t) => t.kind === 'personal');
  const sessions = tokens.filter((t) => t.kind !== 'personal');

  return (
    <main className="page tokens-page">
      <div className="page-header">
        <h1>API tokens</h1>
        <button type="button" className="button primary" onClick={() => setCreating(true)}>
          <span aria-hidden>+</span> New token
        </button>
      </div>
      <p className="muted tokens-intro">
        Tokens let scripts, CI and the <code>svc</code> CLI call the API as you, in this organization. Send one as <code>Authorization: Bearer svc_…</code>. The
        list also shows your signed-in browsers, CLI sessions and MCP clients; revoke any you don’t recognise.
      </p>

      {load.status === 'loading' && <Loading>Loading tokens…</Loading>}
      {load.status === 'failed' && <LoadFailed what="your tokens" message={load.message} onRetry={() => void fetchList()} />}
      {load.status === 'ready' && tokens.length === 0 && (
        <div className="empty">
          <p>No tokens yet. Create one to call the API from a script or CI.</p>
          <button type="button" className="button primary" onClick={() => setCreating(true)}>
            Create a token
          </button>
        </div>
      )}
      {tokens.length > 0 && (
        <>
          <section className="tokens-section" aria-labelledby="personal-tokens">
            <h2 id="personal-tokens">Personal access tokens</h2>
            {personal.length > 0 ? (
              <TokenTable tokens={personal} currentId={currentId} onRevoke={setRevoking} />
            ) : (
              <p className="muted">None yet. Create one to call the API from a script or CI.</p>
            )}
          </section>
          {sessions.length > 0 && (
            <section className="tokens-section" aria-labelledby="session-tokens">
              <h2 id="session-tokens">Sessions and connected apps</h2>
              <p className="muted small">Signed-in browsers, <code>svc login</code> sessions and MCP clients. Revoking one signs it out.</p>
              <TokenTable tokens={sessions} currentId={currentId} onRevoke={setRevoking} />
            </section>
          )}
        </>
      )}

      {creating && (
        <CreateTokenDialog
          onClose={() => setCreating(false)}
          onCreated={(token) => {
            setCreating(false);
            setCreated(token);
            void fetchList();
          }}
        />
      )}
      {created && <TokenCreatedDialog token={created} onClose={() => setCreated(null)} />}
      {revoking && (
        <RevokeDialog
          token={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={() => {
            setRevoking(null);
            setLoad((l) => (l.status === 'ready' ? { status: 'ready', tokens: l.tokens.filter((t) => t.id !== revoking.id) } : l));
            void fetchList();
          }}
        />
      )}
    </main>
  );
}

function TokenTable({ tokens, currentId, onRevoke }: { tokens: TokenSummaryBody[]; currentId: string | null; onRevoke(token: TokenSummaryBody): void }) {
  return (
        <div className="tokens-table-wrap">
          <table className="table tokens-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" className="hide-narrow">Kind</th>
                <th scope="col" className="hide-narrow">Prefix</th>
                <th scope="col" className="hide-narrow">Scopes</th>
                <th scope="col" className="hide-narrow">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => {
                const current = t.id === currentId;
                return (
                  <tr key={t.id} className={current ? 'current' : undefined}>
                    <td>
                      <span className="token-name">{t.name}</span>
                      {current && <span className="badge info token-current">this session</span>}
                    </td>
                    <td title={KIND_HINT[t.kind]} className="hide-narrow">
                      {KIND_TEXT[t.kind]}
                    </td>
                    <td className="hide-narrow">
                      <code>{t.prefix}…</code>
                    </td>
                    <td className="hide-narrow">
                      {t.scopes.map((s) => (
                        <span key={s} className="badge token-scope">
                          {s}
                        </span>
                      ))}
                    </td>
                    <td className="hide-narrow">
                      <When iso={t.createdAt} />
                    </td>
                    <td>
                      <When iso={t.lastUsedAt} empty="never" />
                    </td>
                    <td>
                      <Expires iso={t.expiresAt} />
                    </td>
                    <td className="token-actions">
                      {current ? (
                        <span className="muted small" title="Sign out to end this session">
                          in use
                        </span>
                      ) : (
                        <button type="button" className="button small danger" onClick={() => onRevoke(t)} aria-label={`Revoke ${t.name}`}>
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
  );
}

function Expires({ iso }: { iso: string | null }) {
  if (!iso) return <span className="muted">never</span>;
  const soon = new Date(iso).getTime() - Date.now() < 7 * 24 * 3600_000;
  return (
    <time dateTime={iso} title={formatTime(iso)} className={soon ? 'token-expiring' : undefined}>
      {new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' })}
    </time>
  );
}

/** Name, scopes and lifetime of a new personal access token. */
export function CreateTokenDialog({ onClose, onCreated, now = () => new Date() }: { onClose(): void; onCreated(token: TokenCreatedBody): void; now?: () => Date }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Record<Scope, boolean>>({ read: true, run: false });
  const [choice, setChoice] = useState<ExpiryChoice>('90');
  const [custom, setCustom] = useState('');
  const { busy, problem, run } = useDialogAction();
  const [tried, setTried] = useState(false);
  const ids = { expiry: useId(), custom: useId() };
  const today = now();
  const bounds = customDateBounds(today);
  const expiry = expiryDays(choice, custom, today);
  const chosen = (Object.keys(scopes) as Scope[]).filter((s) => scopes[s]);
  const nameProblem = name.trim() ? null : 'Give the token a name that says what it is for.';
  const scopeProblem = chosen.length ? null : 'Choose at least one scope.';
  const expiryProblem = expiry.ok ? null : expiry.message;
  const willExpire = expiry.ok ? expiryDate(expiry.expiresInDays, today) : null;

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setTried(true);
    if (nameProblem || scopeProblem || !expiry.ok) return;
    const { expiresInDays } = expiry;
    await run(async () => {
      const token = await client.routes['tokens.create']({
        name: name.trim(),
        scopes: chosen,
        ...(expiresInDays === undefined ? {} : { expiresInDays }),
      });
      onCreated(token);
    });
  };

  return (
    <Modal title="New API token" onClose={onClose} dismiss={busy ? null : onClose}>
      <form className="stack" onSubmit={(e) => void onSubmit(e)} noValidate>
        <label className="field">
          <span>Name</span>
          <input type="text" value={name} maxLength={100} autoFocus onChange={(e) => setName(e.target.value)} placeholder="e.g. CI deploys" aria-invalid={tried && nameProblem ? true : undefined} />
          {tried && nameProblem && <span className="error-text small">{nameProblem}</span>}
        </label>
        <fieldset className="token-fieldset">
          <legend>Scopes</legend>
          <label className="token-check">
            <input type="checkbox" checked={scopes.read} onChange={(e) => setScopes({ ...scopes, read: e.target.checked })} />
            <span>
              <strong>read</strong> <span className="muted">the node catalog and published workflows</span>
            </span>
          </label>
          <label className="token-check">
            <input type="checkbox" checked={scopes.run} onChange={(e) => setScopes({ ...scopes, run: e.target.checked })} />
            <span>
              <strong>run</strong> <span className="muted">start runs (spends the organization’s balance) and read run history</span>
            </span>
          </label>
          {tried && scopeProblem && <span className="error-text small">{scopeProblem}</span>}
        </fieldset>
        <div className="field">
          <label htmlFor={ids.expiry}>
            <span className="token-label">Expires</span>
          </label>
          <div className="row">
            <select id={ids.expiry} value={choice} onChange={(e) => setChoice(e.target.value as ExpiryChoice)} className="token-expiry-select">
              {EXPIRY_PRESETS.map((p) => (
                <option key={p.value} value={p.value}>
                  {p.label}
                </option>
              ))}
            </select>
            {choice === 'custom' && (
              <label className="token-custom-date">
                <span className="visually-hidden">Expiry date</span>
                <input id={ids.custom} type="date" min={bounds.min} max={bounds.max} value={custom} onChange={(e) => setCustom(e.target.value)} aria-invalid={expiryProblem && custom ? true : undefined} />
              </label>
            )}
          </div>
          <span className="hint" aria-live="polite">
            {expiryProblem && (choice !== 'custom' || custom || tried) ? (
              <span className="error-text">{expiryProblem}</span>
            ) : willExpire ? (
              `Expires on ${willExpire.toLocaleDateString(undefined, { dateStyle: 'long' })}. At most ${MAX_TOKEN_DAYS} days.`
            ) : choice === 'none' ? (
              'Never expires: revoke it when it is no longer needed.'
            ) : (
              `Pick a date up to ${MAX_TOKEN_DAYS} days ahead.`
            )}
          </span>
        </div>
        <DialogActions problem={problem} busy={busy} onCancel={onClose} label="Create token" busyLabel="Creating…" />
      </form>
    </Modal>
  );
}

/** The new token's value, shown this once, with a copy button. */
export function TokenCreatedDialog({ token, onClose }: { token: TokenCreatedBody; onClose(): void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'select'>('no');
  const field = useRef<HTMLTextAreaElement>(null);
  const select = () => {
    field.current?.focus();
    field.current?.select();
  };
  const onCopy = async () => {
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(token.token);
      setCopied('yes');
    } catch {
      // No clipboard access (an insecure origin, a denied permission): select it for Ctrl+C.
      select();
      setCopied('select');
    }
  };
  return (
    // Only the explicit button closes it: a stray click or Esc must not lose the one showing.
    <Modal title={`Token “${token.name}” created`} onClose={onClose} dismiss={null} alert>
      <div className="stack token-created">
        <p className="token-warning" role="note">
          Copy it now: this is the only time the full token is shown. Store it somewhere safe, such as your CI’s secret store.
        </p>
        <label className="field">
          <span>Token</span>
          <div className="token-value-row">
            <textarea ref={field} readOnly value={token.token} rows={1} className="mono token-value" onFocus={(e) => e.currentTarget.select()} spellCheck={false} />
            <button type="button" className="button primary" onClick={() => void onCopy()} data-autofocus>
              {copied === 'yes' ? 'Copied ✓' : 'Copy'}
            </button>
          </div>
        </label>
        <p className="small muted token-copy-status" aria-live="polite">
          {copied === 'select' ? 'Your browser blocked the clipboard: the token is selected, press Ctrl+C (⌘C) to copy it.' : copied === 'yes' ? 'Copied to the clipboard.' : ''}
        </p>
        <p className="small muted">
          Scopes {token.scopes.join(', ')} · {token.expiresAt ? `expires ${formatTime(token.expiresAt)}` : 'never expires'}. Try it:{' '}
          <code>curl -H "Authorization: Bearer $TOKEN" {location.origin}/api/v1/me</code>
        </p>
      </div>
      <div className="actions">
        <button type="button" className="button" onClick={onClose}>
          I’ve saved it
        </button>
      </div>
    </Modal>
  );
}

function RevokeDialog({ token, onClose, onRevoked }: { token: TokenSummaryBody; onClose(): void; onRevoked(): void }) {
  const { busy, problem, run } = useDialogAction();
  const onConfirm = () =>
    run(async () => {
      await client.routes['tokens.revoke']({ id: token.id });
      onRevoked();
    });
  return (
    <Modal title={`Revoke “${token.name}”?`} onClose={onClose} dismiss={busy ? null : onClose} alert>
      <p>
        Anything using <code>{token.prefix}…</code> ({KIND_TEXT[token.kind].toLowerCase()}) is refused from its next request. This can’t be undone.
      </p>
      <DialogActions problem={problem} busy={busy} onCancel={onClose} label="Revoke" busyLabel="Revoking…" tone="danger" onConfirm={() => void onConfirm()} focus="cancel" />
    </Modal>
  );
}
