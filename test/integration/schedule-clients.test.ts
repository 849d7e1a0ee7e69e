import { Client, createSchedule, deleteSchedule, getSchedule, InvalidInputError, listSchedules, NotFoundError, pauseSchedule, resumeSchedule, scheduleTicks } from '../../services/sdk/src/index';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome } from '../support/cli-process';
import { publishWorkflow, startTestService, type TestService } from '../support/service';
import { pauseNode } from '../support/test-nodes';

/**
 * Schedules through the SDK (create, get, list, ticks, pause, resume, delete) and the CLI
 * (`svc schedule create|list|get|ticks|pause|resume|delete`, typed `-i` values, `--json`, exit codes).
 */

const plusOne = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'p', uses: 'test-pause', inputs: { n: '${n.value}', ms: 0 } },
    { id: 'next', uses: 'output', inputs: { value: '${p.n}' } },
  ],
};

let service: TestService;
let client: Client;
let home: CliHome;
let ref: string;

beforeAll(async () => {
  ensureCliBuilt();
  service = await startTestService({ nodes: [pauseNode] });
  client = new Client({ apiKey: service.account.token, baseUrl: service.url });
  home = new CliHome({ SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token });
  await publishWorkflow(service, 'plus-one', plusOne);
  ref = `${service.account.orgSlug}/plus-one@latest`;
}, 120_000);
afterAll(async () => {
  await service?.close();
  home?.remove();
});

describe('SDK', () => {
  it('creates, reads, lists, pauses, resumes and deletes a schedule; its ticks page', async () => {
    const created = await createSchedule(client, { workflowRef: ref, inputs: { n: { value: 4 } }, cron: '30 6 * * *', timezone: 'America/New_York', name: 'sdk' });
    expect(created).toMatchObject({ status: 'active', name: 'sdk', timezone: 'America/New_York' });
    expect(created.nextTicks).toHaveLength(5);
    expect((await getSchedule(client, created.id)).id).toBe(created.id);
    const listed = [];
    for await (const s of listSchedules(client)) listed.push(s.id);
    expect(listed).toContain(created.id);
    expect((await pauseSchedule(client, created.id)).status).toBe('paused');
    const paused = [];
    for await (const s of listSchedules(client, { status: 'paused' })) paused.push(s.id);
    expect(paused).toEqual([created.id]);
    expect((await resumeSchedule(client, created.id)).status).toBe('active');
    await service.runtime.schedules!.sweep(new Date(new Date(created.nextTicks[0]!).getTime() + 100));
    const ticks = [];
    for await (const t of scheduleTicks(client, created.id)) ticks.push(t);
    expect(ticks).toEqual([expect.objectContaining({ tickAt: created.nextTicks[0], status: 'started' })]);
    await deleteSchedule(client, created.id);
    await expect(getSchedule(client, created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('checks the input before sending it: an unknown field is refused without a request', async () => {
    await expect(createSchedule(client, { workflowRef: ref, cron: '0 9 * * *', colour: 'red' } as never)).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe('svc schedule', () => {
  const svc = (args: string[]) => home.run(args, { timeoutMs: 60_000 });

  it('creates a schedule with typed -i values and shows what runs when', async () => {
    const done = await svc(['schedule', 'create', ref, '--cron', '0 9 * * 1-5', '--timezone', 'Europe/Paris', '-i', 'n=41', '--max-cost', '0.2', '--monthly-budget', '3', '--name', 'cli']);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^schedule [0-9a-f-]{36} \(cli\): active$/m);
    expect(done.stdout).toContain(`runs      ${ref} with n=41`);
    expect(done.stdout).toContain('when      0 9 * * 1-5 (Europe/Paris)');
    expect(done.stdout).toContain('money     up to $0.20 a run, $3.00 a month; spent this month $0.00');
    expect(done.stdout).toMatch(/^ {2}next {6}(Mon|Tue|Wed|Thu|Fri) \d{1,2} \w{3}, 09:00; (Mon|Tue|Wed|Thu|Fri) \d{1,2} \w{3}, 09:00; (Mon|Tue|Wed|Thu|Fri) \d{1,2} \w{3}, 09:00 \(Europe\/Paris\)$/m);
    const id = /^schedule ([0-9a-f-]{36})/m.exec(done.stdout)![1]!;
    const stored = await getSchedule(client, id);
    expect(stored.inputs).toEqual({ n: { kind: 'int', value: 41 } });

    const listed = await svc(['schedule', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+cli\\s+active\\s+0 9 \\* \\* 1-5 Europe/Paris`, 'm'));

    const paused = await svc(['schedule', 'pause', id, '--json']);
    expect(JSON.parse(paused.stdout)).toMatchObject({ id, status: 'paused', pauseReason: { code: 'paused', by: 'caller' } });
    const shown = await svc(['schedule', 'get', id]);
    expect(shown.stdout).toMatch(/paused {4}by the caller at .*: paused by a caller/);
    expect(shown.stdout).toContain(`next      - (paused: svc schedule resume ${id})`);
    expect((await svc(['schedule', 'resume', id])).stdout).toMatch(/: active$/m);
    const ticks = await svc(['schedule', 'ticks', id]);
    expect(ticks.stdout.trim()).toBe('no ticks yet');
    const deleted = await svc(['schedule', 'delete', id]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain(`schedule ${id} deleted`);
    const gone = await svc(['schedule', 'get', id]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/no schedule .* in your organization/);
  });

  it('refuses a malformed cron with the service\'s message and exit 2; a file is not a workflow ref', async () => {
    const bad = await svc(['schedule', 'create', ref, '--cron', '0 9 * *', '-i', 'n=1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/cron "0 9 \* \*" has 4 fields; write five/);
    const file = await svc(['schedule', 'create', 'flow.json', '--cron', '0 9 * * *']);
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/a schedule runs a published workflow: give its ref/);
  });
});
