import { useEffect } from 'react';
import { Navigate, Outlet, useLocation } from 'react-router';
import { useSession } from '../lib/session';

/** Pages behind sign-in: asks the server once who the cookie signs in, then shows them or the sign-in page. */
export function RequireSession() {
  const state = useSession((s) => s.state);
  const refresh = useSession((s) => s.refresh);
  const location = useLocation();
  useEffect(() => {
    if (state.status === 'loading') void refresh();
  }, [state.status, refresh]);
  if (state.status === 'loading') return <div className="page-loading" role="status">Loading…</div>;
  if (state.status === 'signed-out') {
    const next = `${location.pathname}${location.search}`;
    return <Navigate to={`/sign-in?next=${encodeURIComponent(next)}`} replace />;
  }
  return <Outlet />;
}
