import type { RunEvent, Workflow } from '../../services/contract';
import { createLogger } from '../../services/platform/logger';
import type { TestService } from './service';

const log = createLogger({ level: 'silent' });

/**
 * Runs `workflow` through the service's in-process call path (`runs.create`, as its own account
 * with scopes read and run), its whole stream collected; throws unless the stream begins with
 * `run.started`.
 */
export async function runInProcess(service: TestService, workflow: Workflow, options: { capMicros?: number; requestId: string }): Promise<{ runId: string; events: RunEvent[] }> {
  const { account } = service;
  const ctx = {
    auth: { tokenId: account.tokenId!, userId: account.userId, orgId: account.orgId, scopes: ['read', 'run'] as const, kind: 'personal' as const },
    requestId: options.requestId,
    log,
    signal: new AbortController().signal,
  };
  const stream = (await service.runtime.invoke!('runs.create', { workflow, maxCostUsd: (options.capMicros ?? 500_000) / 1_000_000 }, ctx)) as AsyncIterable<{ event: RunEvent }>;
  const events: RunEvent[] = [];
  for await (const { event } of stream) events.push(event);
  const started = events[0];
  if (started?.type !== 'run.started') throw new Error(`the stream began with ${JSON.stringify(started)}`);
  return { runId: started.runId, events };
}
