import { html, type SafeHtml } from './html';

/**
 * The password sign-in form of the service's pages (the device-login page, the MCP authorization
 * page). It posts `action=sign-in` to the page itself, which signs in through the shared
 * `BrowserSessions.signIn`; `hidden` carries what the page needs back after the redirect.
 */
export function signInForm(input: { action: string; hidden: Readonly<Record<string, string>>; email?: string }): SafeHtml {
  const hidden = Object.entries(input.hidden)
    .filter(([, value]) => value !== '')
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`);
  return html`<form method="post" action="${input.action}">
<input type="hidden" name="action" value="sign-in">
${hidden}<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${input.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`;
}
