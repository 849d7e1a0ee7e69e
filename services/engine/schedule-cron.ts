import { CronExpressionParser, type CronExpression } from 'cron-parser';

/** Cron macros a schedule takes: the minute-or-coarser ones of the parser. */
const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '@weekdays', '@weekends']);

/** How many ticks the shortest-interval check looks at. */
const INTERVAL_PROBE = 60;

export type CronCheck = { ok: true } | { ok: false; field: 'cron' | 'timezone'; message: string };

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a schedule's cron expression and time zone as people write them (docs/schedules.md,
 * Cron expressions): five fields or a macro (six, with seconds first, when `minIntervalSeconds` is
 * under 60), no randomized `H` fields (every worker must compute the same ticks), and ticks no
 * closer together than `minIntervalSeconds`.
 */
export function checkCron(cron: string, timezone: string, minIntervalSeconds: number): CronCheck {
  if (!isTimeZone(timezone)) return { ok: false, field: 'timezone', message: `timezone "${timezone.slice(0, 100)}" is not an IANA time zone; write one such as UTC, Europe/Paris or America/New_York` };
  const text = cron.trim();
  const fields = text.split(/\s+/);
  const secondsAllowed = minIntervalSeconds < 60;
  if (text.startsWith('@')) {
    if (!MACROS.has(text.toLowerCase())) return { ok: false, field: 'cron', message: `cron "${text.slice(0, 100)}" is not a macro a schedule takes; use @hourly, @daily, @weekly, @monthly, @yearly, @weekdays or @weekends, or five fields` };
  } else if (fields.length !== 5 && !(secondsAllowed && fields.length === 6)) {
    return {
      ok: false,
      field: 'cron',
      message: `cron "${text.slice(0, 100)}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; write five: minute hour day-of-month month day-of-week (for example "0 9 * * 1-5": 09:00 on weekdays)`,
    };
  }
  if (fields.some((field) => /(^|,)H(?=$|[(/,])/i.test(field))) return { ok: false, field: 'cron', message: `cron "${text.slice(0, 100)}" uses H (a random value); write the minute or hour you want` };
  let expression: CronExpression;
  try {
    expression = parse(text, timezone, new Date());
  } catch (err) {
    return { ok: false, field: 'cron', message: `cron "${text.slice(0, 100)}" is not a valid expression: ${(err as Error).message}` };
  }
  let previous: number | undefined;
  for (let i = 0; i < INTERVAL_PROBE && expression.hasNext(); i++) {
    const at = expression.next().getTime();
    if (previous !== undefined && at - previous < minIntervalSeconds * 1000) {
      return { ok: false, field: 'cron', message: `cron "${text.slice(0, 100)}" ticks ${(at - previous) / 1000} s apart; a schedule ticks at most once every ${minIntervalSeconds} s` };
    }
    previous = at;
  }
  if (previous === undefined) return { ok: false, field: 'cron', message: `cron "${text.slice(0, 100)}" never ticks` };
  return { ok: true };
}

function parse(cron: string, timezone: string, from: Date): CronExpression {
  return CronExpressionParser.parse(cron.trim(), { tz: timezone, currentDate: from });
}

/** The first tick strictly after `after`, or null when the expression has none left. */
export function tickAfter(cron: string, timezone: string, after: Date): Date | null {
  const expression = parse(cron, timezone, after);
  return expression.hasNext() ? expression.next().toDate() : null;
}

/** The last tick strictly before `before`, or null when there is none. */
export function tickBefore(cron: string, timezone: string, before: Date): Date | null {
  const expression = parse(cron, timezone, before);
  return expression.hasPrev() ? expression.prev().toDate() : null;
}

/** The next `count` ticks strictly after `after`. */
export function ticksAfter(cron: string, timezone: string, after: Date, count: number): Date[] {
  const expression = parse(cron, timezone, after);
  const ticks: Date[] = [];
  while (ticks.length < count && expression.hasNext()) ticks.push(expression.next().toDate());
  return ticks;
}

/**
 * The ticks from `from` (included) to `to` (included): the first, the last, and how many (counted
 * up to `limit`; `more` when there are more: a worker fleet down for a month does not step
 * through every minute of it).
 */
export function ticksBetween(cron: string, timezone: string, from: Date, to: Date, limit: number): { first: Date | null; last: Date | null; count: number; more: boolean } {
  const expression = parse(cron, timezone, new Date(from.getTime() - 1));
  let first: Date | null = null;
  let last: Date | null = null;
  let count = 0;
  while (expression.hasNext()) {
    const at = expression.next().toDate();
    if (at.getTime() > to.getTime()) break;
    first ??= at;
    last = at;
    if (++count >= limit) {
      const tail = parse(cron, timezone, new Date(to.getTime() + 1));
      return { first, last: tail.hasPrev() ? tail.prev().toDate() : at, count, more: true };
    }
  }
  return { first, last, count, more: false };
}

/** The start of the calendar month `at` falls in, in `timezone` (a budget's period). */
export function monthStart(at: Date, timezone: string): Date {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: '2-digit' }).formatToParts(at);
  const year = Number(parts.find((p) => p.type === 'year')!.value);
  const month = Number(parts.find((p) => p.type === 'month')!.value);
  // Midnight of the 1st in the zone: the first tick of "0 0 1 * *" after a moment before it.
  const guess = new Date(Date.UTC(year, month - 1, 1) - 36 * 3_600_000);
  return tickAfter('0 0 1 * *', timezone, guess)!;
}
