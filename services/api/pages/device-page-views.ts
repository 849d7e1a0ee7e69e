import { html, type HtmlValue, type SafeHtml } from './html';
import { signInForm } from './sign-in-form';

/** A pending login request as `device.lookup` answers it. */
export interface DeviceRequestView {
  user_code: string;
  client_id: string;
  scopes: readonly string[];
  expires_at: string;
}

/** An organization the approver may let the session act for. */
export interface OrganizationChoice {
  id: string;
  slug: string;
  name: string;
}

/** What each scope lets a client do, as the approval pages say it. */
export const SCOPE_MEANINGS: Record<string, string> = {
  read: 'read the node catalog and workflows',
  run: "run workflows and nodes, which spends the organization's credit",
};

/** `2026-11-24T23:25:07.000Z` → `2026-11-24 23:25 UTC` (no script on the page to show local time). */
function when(iso: string): SafeHtml {
  const shown = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return html`<time datetime="${iso}">${shown}</time>`;
}

/** A refusal or warning shown above a form. */
export function notice(message: string | null | undefined): HtmlValue {
  return message ? html`<p class="notice" role="alert">${message}</p>` : null;
}

/** The sign-in form; the typed code travels along so the person lands on it once signed in. */
export function signInView(input: { action: string; userCode: string; email?: string; error?: string | null }): SafeHtml {
  return html`<h1>Sign in to approve a login</h1>
<p class="muted">A command-line tool asked to sign in as you. Sign in first, then check its code.</p>
${notice(input.error)}
${signInForm({ action: input.action, hidden: { user_code: input.userCode }, email: input.email })}`;
}

/** The code form: a GET, so looking a code up changes nothing and needs no CSRF token. */
export function codeView(input: { action: string; userCode: string; error?: string | null }): SafeHtml {
  return html`<h1>Enter the code from your terminal</h1>
<p class="muted">The command shows a code like <span class="mono">BCDF-GHJK</span>. Case and dashes do not matter.</p>
${notice(input.error)}
<form method="get" action="${input.action}">
<label for="user_code">Code</label>
<input id="user_code" class="code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="32" required value="${input.userCode}">
<div class="actions"><button class="primary" type="submit">Continue</button></div>
</form>`;
}

/** The organization a grant acts for: shown when there is one, a select when there are several. */
export function organizationField(organizations: readonly OrganizationChoice[], selectedId: string): SafeHtml {
  if (organizations.length === 1) {
    const only = organizations[0]!;
    return html`<dt>Organization</dt><dd>${only.name} <span class="muted mono">(${only.slug})</span><input type="hidden" name="org" value="${only.slug}"></dd>`;
  }
  const options = organizations.map((o) => html`<option value="${o.slug}"${o.id === selectedId ? html` selected` : null}>${o.name} (${o.slug})</option>`);
  return html`<dt><label for="org">Organization</label></dt><dd><select id="org" name="org">${options}</select></dd>`;
}

/** What is asked, for whom, until when; Approve and Deny post the same form. */
export function confirmView(input: {
  action: string;
  request: DeviceRequestView;
  organizations: readonly OrganizationChoice[];
  selectedOrgId: string;
  sessionDays: number;
  error?: string | null;
}): SafeHtml {
  const { request } = input;
  const scopes = request.scopes.map((s) => html`<li><code>${s}</code>: ${SCOPE_MEANINGS[s] ?? s}</li>`);
  return html`<h1>Approve this login?</h1>
<p class="muted">Only approve if you started this login yourself and the code matches the one in your terminal.</p>
${notice(input.error)}
<form method="post" action="${input.action}">
<input type="hidden" name="user_code" value="${request.user_code}">
<dl>
<dt>Code</dt><dd class="mono">${request.user_code}</dd>
<dt>Client</dt><dd class="mono">${request.client_id}</dd>
<dt>Access</dt><dd><ul class="scopes">${scopes}</ul></dd>
${organizationField(input.organizations, input.selectedOrgId)}
<dt>Session</dt><dd>lasts ${input.sessionDays} days unless revoked (Settings, API tokens)</dd>
<dt>Code expires</dt><dd>${when(request.expires_at)}</dd>
</dl>
<div class="actions">
<button class="secondary" type="submit" name="action" value="deny">Deny</button>
<button class="primary" type="submit" name="action" value="approve">Approve</button>
</div>
</form>`;
}

/** The decision, final: the terminal picks it up on its next poll. */
export function resultView(input: { outcome: 'approved' | 'denied'; request: DeviceRequestView; organization?: OrganizationChoice }): SafeHtml {
  const { request } = input;
  if (input.outcome === 'approved') {
    const org = input.organization;
    return html`<h1>Approved</h1>
<p class="success" role="status">Approved: return to your terminal. It finishes signing in within a few seconds.</p>
<p class="muted"><span class="mono">${request.client_id}</span> now acts for you${org ? html` in ${org.name}` : null}. You can close this page.</p>`;
  }
  return html`<h1>Denied</h1>
<p class="notice" role="status">Denied: the login request <span class="mono">${request.user_code}</span> of <span class="mono">${request.client_id}</span> was refused.</p>
<p class="muted">The terminal is told the request was denied. You can close this page.</p>`;
}

/** A refusal that no form can mend (a cross-site post, a failure of ours). */
export function problemView(input: { heading: string; message: string; action: string }): SafeHtml {
  return html`<h1>${input.heading}</h1>
${notice(input.message)}
<p><a href="${input.action}">Start again</a></p>`;
}
