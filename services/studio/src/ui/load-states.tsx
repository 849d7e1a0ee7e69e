import { Link } from 'react-router';

/** What a page shows while its data loads. */
export function Loading({ children }: { children: string }) {
  return (
    <div className="page-loading" role="status">
      {children}
    </div>
  );
}

/** What a page shows when its data did not load: the service's words and a way to try again. */
export function LoadFailed({ what, message, onRetry }: { what: string; message: string; onRetry(): void }) {
  return (
    <div className="card stack" role="alert">
      <p className="error-text">
        Could not load {what}: {message}
      </p>
      <div>
        <button type="button" className="button" onClick={onRetry}>
          Try again
        </button>
      </div>
    </div>
  );
}

/** A detail page whose record did not load: the failure, a way to try again, and the way back to its list. */
export function PageLoadFailed({ what, message, onRetry, back }: { what: string; message: string; onRetry(): void; back: { to: string; label: string } }) {
  return (
    <main className="page">
      <LoadFailed what={what} message={message} onRetry={onRetry} />
      <p>
        <Link to={back.to}>{back.label}</Link>
      </p>
    </main>
  );
}
