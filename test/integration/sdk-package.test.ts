import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestService, type TestService } from '../support/service';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const SDK = path.join(ROOT, 'services/sdk');

/**
 * The SDK as a user gets it: `npm pack` builds it (prepack), the tarball is installed into an
 * empty project with no other package of ours, and plain CommonJS, ESM and TypeScript programs
 * run a workflow against the service with it.
 */
describe('the packed SDK', () => {
  let service: TestService;
  let dir: string;
  let tarball: string;

  beforeAll(async () => {
    service = await startTestService();
    dir = await mkdtemp(path.join(os.tmpdir(), 'sdk-consumer-'));
    const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: SDK, maxBuffer: 16 * 1024 * 1024 });
    tarball = path.join(dir, packed.stdout.trim().split('\n').at(-1) as string);
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, version: '1.0.0' }));
    // Its one dependency (typebox, for types) comes from npm's cache when it holds it.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', tarball], { cwd: dir });
  }, 300_000);

  afterAll(async () => {
    await service?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds the builds, the declarations and the README, and no sources', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').sort();
    for (const file of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts', 'dist/node.js', 'dist/node.mjs', 'README.md', 'package.json']) {
      expect(files).toContain(`package/${file}`);
    }
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.mts'))).toEqual([]);
    const installed = await readdir(path.join(dir, 'node_modules'));
    expect(installed.filter((name) => !name.startsWith('.')).sort()).toEqual(['@sinclair', '@svc']);
  });

  it('keeps Node modules out of the main entry point (it runs in browsers)', async () => {
    for (const file of ['index.mjs', 'index.js']) {
      const code = await readFile(path.join(dir, 'node_modules/@svc/sdk/dist', file), 'utf8');
      expect(code).not.toMatch(/["']node:[a-z_/]+["']/);
      expect(code).not.toMatch(/require\(["'](fs|net|http|https|path|stream|child_process)["']\)/);
    }
  });

  const program = (style: 'cjs' | 'esm') => `
${style === 'cjs' ? "const { Client, run, searchNodes, createWorkflow, NotFoundError, getNode } = require('@svc/sdk');" : "import { Client, run, searchNodes, createWorkflow, NotFoundError, getNode } from '@svc/sdk';"}
const main = async () => {
  const client = new Client({ apiKey: process.env.SERVICE_TOKEN, baseUrl: process.env.SERVICE_URL });
  const nodes = await searchNodes(client, { q: 'math-add' });
  const wf = createWorkflow();
  const sum = wf.addNode('math-add', { a: wf.addInput('a', 'FLOAT'), b: 2 });
  wf.addOutput('sum', sum.out.result);
  const outputs = await run(client, { workflow: wf, inputs: { a: { value: 40 } } });
  const missing = await getNode(client, 'no-such-node').catch((err) => err instanceof NotFoundError);
  console.log(JSON.stringify({ found: nodes.map((n) => n.id), outputs, missing }));
};
main().catch((err) => { console.error(err); process.exit(1); });
`;

  it.each([['cjs', 'main.cjs'], ['esm', 'main.mjs']] as const)('runs a workflow from a %s program', async (style, file) => {
    await writeFile(path.join(dir, file), program(style));
    const { stdout } = await run(process.execPath, [file], { cwd: dir, env: { ...process.env, SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token } });
    expect(JSON.parse(stdout)).toEqual({ found: ['math-add'], outputs: { sum: { kind: 'float', value: 42 } }, missing: true });
  });

  it('type-checks a TypeScript program against the declarations', async () => {
    await writeFile(
      path.join(dir, 'typed.ts'),
      `import { Client, startRun, type RunEventWithSeq, type Outputs } from '@svc/sdk';
import { uploadFile } from '@svc/sdk/node';
export async function follow(client: Client): Promise<Outputs> {
  const handle = startRun(client, { workflowRef: 'acme/flow@1', inputs: { text: { value: 'hi' } }, maxCostUsd: 0.5 });
  for await (const event of handle.events()) {
    const e: RunEventWithSeq = event;
    if (e.type === 'step.completed') console.log(e.nodeId, e.usage.costUsd, e.seq);
  }
  await uploadFile(client, 'x.png');
  return handle.result();
}
// @ts-expect-error: an unknown operation is a type error
void new Client().ops['runs.nope'];
`,
    );
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2023', 'dom'], types: [], skipLibCheck: false }, files: ['typed.ts'] }),
    );
    const tsc = path.join(ROOT, 'node_modules/.bin/tsc');
    const checked = await run(tsc, ['-p', 'tsconfig.json'], { cwd: dir }).catch((err: { stdout: string }) => err);
    expect('stdout' in checked ? checked.stdout : '').toBe('');
  }, 120_000);
});
