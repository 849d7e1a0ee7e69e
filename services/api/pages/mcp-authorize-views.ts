import { html, type SafeHtml } from './html';

/** An organization a grant may act for. */
export interface OrganizationChoice {
  id: string;
  slug: string;
  name: string;
}

/**
 * A request the authorization endpoint cannot send back to any client (unknown client,
 * unregistered redirect URI), or a decision it refused (a forged post, a lapsed session): shown
 * to the person, never redirected. The consent screen itself is the studio's page.
 */
export function requestProblemView(input: { message: string }): SafeHtml {
  return html`<h1>This authorization request cannot be used</h1>
<p class="notice" role="alert">${input.message}</p>
<p class="muted">Nothing was sent to the application. Start the connection again from the application.</p>`;
}
