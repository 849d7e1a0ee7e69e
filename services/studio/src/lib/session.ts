import { create } from 'zustand';
import type { SessionBody } from '../../../contract';
import { client, sendJson } from './api';

/** What the header needs of the signed-in person: who, in which organization, with what balance. */
export type Session = SessionBody;

export type SessionState =
  | { status: 'loading'; session: null }
  | { status: 'signed-out'; session: null }
  | { status: 'signed-in'; session: Session };

interface SessionStore {
  state: SessionState;
  /** Asks the server who the cookie signs in (on start, and after runs to refresh the balance). */
  refresh(): Promise<void>;
  signIn(email: string, password: string, org?: string): Promise<void>;
  signOut(): Promise<void>;
  switchOrg(slug: string): Promise<void>;
}

function isUnauthorized(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { status?: number }).status === 401;
}

export const useSession = create<SessionStore>((set) => ({
  state: { status: 'loading', session: null },
  async refresh() {
    try {
      // A probe answers 204 when nobody is signed in (a 401 would be a console error on every first visit).
      const session = await sendJson<Session>(client.transport, 'GET', '/auth/session?probe=1');
      set({ state: session ? { status: 'signed-in', session } : { status: 'signed-out', session: null } });
    } catch (err) {
      if (isUnauthorized(err)) set({ state: { status: 'signed-out', session: null } });
      else throw err;
    }
  },
  async signIn(email, password, org) {
    const session = await sendJson<Session>(client.transport, 'POST', '/auth/sign-in', org ? { email, password, org } : { email, password });
    set({ state: { status: 'signed-in', session: session! } });
  },
  async signOut() {
    await sendJson(client.transport, 'POST', '/auth/sign-out');
    set({ state: { status: 'signed-out', session: null } });
  },
  async switchOrg(slug) {
    const session = await sendJson<Session>(client.transport, 'POST', '/auth/switch', { org: slug });
    set({ state: { status: 'signed-in', session: session! } });
  },
}));
