import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { OPERATIONS, ROUTES } from '../../services/contract';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome } from '../support/cli-process';
import { startTestService, type TestService } from '../support/service';

/** `svc api <name>`: every operation and route of the contract as a command, made by one loop over the registries. */
describe('svc api', () => {
  let service: TestService;
  let home: CliHome;

  beforeAll(async () => {
    ensureCliBuilt();
    service = await startTestService();
    home = new CliHome({ SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token });
  });

  afterAll(async () => {
    await service?.close();
    home?.remove();
  });

  const svc = (...args: string[]) => home.run(args);

  it('has one subcommand per operation and route, whose options are the input fields of its schema', async () => {
    const help = await svc('api', '--help');
    expect(help.code).toBe(0);
    for (const name of [...Object.keys(OPERATIONS), ...Object.keys(ROUTES)]) expect(help.stdout).toContain(`${name} [options]`);
    const nodesList = await svc('api', 'nodes.list', '--help');
    for (const field of Object.keys(OPERATIONS['nodes.list'].input.properties)) expect(nodesList.stdout).toContain(`--${field} <`);
    const approve = await svc('api', 'device.approve', '--help');
    expect(approve.stdout).toContain('--user-code <value>');
  });

  it('calls operations and routes with typed option values and prints the JSON answer', async () => {
    const spec = await svc('api', 'nodes.get', '--id', 'math-add');
    expect(spec.code).toBe(0);
    expect(JSON.parse(spec.stdout)).toMatchObject({ id: 'math-add', inputs: { a: {}, b: {} } });

    const single = await svc('api', 'runs.node', '--node', 'math-add', '--inputs', '{"a":1,"b":2}', '--max-cost-usd', '0.1');
    expect(JSON.parse(single.stdout)).toEqual({ outputs: { result: { kind: 'float', value: 3 } } });

    const workflow = { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] };
    const created = await svc('api', 'runs.create', '--data', JSON.stringify({ workflow }));
    expect(JSON.parse(created.stdout)).toEqual({ outputs: { sum: { kind: 'float', value: 5 } } });

    const listed = JSON.parse((await svc('api', 'runs.list', '--limit', '1')).stdout) as { runs: { id: string }[] };
    const record = JSON.parse((await svc('api', 'runs.get', '--id', listed.runs[0]!.id)).stdout) as { status: string; outputs: unknown };
    expect(record).toMatchObject({ status: 'completed', outputs: { sum: { kind: 'float', value: 5 } } });
    const followed = JSON.parse((await svc('api', 'runs.events', '--id', listed.runs[0]!.id)).stdout) as { id: string };
    expect(followed.id).toBe(listed.runs[0]!.id);
  });

  it('sends a file as the body of a bytes route', async () => {
    const file = path.join(home.dir, 'dot.png');
    fs.writeFileSync(file, await sharp({ create: { width: 3, height: 2, channels: 3, background: '#123' } }).png().toBuffer());
    const uploaded = await svc('api', 'uploads.create', '--filename', 'dot.png', '--body-file', file);
    expect(uploaded.code).toBe(0);
    expect(JSON.parse(uploaded.stdout)).toMatchObject({ kind: 'image', mimeType: 'image/png' });
    const missing = await svc('api', 'uploads.create', '--body-file', path.join(home.dir, 'nope.png'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
  });

  it('says what is wrong with an input, from the contract, before sending', async () => {
    const unknown = await svc('api', 'nodes.get', '--data', '{"id":"math-add","extra":1}');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown field "extra"');
    const notNumber = await svc('api', 'nodes.list', '--limit', 'many');
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain('--limit takes a number');
    const notFound = await svc('api', 'nodes.get', '--id', 'no-such-node');
    expect(notFound.code).toBe(2);
    expect(notFound.stderr).toContain('not_found');
  });
});
