import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <main className="page">
      <h1>Page not found</h1>
      <p>
        There is no studio page here. <Link to="/">Go to your workflows</Link>.
      </p>
    </main>
  );
}
