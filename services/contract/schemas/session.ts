import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './strict-object';

/** `POST /auth/sign-in`: the web editor's password sign-in. */
export const SignInInputSchema = strictObject({
  email: Type.String({ minLength: 3, maxLength: 320, description: 'The account email (case-insensitive)' }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  org: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Slug of the organization to act in; default: the first one joined' })),
});
export type SignInInput = Static<typeof SignInInputSchema>;

/** Who a web editor session acts for: the answer to sign-in and to `GET /auth/session`. */
export const SessionBodySchema = Type.Object({
  user: Type.Object({ id: Type.String({ format: 'uuid' }), email: Type.String(), name: Type.String() }),
  organization: Type.Object({ id: Type.String({ format: 'uuid' }), slug: Type.String(), name: Type.String() }),
  /** When the session ends unless signed out before. */
  expiresAt: Type.String({ format: 'date-time' }),
});
export type SessionBody = Static<typeof SessionBodySchema>;
