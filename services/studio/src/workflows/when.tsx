import { formatTime } from '../lib/format';
import { relativeTime } from './relative-time';

/** A time shown relative to now, with the exact local time on hover. */
export function When({ iso, empty = '—' }: { iso: string | null | undefined; empty?: string }) {
  if (!iso) return <span className="muted">{empty}</span>;
  return (
    <time dateTime={iso} title={formatTime(iso)}>
      {relativeTime(iso)}
    </time>
  );
}
