import { Command } from 'commander';
import type { Schedule, ScheduleTickBody } from '../../../contract';
import { createSchedule, getWorkflow, listSchedules, ROUTES, tickLine, type RouteName, type ScheduleInput } from '../../../sdk/src/index';
import { usageError } from '../cli-error';
import { connectSignedIn, type ConnectionOptions } from '../connection';
import { usdBrief } from '../format';
import { parseAssignments } from '../input-values';
import { interruptSignal } from '../interrupt';
import { artifactText, print, printJson, table } from '../output';
import { workflowInputs } from '../typed-inputs';
import { uploaderOf } from '../uploader';
import { declaredInputs, isWorkflowRef } from '../workflow-source';
import { runCallOptions, type RunOptions } from './node';

export interface ScheduleCreateOptions extends Omit<RunOptions, 'webhookEvents'> {
  cron: string;
  timezone?: string;
  name?: string;
  monthlyBudget?: number;
  catchUp?: number;
}

/**
 * `svc schedule create <workflow-ref> --cron …`: types the `-i` values by the published
 * workflow's inputs (as `svc run` does), creates the schedule and shows it with its next ticks.
 */
export async function scheduleCreate(workflowRef: string, options: ScheduleCreateOptions): Promise<void> {
  if (!isWorkflowRef(workflowRef)) throw usageError(`a schedule runs a published workflow: give its ref, such as acme/nightly@1 or acme/nightly@latest (got ${JSON.stringify(workflowRef)})`);
  const { client } = connectSignedIn(options);
  const signal = interruptSignal();
  const published = await getWorkflow(client, workflowRef, { signal });
  const inputs = await workflowInputs(parseAssignments(options.input ?? []), declaredInputs(published.workflow), uploaderOf(client, signal));
  const request: ScheduleInput = {
    workflowRef,
    cron: options.cron,
    ...(Object.keys(inputs).length > 0 ? { inputs } : {}),
    ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.maxCost === undefined ? {} : { maxCostUsd: options.maxCost }),
    ...(options.monthlyBudget === undefined ? {} : { monthlyBudgetUsd: options.monthlyBudget }),
    ...(options.catchUp === undefined ? {} : { catchUpSeconds: options.catchUp }),
  };
  const callOptions = runCallOptions(options);
  const schedule = await createSchedule(client, request, { signal, ...(callOptions ? { options: callOptions } : {}) });
  if (options.json) printJson(schedule);
  else print(scheduleText(schedule));
}

/** `svc schedule list`: the organization's schedules as a table (every page), or a JSON array. */
export async function scheduleList(options: ConnectionOptions & { status?: 'active' | 'paused' }): Promise<void> {
  const { client } = connectSignedIn(options);
  const all: Schedule[] = [];
  for await (const schedule of listSchedules(client, options.status ? { status: options.status } : {}, { signal: interruptSignal() })) all.push(schedule);
  if (options.json) {
    printJson(all);
    return;
  }
  if (all.length === 0) {
    print('no schedules; create one with svc schedule create <workflow-ref> --cron "0 9 * * *"');
    return;
  }
  print(
    table(
      ['ID', 'NAME', 'STATUS', 'CRON', 'NEXT', 'WORKFLOW'],
      all.map((s) => [s.id, s.name ?? '-', s.status === 'paused' ? `paused (${s.pauseReason?.code ?? '?'})` : 'active', `${s.cron} ${s.timezone}`, s.nextTicks[0] ?? '-', s.workflowRef]),
    ),
  );
}

/**
 * `svc schedule get|ticks|pause|resume|delete <id>`: one subcommand per route of the contract
 * that names a schedule by id, made by a loop over the contract's `schedules.*` routes; each
 * prints the schedule (or its ticks) for a person, or the route's JSON answer with `--json`.
 */
export function scheduleIdCommands(withConnection: (command: Command) => Command): Command[] {
  const names = (Object.keys(ROUTES) as RouteName[]).filter((name) => name.startsWith('schedules.') && ROUTES[name].http.pathParams.join() === 'id');
  return names.map((name) => {
    const verb = name.slice('schedules.'.length);
    return withConnection(new Command(verb).argument('<id>', 'the schedule id').description(`${ROUTES[name].summary} (${ROUTES[name].http.method} ${ROUTES[name].http.path})`)).action(
      async (id: string, options: ConnectionOptions) => {
        const { client } = connectSignedIn(options);
        const call = client.routes[name] as (input: { id: string }, options: { signal: AbortSignal }) => Promise<unknown>;
        const answer = await call({ id }, { signal: interruptSignal() });
        if (options.json) printJson(answer ?? { deleted: id });
        else if (name === 'schedules.delete') print(`schedule ${id} deleted: it never ticks again (its runs keep its id)`);
        else if (name === 'schedules.ticks') print(ticksText((answer as { ticks: ScheduleTickBody[] }).ticks));
        else print(scheduleText(answer as Schedule));
      },
    );
  });
}

/** A schedule as a person reads it: what runs when, its money, its next and latest ticks. */
export function scheduleText(s: Schedule): string {
  const inputs = Object.entries(s.inputs)
    .map(([name, value]) => `${name}=${artifactText(value as Parameters<typeof artifactText>[0])}`)
    .join(' ');
  const lines = [
    `schedule ${s.id}${s.name ? ` (${s.name})` : ''}: ${s.status}`,
    `  runs      ${s.workflowRef}${inputs ? ` with ${inputs}` : ''}`,
    `  when      ${s.cron} (${s.timezone}); a tick missed is run late within ${s.catchUpSeconds} s`,
    `  money     up to ${usdBrief(s.maxCostUsd)} a run${s.monthlyBudgetUsd === null ? '' : `, ${usdBrief(s.monthlyBudgetUsd)} a month`}; spent this month ${usdBrief(s.spentThisMonthUsd)}`,
  ];
  if (s.pauseReason) lines.push(`  paused    by the ${s.pauseReason.by} at ${s.pauseReason.at}: ${s.pauseReason.message}`);
  const next = s.nextTicks.slice(0, 3).map((tick) => tickLine(tick, s.timezone));
  lines.push(`  next      ${next.length > 0 ? `${next.join('; ')} (${s.timezone})` : `- (paused: svc schedule resume ${s.id})`}`);
  if (s.recentTicks.length > 0) lines.push('  latest ticks', ...ticksText(s.recentTicks.slice(0, 5)).split('\n').map((line) => `    ${line}`));
  return lines.join('\n');
}

function ticksText(ticks: readonly ScheduleTickBody[]): string {
  if (ticks.length === 0) return 'no ticks yet';
  return table(
    ['TICK', 'OUTCOME', 'RUN', 'COST', 'NOTE'],
    ticks.map((t) => [
      t.tickAt,
      t.status === 'skipped' ? `skipped ×${t.skippedCount}` : t.status,
      t.runId ? `${t.runId} ${t.runStatus ?? ''}`.trim() : '-',
      t.costUsd === null ? '-' : usdBrief(t.costUsd),
      t.error?.message ?? '',
    ]),
  );
}
