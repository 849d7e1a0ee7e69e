import { createBrowserRouter } from 'react-router';
import { AppShell } from './shell/app-shell';
import { RequireSession } from './shell/require-session';
import { RouteError } from './shell/route-error';

/**
 * The studio's pages. The workflow list, runs and settings share the shell (organization, balance,
 * navigation); the graph editor and the run detail are loaded on demand, so the first screen does
 * not wait for the canvas library. `/device` is the verification page `svc login` opens.
 */
const loading = <div className="page-loading" role="status">Loading…</div>;

export const router = createBrowserRouter([
  // What shows while the first page's code loads (its route is lazy).
  { path: '/sign-in', hydrateFallbackElement: loading, lazy: async () => ({ Component: (await import('./auth/sign-in-page')).SignInPage }) },
  {
    path: '/device',
    hydrateFallbackElement: loading,
    element: <RequireSession />,
    errorElement: <RouteError />,
    children: [{ index: true, lazy: async () => ({ Component: (await import('./auth/device-page')).DevicePage }) }],
  },
  // The hosted MCP's OAuth consent page, at the authorization endpoint the server checked the request at.
  // Not behind RequireSession: a request it cannot use is shown to anyone; the page sends a signed-out person to sign in.
  { path: '/oauth/mcp/authorize', hydrateFallbackElement: loading, errorElement: <RouteError />, lazy: async () => ({ Component: (await import('./auth/consent-page')).ConsentPage }) },
  {
    path: '/',
    hydrateFallbackElement: loading,
    element: <RequireSession />,
    errorElement: <RouteError />,
    children: [
      {
        element: <AppShell />,
        children: [
          { index: true, lazy: async () => ({ Component: (await import('./workflows/workflows-page')).WorkflowsPage }) },
          { path: 'workflows/:id', lazy: async () => ({ Component: (await import('./editor/editor-page')).EditorPage }) },
          { path: 'runs', lazy: async () => ({ Component: (await import('./runs/runs-page')).RunsPage }) },
          { path: 'runs/:id', lazy: async () => ({ Component: (await import('./runs/run-detail-page')).RunDetailPage }) },
          { path: 'batches', lazy: async () => ({ Component: (await import('./batches/batches-page')).BatchesPage }) },
          { path: 'batches/:id', lazy: async () => ({ Component: (await import('./batches/batch-page')).BatchPage }) },
          { path: 'schedules', lazy: async () => ({ Component: (await import('./schedules/schedules-page')).SchedulesPage }) },
          { path: 'schedules/:id', lazy: async () => ({ Component: (await import('./schedules/schedule-page')).SchedulePage }) },
          { path: 'settings/tokens', lazy: async () => ({ Component: (await import('./settings/tokens-page')).TokensPage }) },
          { path: '*', lazy: async () => ({ Component: (await import('./shell/not-found-page')).NotFoundPage }) },
        ],
      },
    ],
  },
]);
