import { useEffect, useId, useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { client, errorText } from '../lib/api';
import { formatTime } from '../lib/format';
import { useSession } from '../lib/session';
import { expiresIn, normalizeUserCode, orgOptions, refusalHeading, statusOf } from './approval';
import { ApprovalFrame, CreditWarning, OrganizationFact, Refusal, ScopeFacts } from './approval-frame';
import './approval.css';

/** A pending login request as `device.lookup` answers it. */
export interface DeviceRequest {
  user_code: string;
  client_id: string;
  scopes: string[];
  expires_at: string;
}

type Step =
  | { kind: 'enter' }
  | { kind: 'looking'; code: string }
  | { kind: 'confirm'; request: DeviceRequest }
  | { kind: 'deciding'; request: DeviceRequest; decision: 'approve' | 'deny' }
  | { kind: 'approved'; request: DeviceRequest; organization: { slug: string; name: string } }
  | { kind: 'denied'; request: DeviceRequest };

interface Problem {
  heading: string;
  message: string;
}

const problemOf = (err: unknown): Problem => ({ heading: refusalHeading(statusOf(err)), message: errorText(err) });

/**
 * The device-login approval page (`svc login` opens `/device?user_code=…`): the code (or a field
 * to type it), what the request asks, for which organization, Approve or Deny. It decides nothing
 * itself: `device.lookup`, `device.approve` and `device.deny` apply the rules (membership,
 * scopes, brute-force limits) and their refusals are shown in the server's words.
 */
export function DevicePage() {
  const [params, setParams] = useSearchParams();
  const fromUrl = params.get('user_code')?.trim() ?? '';
  const state = useSession((s) => s.state);
  const session = state.status === 'signed-in' ? state.session : null;
  const [step, setStep] = useState<Step>(fromUrl ? { kind: 'looking', code: normalizeUserCode(fromUrl) } : { kind: 'enter' });
  const [typed, setTyped] = useState(fromUrl ? normalizeUserCode(fromUrl) : '');
  const [problem, setProblem] = useState<Problem | null>(null);
  const orgs = session ? orgOptions(session) : { options: [], selected: '' };
  const [org, setOrg] = useState(orgs.selected);
  const codeId = useId();
  const orgId = useId();

  useEffect(() => {
    document.title = 'Approve a device · Studio';
  }, []);

  // Looks the URL's code up, on arrival and whenever the code in the address changes.
  useEffect(() => {
    if (!fromUrl) return;
    let live = true;
    setStep({ kind: 'looking', code: normalizeUserCode(fromUrl) });
    setProblem(null);
    client.routes['device.lookup']({ user_code: fromUrl }).then(
      (request) => {
        if (!live) return;
        setTyped(request.user_code);
        setStep({ kind: 'confirm', request });
      },
      (err: unknown) => {
        if (!live) return;
        setProblem(problemOf(err));
        setStep({ kind: 'enter' });
      },
    );
    return () => {
      live = false;
    };
  }, [fromUrl]);

  const lookUp = (event: FormEvent) => {
    event.preventDefault();
    const code = normalizeUserCode(typed);
    if (!code) return;
    setParams({ user_code: code });
  };

  const decide = async (request: DeviceRequest, decision: 'approve' | 'deny') => {
    setStep({ kind: 'deciding', request, decision });
    setProblem(null);
    try {
      if (decision === 'approve') {
        const approved = await client.routes['device.approve']({ user_code: request.user_code, ...(org ? { org } : {}) });
        setStep({ kind: 'approved', request, organization: approved.organization });
      } else {
        await client.routes['device.deny']({ user_code: request.user_code });
        setStep({ kind: 'denied', request });
      }
    } catch (err) {
      setProblem(problemOf(err));
      const status = statusOf(err);
      // A code that is gone, spent or malformed cannot be decided again: back to the code field.
      // Other refusals (the organization, the scopes, a rate limit) leave it pending: confirm again.
      if (status === 400 || status === 409 || status === 410) setStep({ kind: 'enter' });
      else setStep({ kind: 'confirm', request });
    }
  };

  if (step.kind === 'approved') {
    return (
      <ApprovalFrame title="Device approved" tone="ok">
        <p className="approval-result" role="status">
          <strong>Approved.</strong> You can return to your terminal: it finishes signing in within a few seconds.
        </p>
        <p className="muted">
          <code>{step.request.client_id}</code> now acts for you in <strong>{step.organization.name}</strong>. You can close this page. Revoke the session any time under
          Settings, API tokens.
        </p>
      </ApprovalFrame>
    );
  }
  if (step.kind === 'denied') {
    return (
      <ApprovalFrame title="Login denied" tone="danger">
        <p className="approval-result danger" role="status">
          <strong>Denied.</strong> The login request <code>{step.request.user_code}</code> was refused; the terminal is told so.
        </p>
        <p className="muted">If you did not start this login yourself, nothing else needs doing.</p>
      </ApprovalFrame>
    );
  }

  if (step.kind === 'looking') {
    return (
      <ApprovalFrame title="Approve a device">
        <p className="page-loading" role="status">
          Looking up <code>{step.code}</code>…
        </p>
      </ApprovalFrame>
    );
  }

  if (step.kind === 'enter') {
    return (
      <ApprovalFrame title={problem ? problem.heading : 'Enter the code from your terminal'}>
        {problem && <Refusal message={problem.message} />}
        <form className="stack" onSubmit={lookUp}>
          <label className="field" htmlFor={codeId}>
            <span>Code</span>
          </label>
          <input
            id={codeId}
            className="approval-code-input"
            name="user_code"
            autoComplete="off"
            autoCapitalize="characters"
            spellCheck={false}
            maxLength={32}
            required
            placeholder="BCDF-GHJK"
            aria-describedby={`${codeId}-hint`}
            value={typed}
            onChange={(e) => setTyped(e.target.value)}
            autoFocus
          />
          <p id={`${codeId}-hint`} className="muted small">
            <code>svc login</code> shows a code like BCDF-GHJK. Case and dashes do not matter.
          </p>
          <button type="submit" className="button primary approval-wide">
            Continue
          </button>
        </form>
      </ApprovalFrame>
    );
  }

  const request = step.request;
  const busy = step.kind === 'deciding';
  return (
    <ApprovalFrame title="Approve this login?">
      <p className="muted">Only approve if you started this login yourself and the code matches the one in your terminal.</p>
      {problem && <Refusal heading={problem.heading} message={problem.message} />}
      <p className="approval-code" aria-label={`Code ${request.user_code}`}>
        {request.user_code}
      </p>
      <dl className="approval-facts">
        <dt>Client</dt>
        <dd>
          <code>{request.client_id}</code>
        </dd>
        <ScopeFacts scopes={request.scopes} />
        <OrganizationFact id={orgId} options={orgs.options} value={org} onChange={setOrg} disabled={busy} />
        <dt>Code expires</dt>
        <dd>
          <time dateTime={request.expires_at}>{formatTime(request.expires_at)}</time> <span className="muted">({expiresIn(request.expires_at)})</span>
        </dd>
      </dl>
      <CreditWarning scopes={request.scopes} who="this terminal" />
      <div className="approval-actions">
        <button type="button" className="button" disabled={busy} onClick={() => void decide(request, 'deny')}>
          {busy && step.decision === 'deny' ? 'Denying…' : 'Deny'}
        </button>
        <button type="button" className="button primary" disabled={busy} onClick={() => void decide(request, 'approve')}>
          {busy && step.decision === 'approve' ? 'Approving…' : 'Approve'}
        </button>
      </div>
    </ApprovalFrame>
  );
}
