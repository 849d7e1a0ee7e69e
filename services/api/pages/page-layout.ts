import { randomBytes } from 'node:crypto';
import type { Response } from 'express';
import { html, SafeHtml } from './html';

const STYLE = `
:root { color-scheme: light dark; --bg: #f5f6f8; --card: #fff; --text: #1b1f24; --muted: #5b6472; --line: #dde1e6;
  --accent: #4f46e5; --accent-text: #fff; --danger: #b42318; --ok: #067647; --notice-bg: #fef3f2; --ok-bg: #ecfdf3; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0f1115; --card: #181b21; --text: #e8eaed; --muted: #9aa3af; --line: #2b3038;
    --accent: #8b85ff; --accent-text: #0f1115; --danger: #f97066; --ok: #47cd89; --notice-bg: #2a1614; --ok-bg: #0f2a1c; }
}
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; display: flex; flex-direction: column; align-items: center; }
header.top { width: 100%; max-width: 30rem; padding: 2rem 1.25rem 0; display: flex; justify-content: space-between; align-items: baseline; }
.brand { font-weight: 700; letter-spacing: .02em; }
.mark { color: var(--accent); }
.who { color: var(--muted); font-size: .875rem; display: flex; gap: .5rem; align-items: baseline; }
.who form { display: inline; margin: 0; }
.link { background: none; border: 0; padding: 0; color: var(--accent); font: inherit; cursor: pointer; text-decoration: underline; }
main { width: 100%; max-width: 30rem; padding: 1rem 1.25rem 3rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 1.75rem; box-shadow: 0 1px 2px rgba(0,0,0,.04); }
h1 { font-size: 1.375rem; margin: 0 0 .5rem; }
p { margin: .5rem 0; }
.muted { color: var(--muted); font-size: .9375rem; }
label { display: block; font-weight: 600; font-size: .875rem; margin: 1rem 0 .375rem; }
input, select { width: 100%; font: inherit; padding: .625rem .75rem; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); color: var(--text); }
input:focus, select:focus, button:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
input.code { font: 600 1.5rem/1.2 ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .15em; text-transform: uppercase; text-align: center; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
button.primary, button.secondary { flex: 1; font: inherit; font-weight: 600; padding: .625rem 1rem; border-radius: 8px; cursor: pointer; border: 1px solid var(--accent); }
button.primary { background: var(--accent); color: var(--accent-text); }
button.secondary { background: transparent; color: var(--text); border-color: var(--line); }
.notice { border-left: 4px solid var(--danger); background: var(--notice-bg); padding: .75rem 1rem; border-radius: 6px; margin: 0 0 1rem; }
.success { border-left: 4px solid var(--ok); background: var(--ok-bg); padding: .75rem 1rem; border-radius: 6px; margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .5rem 1rem; margin: 1.25rem 0 0; }
dt { color: var(--muted); font-size: .875rem; }
dt label { display: inline; margin: 0; font-weight: inherit; font-size: inherit; }
dd { margin: 0; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
ul.scopes { margin: 0; padding-left: 1.1rem; }
footer { color: var(--muted); font-size: .8125rem; margin-top: 1.25rem; text-align: center; }
`;

// A constant of this file: trusted markup.
const STYLESHEET = new SafeHtml(STYLE);

/** A whole page: its status, title and content. */
export interface Page {
  status: number;
  title: string;
  body: SafeHtml;
  /**
   * Origins a form of the page may end up at beside the service's own: the MCP authorization
   * page's Approve redirects to the client's redirect URI, and browsers apply `form-action` to
   * the redirects after a form post too.
   */
  formTargets?: readonly string[];
  /** The line under the card. */
  footer: string;
}

function document(page: Page, nonce: string): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${page.title}</title>
<style nonce="${nonce}">${STYLESHEET}</style>
</head>
<body>
<header class="top"><span class="brand"><span class="mark" aria-hidden="true">◆</span> Studio</span></header>
<main>
<div class="card">
${page.body}
</div>
<footer>${page.footer}</footer>
</main>
</body>
</html>
`;
}

/**
 * Sends a page with the headers an approval page needs: never cached (it shows codes and who is
 * signed in), never framed (clickjacking an Approve button), no script at all, forms posting
 * only to this origin. `Referrer-Policy: same-origin` rather than `no-referrer`: under
 * `no-referrer` browsers send `Origin: null` on form posts, which the CSRF guard refuses.
 */
export function sendPage(res: Response, page: Page): void {
  const nonce = randomBytes(16).toString('base64');
  res.set({
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${["'self'", ...(page.formTargets ?? [])].join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'Cross-Origin-Opener-Policy': 'same-origin',
  });
  res.status(page.status).send(document(page, nonce).value);
}
