import { useEffect, useRef, type ReactNode } from 'react';
import { useSession } from '../lib/session';
import { scopeMeaning, spendsCredit, type OrgOption } from './approval';

/**
 * The frame of the approval pages (device login, MCP consent): the studio's brand, who is signed
 * in and for which organization with a way out ("Not you?"), one card with the page's heading,
 * and the warning under it. The heading takes focus when it changes, so a screen reader hears
 * each step (code, confirmation, result).
 */
export function ApprovalFrame({ title, tone, footer, children }: { title: string; tone?: 'ok' | 'danger'; footer?: string; children: ReactNode }) {
  const state = useSession((s) => s.state);
  const signOut = useSession((s) => s.signOut);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
  }, [title]);
  const session = state.status === 'signed-in' ? state.session : null;
  return (
    <div className="approval-screen">
      <header className="approval-top">
        <span className="brand">
          <span className="brand-mark" aria-hidden>
            ◆
          </span>{' '}
          Studio
        </span>
        {session && (
          <span className="approval-who">
            <span className="muted">
              {session.user.email} · {session.organization.name}
            </span>
            <button type="button" className="button subtle small" onClick={() => void signOut()}>
              Not you? Sign out
            </button>
          </span>
        )}
      </header>
      <main className={`approval-card${tone ? ` ${tone}` : ''}`}>
        <h1 ref={heading} tabIndex={-1}>
          {tone === 'ok' && (
            <span className="approval-icon ok" aria-hidden>
              ✓
            </span>
          )}
          {tone === 'danger' && (
            <span className="approval-icon danger" aria-hidden>
              ✕
            </span>
          )}
          {title}
        </h1>
        {children}
      </main>
      <p className="approval-footer muted small">{footer ?? 'Never approve a code you did not request yourself.'}</p>
    </div>
  );
}

/** A refusal in the server's words, announced. */
export function Refusal({ heading, message }: { heading?: string; message: string }) {
  return (
    <div className="approval-refusal" role="alert">
      {heading && <strong>{heading}. </strong>}
      {message}
    </div>
  );
}

/** The "Access" row of an approval: each scope asked for, and what it allows. */
export function ScopeFacts({ scopes }: { scopes: readonly string[] }) {
  return (
    <>
      <dt>Access</dt>
      <dd>
        <ul className="approval-scopes">
          {scopes.map((scope) => (
            <li key={scope}>
              <span className="badge info">{scope}</span> {scopeMeaning(scope)}
            </li>
          ))}
        </ul>
      </dd>
    </>
  );
}

/** The warning of a grant that includes `run`: `who` (this client, this terminal) may spend credit unasked. */
export function CreditWarning({ scopes, who }: { scopes: readonly string[]; who: string }) {
  if (!spendsCredit(scopes)) return null;
  return (
    <p className="approval-warning" role="note">
      With <strong>run</strong>, {who} can start runs that spend the organization&apos;s credit without asking you again.
    </p>
  );
}

/**
 * The "Organization" row: a select when the person belongs to several, else the one. `name` makes
 * it a form field (the consent page posts a real form; the one organization then goes hidden).
 */
export function OrganizationFact({ id, options, value, onChange, disabled, name }: { id: string; options: readonly OrgOption[]; value: string; onChange(slug: string): void; disabled?: boolean; name?: string }) {
  const several = options.length > 1;
  return (
    <>
      <dt>{several ? <label htmlFor={id}>Organization</label> : 'Organization'}</dt>
      <dd>
        {several ? (
          <select id={id} name={name} value={value} onChange={(e) => onChange(e.target.value)} disabled={disabled}>
            {options.map((o) => (
              <option key={o.slug} value={o.slug}>
                {o.name} ({o.slug})
              </option>
            ))}
          </select>
        ) : (
          <>
            {options[0]?.name} <span className="muted">({options[0]?.slug})</span>
            {name && <input type="hidden" name={name} value={value} />}
          </>
        )}
      </dd>
    </>
  );
}
