import { NavLink, Outlet, useNavigate } from 'react-router';
import { useState } from 'react';
import { errorText } from '../lib/api';
import { formatUsd } from '../lib/format';
import { useSession } from '../lib/session';

/** The frame of every signed-in page: where you are, for which organization, with what balance. */
export function AppShell() {
  const state = useSession((s) => s.state);
  const signOut = useSession((s) => s.signOut);
  const switchOrg = useSession((s) => s.switchOrg);
  const navigate = useNavigate();
  const [problem, setProblem] = useState<string | null>(null);
  if (state.status !== 'signed-in') return null;
  const { user, organization, organizations } = state.session;

  const onSwitch = async (slug: string) => {
    setProblem(null);
    try {
      await switchOrg(slug);
      navigate('/');
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href="/" aria-label="Studio home">
          <span className="brand-mark" aria-hidden>◆</span> Studio
        </a>
        <nav className="topnav" aria-label="Main">
          <NavLink to="/" end>Workflows</NavLink>
          <NavLink to="/runs">Runs</NavLink>
          <NavLink to="/batches">Batches</NavLink>
          <NavLink to="/schedules">Schedules</NavLink>
          <NavLink to="/settings/tokens">API tokens</NavLink>
        </nav>
        <div className="org-box">
          {organizations && organizations.length > 1 ? (
            <label className="org-switch">
              <span className="visually-hidden">Organization</span>
              <select value={organization.slug} onChange={(e) => void onSwitch(e.target.value)} aria-label="Organization">
                {organizations.map((org) => (
                  <option key={org.id} value={org.slug}>
                    {org.name}
                  </option>
                ))}
              </select>
            </label>
          ) : (
            <span className="org-name" title={organization.slug}>{organization.name}</span>
          )}
          <span className="balance" title="Available balance" data-testid="balance">
            {typeof organization.balanceUsd === 'number' ? formatUsd(organization.balanceUsd) : '—'}
          </span>
        </div>
        <div className="user-box">
          <span className="user-name" title={user.email}>{user.name || user.email}</span>
          <button type="button" className="button subtle" onClick={() => void signOut().then(() => navigate('/sign-in'))}>
            Sign out
          </button>
        </div>
      </header>
      {problem && (
        <div className="banner error" role="alert">
          {problem}
        </div>
      )}
      {/* Keyed by organization: after a switch every page loads its data again, for the new one. */}
      <Outlet key={organization.id} />
    </div>
  );
}
