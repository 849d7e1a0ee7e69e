import { isRouteErrorResponse, Link, useRouteError } from 'react-router';
import { errorText } from '../lib/api';

/** What a page that failed to load shows instead of a blank screen. */
export function RouteError() {
  const error = useRouteError();
  const text = isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : errorText(error);
  return (
    <main className="centered-card">
      <h1>Something went wrong</h1>
      <p className="error-text">{text}</p>
      <p>
        <Link to="/">Back to workflows</Link>
      </p>
    </main>
  );
}
