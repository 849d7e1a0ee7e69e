import { useEffect, useId, useState } from 'react';
import { Navigate, useLocation } from 'react-router';
import type { ConsentRequestBody } from '../../../contract';
import { client, errorText, sendJson } from '../lib/api';
import { useSession } from '../lib/session';
import { orgOptions } from './approval';
import { ApprovalFrame, CreditWarning, OrganizationFact, Refusal, ScopeFacts } from './approval-frame';
import './approval.css';

/** The authorization request as `GET /oauth/mcp/authorize/request` describes it. */
export type ConsentRequest = ConsentRequestBody;

/** Where the decision is posted: the authorization endpoint itself, on this origin (not under /api). */
export const AUTHORIZE_PATH = '/oauth/mcp/authorize';

const FOOTER = 'Only allow applications you are connecting yourself.';

type Load = { status: 'loading' } | { status: 'ready'; request: ConsentRequest } | { status: 'refused'; message: string };

/** The path the current document was loaded from (not where client-side navigation has moved since). */
function documentPath(): string | null {
  const entry = typeof performance === 'undefined' ? undefined : (performance.getEntriesByType?.('navigation')[0] as PerformanceNavigationTiming | undefined);
  if (!entry) return null;
  try {
    return new URL(entry.name).pathname;
  } catch {
    return null;
  }
}

/**
 * The hosted MCP server's consent page, at the authorization endpoint (`/oauth/mcp/authorize?…`),
 * which the server answers with the studio only for a request it has checked. The page asks the
 * server to describe the request, sends a signed-out person through the studio's sign-in and back,
 * and posts the decision as a real form: the server checks the post's origin and the request again,
 * then redirects the browser to the client's redirect URI with the code (or `access_denied`).
 */
export function ConsentPage() {
  const location = useLocation();
  const state = useSession((s) => s.state);
  const refresh = useSession((s) => s.refresh);
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [org, setOrg] = useState<string | null>(null);
  const [sending, setSending] = useState<'approve' | 'deny' | null>(null);
  const orgId = useId();

  useEffect(() => {
    if (state.status === 'loading') void refresh().catch(() => undefined);
  }, [state.status, refresh]);

  // The document must come from the authorization endpoint: only its answer allows the form to end
  // at the client's redirect URI (`form-action`). Reached by a client-side move from a document loaded
  // elsewhere (a reloaded sign-in page), load it from the server.
  const loadedFrom = documentPath();
  const servedHere = loadedFrom === null || loadedFrom === AUTHORIZE_PATH;
  useEffect(() => {
    if (!servedHere) window.location.replace(`${AUTHORIZE_PATH}${location.search}`);
  }, [servedHere, location.search]);

  useEffect(() => {
    let live = true;
    sendJson<ConsentRequest>(client.transport, 'GET', `${AUTHORIZE_PATH}/request${location.search}`).then(
      (request) => {
        if (!live) return;
        setLoad({ status: 'ready', request: request! });
        document.title = `Allow ${request!.client.name}? · Studio`;
      },
      (err: unknown) => live && setLoad({ status: 'refused', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [location.search]);

  if (load.status === 'refused') {
    return (
      <ApprovalFrame title="This authorization request cannot be used" tone="danger" footer={FOOTER}>
        <Refusal message={load.message} />
        <p className="muted">Nothing was sent to the application. Start the connection again from the application.</p>
      </ApprovalFrame>
    );
  }
  if (load.status === 'loading' || state.status === 'loading') {
    return (
      <ApprovalFrame title="Connect an application" footer={FOOTER}>
        <p className="page-loading" role="status">
          Loading the request…
        </p>
      </ApprovalFrame>
    );
  }

  if (state.status === 'signed-out') {
    return <Navigate to={`/sign-in?next=${encodeURIComponent(`${location.pathname}${location.search}`)}`} replace />;
  }
  const request = load.request;
  const orgs = orgOptions(state.session);
  const chosen = org ?? orgs.selected;
  return (
    <ApprovalFrame title={`Allow ${request.client.name}?`} footer={FOOTER}>
      <p className="muted">An MCP client asks to use the service as you. Only allow an application you are setting up yourself right now.</p>
      <form
        method="post"
        action={AUTHORIZE_PATH}
        onSubmit={(e) => {
          // One decision per page: a second click while the first post is on its way does nothing.
          // (The buttons stay enabled: a disabled submitter would drop its action from the post.)
          if (sending) return e.preventDefault();
          setSending(((e.nativeEvent as SubmitEvent).submitter as HTMLButtonElement | null)?.value === 'deny' ? 'deny' : 'approve');
        }}
      >
        {Object.entries(request.fields).map(([name, value]) => (
          <input key={name} type="hidden" name={name} value={value} />
        ))}
        <dl className="approval-facts">
          <dt>Application</dt>
          <dd>
            <strong>{request.client.name}</strong> <span className="muted small mono">({request.client.id})</span>
          </dd>
          <dt>Returns to</dt>
          <dd>
            <code title={request.redirectUri}>{request.redirectHost}</code>
          </dd>
          <ScopeFacts scopes={request.scopes} />
          <OrganizationFact id={orgId} name="org" options={orgs.options} value={chosen} onChange={setOrg} />
          <dt>Lasts</dt>
          <dd>
            Access tokens for {request.accessMinutes} minutes, renewed for up to {request.refreshDays} days of inactivity. Revoke it any time under Settings, API tokens.
          </dd>
        </dl>
        <CreditWarning scopes={request.scopes} who="this client" />
        <div className="approval-actions">
          <button type="submit" name="action" value="deny" className="button" aria-busy={sending === 'deny'}>
            {sending === 'deny' ? 'Denying…' : 'Deny'}
          </button>
          <button type="submit" name="action" value="approve" className="button primary" aria-busy={sending === 'approve'}>
            {sending === 'approve' ? 'Allowing…' : 'Allow'}
          </button>
        </div>
      </form>
    </ApprovalFrame>
  );
}
