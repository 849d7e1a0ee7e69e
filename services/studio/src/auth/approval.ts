import type { Session } from '../lib/session';

/** What each scope lets a client do, as the approval pages say it. */
export const SCOPE_MEANINGS: Record<string, string> = {
  read: 'Read the node catalog, your workflows and your runs',
  run: "Run workflows and nodes, which spends the organization's credit",
};

export function scopeMeaning(scope: string): string {
  return SCOPE_MEANINGS[scope] ?? scope;
}

/** The spending warning is shown when a grant includes `run`. */
export function spendsCredit(scopes: readonly string[]): boolean {
  return scopes.includes('run');
}

/**
 * A code as the person typed it, in the form the CLI prints (`BCDF-GHJK`): case, spaces and
 * dashes do not matter to the server, but showing it the CLI's way makes comparing easy.
 */
export function normalizeUserCode(typed: string): string {
  const letters = typed.toUpperCase().replace(/[^A-Z0-9]/g, '');
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : typed.trim().toUpperCase();
}

/** An organization the person may approve for. */
export interface OrgOption {
  slug: string;
  name: string;
}

/**
 * The organizations a grant may act for, the session's own first-selected. An older server's
 * session may lack `organizations`: then only the session's organization is offered.
 */
export function orgOptions(session: Session): { options: OrgOption[]; selected: string } {
  const current = session.organization;
  const listed = Array.isArray(session.organizations) ? session.organizations : [];
  const options = listed.length > 0 ? listed.map((o) => ({ slug: o.slug, name: o.name })) : [{ slug: current.slug, name: current.name }];
  if (!options.some((o) => o.slug === current.slug)) options.unshift({ slug: current.slug, name: current.name });
  return { options, selected: current.slug };
}

/** The heading for a refused code lookup or decision, by the answer's status (the message is the server's). */
export function refusalHeading(status: number | undefined): string {
  switch (status) {
    case 404:
      return 'Code not found';
    case 409:
      return 'Code already used';
    case 410:
      return 'This code has expired';
    case 429:
      return 'Too many attempts';
    case 400:
      return 'That is not a valid code';
    case 401:
      return 'Signed out';
    case 403:
      return 'Not allowed';
    default:
      return 'Something went wrong';
  }
}

export function statusOf(err: unknown): number | undefined {
  const status = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
  return typeof status === 'number' ? status : undefined;
}

/** "in 14 minutes", "in under a minute", "expired", from now to an ISO time. */
export function expiresIn(iso: string, now: Date = new Date()): string {
  const ms = new Date(iso).getTime() - now.getTime();
  if (!Number.isFinite(ms)) return '';
  if (ms <= 0) return 'expired';
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'in under a minute';
  return minutes === 1 ? 'in 1 minute' : `in ${minutes} minutes`;
}
