import type { SessionBody } from '../../contract';
import { microsToUsd } from '../../engine/money';
import type { MemberOrganization } from '../../store';

/**
 * The answer of sign-in, `POST /auth/switch` and `GET /auth/session`: the user, the organization
 * the session acts in (with the user's role and the balance a 402 would report: what is
 * available, never shown below zero) and every organization the user belongs to. Null when the
 * user is no longer a member of `orgId`.
 */
export function sessionBody(
  user: { id: string; email: string; name: string },
  organizations: readonly MemberOrganization[],
  orgId: string,
  expiresAt: Date,
): SessionBody | null {
  const current = organizations.find((org) => org.id === orgId);
  if (!current) return null;
  return {
    user: { id: user.id, email: user.email, name: user.name },
    organization: {
      id: current.id,
      slug: current.slug,
      name: current.name,
      role: current.role,
      balanceUsd: microsToUsd(Math.max(0, current.availableMicros)),
    },
    organizations: organizations.map(({ id, slug, name, role }) => ({ id, slug, name, role })),
    expiresAt: expiresAt.toISOString(),
  };
}
