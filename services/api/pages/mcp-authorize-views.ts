import { notice, organizationField, SCOPE_MEANINGS, type OrganizationChoice } from './device-page-views';
import { html, type SafeHtml } from './html';
import { signInForm } from './sign-in-form';

/** What the MCP authorization page shows of a request. */
export interface ConsentRequestView {
  clientName: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  /** The authorization request's parameters, posted back with the decision. */
  fields: Readonly<Record<string, string>>;
}

function hiddenFields(fields: Readonly<Record<string, string>>): SafeHtml[] {
  return Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`);
}

/** Where the answer goes, as a person can judge it: the redirect URI's host (and port). */
function redirectHost(uri: string): string {
  const url = new URL(uri);
  return url.host;
}

/** Sign in first; the request travels in hidden fields and the page comes back after. */
export function authorizeSignInView(input: { action: string; request: ConsentRequestView; email?: string; error?: string | null }): SafeHtml {
  return html`<h1>Sign in to connect ${input.request.clientName}</h1>
<p class="muted">An MCP client asks to use svc as you. Sign in, then decide what it may do.</p>
${notice(input.error)}
${signInForm({ action: input.action, hidden: input.request.fields, email: input.email })}`;
}

/** The consent screen: who asks, where the answer goes, what it may do, for which organization. */
export function consentView(input: {
  action: string;
  request: ConsentRequestView;
  organizations: readonly OrganizationChoice[];
  selectedOrgId: string;
  accessMinutes: number;
  refreshDays: number;
  error?: string | null;
}): SafeHtml {
  const { request } = input;
  const scopes = request.scopes.map((s) => html`<li><code>${s}</code>: ${SCOPE_MEANINGS[s] ?? s}</li>`);
  const spends = request.scopes.includes('run')
    ? html`<p class="notice" role="note">With <code>run</code>, this client can start runs that spend the organization's credit without asking you again.</p>`
    : null;
  return html`<h1>Allow ${request.clientName}?</h1>
<p class="muted">Only allow an application you are setting up yourself right now.</p>
${notice(input.error)}
${spends}
<form method="post" action="${input.action}">
${hiddenFields(request.fields)}<dl>
<dt>Application</dt><dd>${request.clientName} <span class="muted mono">(${request.clientId})</span></dd>
<dt>Returns to</dt><dd class="mono">${redirectHost(request.redirectUri)}</dd>
<dt>Access</dt><dd><ul class="scopes">${scopes}</ul></dd>
${organizationField(input.organizations, input.selectedOrgId)}
<dt>Lasts</dt><dd>access tokens for ${input.accessMinutes} minutes, renewed for up to ${input.refreshDays} days of inactivity; revoke it any time under Settings, API tokens</dd>
</dl>
<div class="actions">
<button class="secondary" type="submit" name="action" value="deny">Deny</button>
<button class="primary" type="submit" name="action" value="approve">Allow</button>
</div>
</form>`;
}

/** A request the page cannot send back to any client (unknown client, unregistered redirect URI). */
export function requestProblemView(input: { message: string }): SafeHtml {
  return html`<h1>This authorization request cannot be used</h1>
${notice(input.message)}
<p class="muted">Nothing was sent to the application. Start the connection again from the application.</p>`;
}
