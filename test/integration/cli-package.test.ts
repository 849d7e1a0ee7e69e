import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startTestService, type TestService } from '../support/service';

const run = promisify(execFile);
const CLI = path.resolve(__dirname, '../../services/cli');

/** `svc` as a user installs it: the packed tarball alone, offline, into an empty project. */
describe('the packed CLI', () => {
  let service: TestService;
  let dir: string;

  beforeAll(async () => {
    service = await startTestService();
    dir = await mkdtemp(path.join(os.tmpdir(), 'cli-consumer-'));
    const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: CLI, maxBuffer: 16 * 1024 * 1024 });
    const tarball = path.join(dir, packed.stdout.trim().split('\n').at(-1) as string);
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, version: '1.0.0' }));
    // --offline: the tarball has no dependencies, so nothing may need the registry.
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', tarball], { cwd: dir });
  }, 180_000);

  afterAll(async () => {
    await service?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('installs alone and runs a node against the service', async () => {
    expect((await readdir(path.join(dir, 'node_modules'))).filter((name) => !name.startsWith('.')).sort()).toEqual(['@svc']);
    const svc = path.join(dir, 'node_modules/.bin/svc');
    const env = { PATH: process.env.PATH ?? '', HOME: dir, SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token };
    expect((await run(svc, ['--version'], { env })).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const added = await run(svc, ['node', 'math-add', '-i', 'a=1', '-i', 'b=2', '--json'], { env });
    expect(JSON.parse(added.stdout)).toMatchObject({ outputs: { result: { kind: 'float', value: 3 } } });
  });

  it('installs svc-mcp beside svc: the local MCP server, bundled too', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: dir, SERVICE_API_URL: service.url, SERVICE_TOKEN: service.account.token };
    const client = new Client({ name: 'cli-package-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: path.join(dir, 'node_modules/.bin/svc-mcp'), env, stderr: 'ignore' }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['nodes.list', 'nodes.get', 'workflows.get', 'runs.create', 'runs.node', 'batches.create', 'batches.get']);
      const added = await client.callTool({ name: 'runs.node', arguments: { node: 'math-add', inputs: { a: 1, b: 2 } } });
      expect(JSON.parse((added.content as { text: string }[])[0]!.text)).toEqual({ outputs: { result: { kind: 'float', value: 3 } } });
    } finally {
      await client.close();
    }
  });
});
