import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome, finished, requireScript, runInTerminal, spawnInTerminal, stderrMatching, stdoutMatching } from '../support/cli-process';
import { seedAccount } from '../support/fixtures';
import { publishWorkflow, startTestService, type TestService } from '../support/service';
import { pauseNode } from '../support/test-nodes';

/** The `svc` command, built from this tree, driven as a person would: a subprocess against a real service. */
describe('svc: nodes, node and run', () => {
  let service: TestService;
  let home: CliHome;
  let assets: http.Server;
  let assetsUrl: string;
  let png: Buffer;
  let signedIn: Record<string, string>;

  beforeAll(async () => {
    ensureCliBuilt();
    png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c63' } }).png().toBuffer();
    assets = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
    await new Promise<void>((resolve) => assets.listen(0, '127.0.0.1', resolve));
    const port = (assets.address() as { port: number }).port;
    assetsUrl = `http://127.0.0.1:${port}`;
    service = await startTestService({ nodes: [pauseNode], env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${port}` } });
    signedIn = { SERVICE_TOKEN: service.account.token };
    home = new CliHome({ SERVICE_URL: service.url });
    fs.writeFileSync(path.join(home.dir, 'red.png'), png);
    fs.writeFileSync(path.join(home.dir, 'greet.yaml'), GREET_YAML);
    fs.writeFileSync(path.join(home.dir, 'typed.json'), JSON.stringify(TYPED));
  });

  afterAll(async () => {
    await service?.close();
    await new Promise((resolve) => assets?.close(resolve));
    home?.remove();
  });

  const svc = (args: string[], env: Record<string, string> = signedIn) => home.run(args, { env });

  it('prints help and its version without a service', async () => {
    const help = await svc(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['login', 'logout', 'whoami', 'nodes', 'node', 'run']) expect(help.stdout).toContain(command);
    const runHelp = await svc(['run', '--help']);
    expect(runHelp.stdout).toMatch(/-i, --input <name=value>[\s\S]*--max-cost <usd>[\s\S]*--json[\s\S]*--url <url>|--url <url>[\s\S]*--json[\s\S]*-i, --input/);
    expect((await svc(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  describe('nodes', () => {
    it('lists the palette as a table, without a token, filtered by query, category and limit', async () => {
      const all = await svc(['nodes', 'math'], {});
      expect(all.code).toBe(0);
      const lines = all.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+KIND\s+CATEGORY\s+TITLE$/);
      expect(lines.some((line) => /^math-add\s+model\s+math\s+Add$/.test(line))).toBe(true);

      const limited = await svc(['nodes', '--category', 'text', '--limit', '2', '--json']);
      const specs = JSON.parse(limited.stdout) as { id: string; category: string; inputs: object }[];
      expect(specs).toHaveLength(2);
      expect(specs.every((s) => s.category === 'text' && typeof s.inputs === 'object')).toBe(true);
      expect(limited.stderr).toBe('');
    });

    it('shows one node whole when the query is its id: ports, constraints and example inputs', async () => {
      const one = await svc(['nodes', 'text-template'], {});
      expect(one.code).toBe(0);
      expect(one.stdout).toMatch(/^text-template \(model, text\): Text template$/m);
      expect(one.stdout).toMatch(/^missing\s+TEXT\s+optional; default "error"; one of "error", "keep", "empty"$/m);
      expect(one.stdout).toContain('Example inputs:');
      expect(one.stdout).toContain('"template": "Hello {{user.name}}, your order {{order}} has shipped."');
      // A query that is no node's id stays a search.
      const search = await svc(['nodes', 'text-temp'], {});
      expect(search.stdout.split('\n')[0]).toMatch(/^ID\s+KIND/);
    });

    it('refuses a bad --limit as a usage error', async () => {
      const bad = await svc(['nodes', '--limit', 'lots']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--limit takes a number');
      // With --json, a failure is one JSON document on stdout too.
      const json = await svc(['nodes', '--limit', 'lots', '--json']);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'usage', message: expect.stringContaining('--limit takes a number') } });
      // The contract's own bounds, checked by the SDK before sending.
      const zero = await svc(['nodes', '--limit', '0']);
      expect(zero.code).toBe(2);
      expect(zero.stderr).toContain('limit must be >= 1');
      const input = await svc(['node', 'math-add', '-i', 'c=1', '--json']);
      expect(JSON.parse(input.stdout)).toMatchObject({ error: { code: 'unknown_input' } });
    });
  });

  describe('node', () => {
    it('runs one node with inputs typed by its NodeSpec: numbers, booleans, JSON, text', async () => {
      const sum = await svc(['node', 'math-add', '-i', 'a=1', '--input', 'b=2.5']);
      expect(sum).toMatchObject({ code: 0, stdout: 'result: 3.5\n' });

      const split = await svc(['node', 'text-split', '-i', 'text=a, 42 ,b', '-i', 'separator=,', '-i', 'trim=true', '--json']);
      expect(split.code).toBe(0);
      expect(JSON.parse(split.stdout)).toEqual({ outputs: { parts: { kind: 'structured', value: ['a', '42', 'b'] }, count: { kind: 'int', value: 3 } } });

      const filled = await svc(['node', 'text-template', '-i', 'template=Hi {{who}}={{n}}', '-i', 'values={"who":"Ada","n":7}']);
      expect(filled.stdout).toBe('text: Hi Ada=7\n');

      const listed = await svc(['node', 'text-concat', '-i', 'texts=x', '-i', 'texts=y', '-i', 'separator=+']);
      expect(listed.stdout).toBe('text: x+y\n');
    });

    it('gives a file port a ref artifact from @<url> and an upload from @<file>', async () => {
      const byUrl = await svc(['node', 'image-metadata', '-i', `image=@${assetsUrl}/photo.png`, '--json']);
      expect(byUrl.code).toBe(0);
      expect(JSON.parse(byUrl.stdout).outputs).toMatchObject({ width: { value: 40 }, height: { value: 30 } });

      const uploaded = await svc(['node', 'image-resize', '-i', 'image=@./red.png', '-i', 'width=20']);
      expect(uploaded.code).toBe(0);
      expect(uploaded.stderr).toMatch(/uploaded \.\/red\.png \(\d+ bytes\) as image image\/png/);
      // A ref output prints as its URL, the service's own.
      expect(uploaded.stdout).toMatch(new RegExp(`^image: ${service.url}/blobs/\\S+\\.png\\S*\\n$`));
    });

    it('exits 2 for an unknown node, an unknown port, a mistyped value or a missing file', async () => {
      const unknown = await svc(['node', 'no-such-node', '-i', 'a=1']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/no node with id "no-such-node".*\(not_found\)/);

      const port = await svc(['node', 'math-add', '-i', 'c=1']);
      expect(port.code).toBe(2);
      expect(port.stderr).toContain('node "math-add" has no input "c"; its inputs: a (FLOAT), b (FLOAT)');

      const typed = await svc(['node', 'math-add', '-i', 'a=ten', '-i', 'b=1']);
      expect(typed.code).toBe(2);
      expect(typed.stderr).toContain('input "a" (FLOAT) takes a number, got "ten"');

      const missing = await svc(['node', 'image-metadata', '-i', 'image=@./nothing.png']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('no file named ./nothing.png');

      const shape = await svc(['node', 'math-add', '-i', 'a']);
      expect(shape.code).toBe(2);
      expect(shape.stderr).toContain('must be name=value');
    });
  });

  describe('run', () => {
    it('runs a YAML file, a TEXT input staying text ("42"), progress on stderr and outputs on stdout', async () => {
      const result = await svc(['run', 'greet.yaml', '-i', 'name=42']);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe('greeting: Hello, 42\n');
      expect(result.stderr).toMatch(/^run\.started [0-9a-f-]{36}$/m);
      expect(result.stderr).toMatch(/^step\.started hello$/m);
      expect(result.stderr).toMatch(/^step\.completed hello \$0\.\d{6} \d+ ms$/m);
      expect(result.stderr).toMatch(/^run\.completed \$0\.\d{6}$/m);
      // No terminal, no redrawing: plain lines without a single escape code.
      expect(result.stderr).not.toContain('\x1b');
    });

    it('redraws a live block on a terminal: one line per node with its cost, then the total against the cap', async () => {
      requireScript();
      fs.writeFileSync(path.join(home.dir, 'two-steps.yaml'), TWO_STEPS_YAML);
      const result = await runInTerminal(home, ['run', 'two-steps.yaml', '-i', 'name=tty', '--max-cost', '0.25'], { env: signedIn });
      expect(result.code).toBe(0);
      const screen = result.stdout.replace(/\r\n/g, '\n');
      // Cleared to the end of the screen at each draw, the cursor moved back up over the last one.
      expect(screen).toContain('\x1b[J');
      expect(screen).toMatch(new RegExp(`${ESC}\\[\\d+F${ESC}\\[J`));
      // The last draw, colours taken out, then the outputs (stdout) below it.
      const last = screen.slice(screen.lastIndexOf('\x1b[J') + 3).replace(new RegExp(`${ESC}\\[\\d+m`, 'g'), '');
      const lines = last.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^run [0-9a-f-]{36}$/);
      // The steps (input and output nodes run none), each done with its cost and time.
      expect(lines.slice(1, 3).map((line) => line.replace(/\$0\.\d{6} {2}\d+ ms$/, '$C  T'))).toEqual(['  ✓ hello  $C  T', '  ✓ bang   $C  T']);
      expect(lines[3]).toMatch(/^ {2}total \$0\.\d{6} of a cap of \$0\.25 {2}completed$/);
      expect(lines.slice(4)).toEqual(['greeting: Hello, tty!']);
    });

    it('runs a JSON file with INT, FLOAT, BOOLEAN and STRUCTURED inputs; --json is one document with runId, outputs and costUsd', async () => {
      const result = await svc(['run', 'typed.json', '-i', 'count=3', '-i', 'half=0.5', '-i', 'trim=false', '-i', 'person={"name":"Ada"}', '--json']);
      expect(result.code).toBe(0);
      const doc = JSON.parse(result.stdout) as { runId: string; outputs: Record<string, { value: unknown }>; costUsd: number };
      expect(doc.runId).toMatch(/^[0-9a-f-]{36}$/);
      expect(doc.outputs.sum).toEqual({ kind: 'float', value: 3.5 });
      expect(doc.outputs.parts).toEqual({ kind: 'structured', value: ['a ', ' b'] });
      expect(doc.outputs.who).toEqual({ kind: 'structured', value: { name: 'Ada' } });
      expect(doc.costUsd).toBeGreaterThan(0);

      const plain = await svc(['run', 'typed.json', '-i', 'count=1', '-i', 'person={"name":"Ada"}']);
      expect(plain.stdout).toBe('sum: 1.5\nparts: ["a","b"]\nwho: {"name":"Ada"}\n');
    });

    it('reads a run body file ({ workflow, inputs }) as in docs/examples, the command line overriding its inputs', async () => {
      fs.writeFileSync(path.join(home.dir, 'body.json'), JSON.stringify({ workflow: yamlWorkflow(), inputs: { name: { value: 'file' } } }));
      expect((await svc(['run', 'body.json'])).stdout).toBe('greeting: Hello, file\n');
      expect((await svc(['run', 'body.json', '-i', 'name=line'])).stdout).toBe('greeting: Hello, line\n');
    });

    it('runs a published workflow by ref, typed by its published input nodes', async () => {
      await publishWorkflow(service, 'cli-greet', yamlWorkflow());
      const ref = `${service.account.orgSlug}/cli-greet`;
      for (const target of [ref, `${ref}@1`, `${ref}@latest`, `${ref}@1.0.0`]) {
        const result = await svc(['run', target, '-i', 'name=007']);
        expect({ target, code: result.code, stdout: result.stdout }).toEqual({ target, code: 0, stdout: 'greeting: Hello, 007\n' });
      }
      const unknown = await svc(['run', `${ref}@1`, '-i', 'nmae=x']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('the workflow has no input "nmae"; its inputs: name (TEXT)');

      const missing = await svc(['run', `${service.account.orgSlug}/never-published`]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('(not_found)');
    });

    it('gives IMAGE inputs a ref from @<url> or an upload from @<file>', async () => {
      fs.writeFileSync(path.join(home.dir, 'image.yaml'), IMAGE_YAML);
      const byUrl = await svc(['run', 'image.yaml', '-i', `photo=@${assetsUrl}/any-name`, '--json']);
      expect(byUrl.code).toBe(0);
      expect(JSON.parse(byUrl.stdout).outputs.width).toEqual({ kind: 'int', value: 40 });

      const byFile = await svc(['run', 'image.yaml', '-i', 'photo=@red.png']);
      expect(byFile.code).toBe(0);
      expect(byFile.stdout).toBe('width: 40\n');
      expect(byFile.stderr).toContain('uploaded red.png');
    });

    it('says what is wrong with the argument: a directory, no such file and not a ref', async () => {
      fs.mkdirSync(path.join(home.dir, 'acme'), { recursive: true });
      const neither = await svc(['run', 'missing.yaml']);
      expect(neither.code).toBe(2);
      expect(neither.stderr).toContain('no file named missing.yaml, and missing.yaml is not a workflow ref such as acme/flow@1');
      const directory = await svc(['run', 'acme']);
      expect(directory.code).toBe(2);
      expect(directory.stderr).toContain('acme is a directory');

      fs.writeFileSync(path.join(home.dir, 'broken.yaml'), 'version: 2\nnodes: [ {\n');
      const broken = await svc(['run', 'broken.yaml']);
      expect(broken.code).toBe(2);
      expect(broken.stderr).toContain('broken.yaml is not valid YAML');
    });

    it('exits 2 for inputs of the wrong type, before anything runs', async () => {
      for (const [input, message] of [
        ['count=1.5', 'input "count" (INT) takes a whole number, got "1.5"'],
        ['trim=yes', 'input "trim" (BOOLEAN) takes true or false, got "yes"'],
        ['person={name}', 'input "person" (STRUCTURED) takes JSON'],
        ['nobody=1', 'the workflow has no input "nobody"; its inputs: count (INT), half (FLOAT), trim (BOOLEAN), person (STRUCTURED)'],
      ] as const) {
        const result = await svc(['run', 'typed.json', '-i', input, '-i', input.startsWith('person') ? 'count=1' : 'person={}']);
        expect({ input, code: result.code }).toEqual({ input, code: 2 });
        expect(result.stderr).toContain(message);
      }
      const required = await svc(['run', 'greet.yaml']);
      expect(required.code).toBe(2);
      expect(required.stderr).toMatch(/"name".*required.*\(validation_failed\)/);
    });

    it('exits 1 for a failed run (a cap too low), with the run id; --json reports the error', async () => {
      const failed = await svc(['run', 'greet.yaml', '-i', 'name=x', '--max-cost', '0.000001']);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^run\.failed spend_cap_exceeded: /m);
      expect(failed.stderr).toMatch(/^svc: .*\(spend_cap_exceeded\)\nrun [0-9a-f-]{36}$/m);
      expect(failed.stdout).toBe('');

      const json = await svc(['run', 'greet.yaml', '-i', 'name=x', '--max-cost', '0.000001', '--json']);
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'spend_cap_exceeded' }, runId: expect.stringMatching(/^[0-9a-f-]{36}$/), costUsd: 0 });
    });

    it('exits 4 when the organization has no credit', async () => {
      const broke = await seedAccount(service.prisma, { slug: 'broke', scopes: ['read', 'run'], balanceMicros: 0 });
      const result = await svc(['run', 'greet.yaml', '-i', 'name=x'], { SERVICE_TOKEN: broke.token });
      expect(result.code).toBe(4);
      expect(result.stderr).toContain('(insufficient_credit)');
    });

    it('stops following at Ctrl-C: exit 130, the run id and how to get its result', async () => {
      fs.writeFileSync(path.join(home.dir, 'slow.json'), JSON.stringify(SLOW));
      const child = home.spawn(['run', 'slow.json'], { env: signedIn });
      const done = finished(child);
      const [, runId] = await stderrMatching(child, /^run\.started ([0-9a-f-]{36})$/m);
      await stderrMatching(child, /^step\.progress wait pausing/m);
      child.kill('SIGINT');
      const result = await done;
      expect(result.code).toBe(130);
      expect(result.stderr).toContain(`Stopped following from run ${runId}; it goes on. Its result: GET ${service.url}/v1/runs/${runId}`);
      expect(result.stdout).toBe('');
    });
  });

  describe('cancelling at Ctrl-C', () => {
    const runStatus = async (runId: string) => (await service.prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } })).status;

    it('--on-interrupt cancel: Ctrl-C cancels the run, says so and what it cost, exit 130', async () => {
      fs.writeFileSync(path.join(home.dir, 'slow.json'), JSON.stringify(SLOW));
      const child = home.spawn(['run', 'slow.json', '--on-interrupt', 'cancel'], { env: signedIn });
      const done = finished(child);
      const [, runId] = await stderrMatching(child, /^run\.started ([0-9a-f-]{36})$/m);
      await stderrMatching(child, /^step\.progress wait pausing/m);
      child.kill('SIGINT');
      const result = await done;
      expect(result.code).toBe(130);
      expect(result.stderr).toContain(`Cancelled run ${runId}; it cost $0.`);
      expect(result.stderr).toContain('svc: interrupted (Ctrl-C); the run was cancelled');
      expect(await runStatus(runId!)).toBe('cancelled');
    });

    it('asks on a terminal: y cancels the run; without a terminal nothing is asked and the run goes on', async () => {
      requireScript();
      fs.writeFileSync(path.join(home.dir, 'slow.json'), JSON.stringify(SLOW));
      const child = spawnInTerminal(home, ['run', 'slow.json'], { env: signedIn });
      const done = finished(child);
      const [, runId] = await stdoutMatching(child, /run ([0-9a-f-]{36})/);
      await stdoutMatching(child, /pausing/);
      child.stdin.write('\x03');
      await stdoutMatching(child, new RegExp(`Cancel run ${runId}\\? .*\\[y/N\\]`));
      child.stdin.write('y\r');
      const result = await done;
      expect(result.stdout).toContain(`Cancelled run ${runId}`);
      expect(await runStatus(runId!)).toBe('cancelled');

      // The earlier test's plain Ctrl-C had no terminal: its run was left going (cancelled here).
      const detached = home.spawn(['run', 'slow.json'], { env: signedIn });
      const ended = finished(detached);
      const [, goesOn] = await stderrMatching(detached, /^run\.started ([0-9a-f-]{36})$/m);
      await stderrMatching(detached, /^step\.progress wait pausing/m);
      detached.kill('SIGINT');
      expect((await ended).stderr).not.toContain('Cancel run');
      expect(await runStatus(goesOn!)).toBe('running');
      await fetch(`${service.url}/v1/runs/${goesOn}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${service.account.token}` } });
    });

    it('--estimate prints what the run would cost, node by node, and whether it fits; nothing runs', async () => {
      const before = await service.prisma.run.count();
      const result = await svc(['run', 'greet.yaml', '-i', 'name=Ada', '--estimate', '--max-cost', '0.25']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^NODE\s+USES\s+WORST CASE\s+EXPECTED$/m);
      expect(result.stdout).toMatch(/^hello\s+text-regex-replace\s+\$0\.0000\d\d\s+\$0\.0000\d\d/m);
      expect(result.stdout).toContain('cap $0.250000: the worst case fits');
      expect(result.stdout).toContain('Nothing ran.');
      const json = await svc(['run', 'greet.yaml', '-i', 'name=Ada', '--estimate', '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({ nodes: [{ nodeId: 'hello', uses: 'text-regex-replace' }], fitsCap: true, fitsBalance: true, maxCostUsd: 0.5 });
      expect(await service.prisma.run.count()).toBe(before);
    });

    it('--webhook and --webhook-events ask for a webhook; a private address or an unknown event is a usage error', async () => {
      fs.writeFileSync(path.join(home.dir, 'quick.json'), JSON.stringify({ version: 2, nodes: [{ id: 'wait', uses: 'test-pause', inputs: { ms: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${wait.done}' } }] }));
      const ok = await svc(['run', 'quick.json', '--webhook', 'https://hooks.example.com/svc', '--webhook-events', 'run.started,run.completed', '--json']);
      expect(ok.code).toBe(0);
      const { runId } = JSON.parse(ok.stdout) as { runId: string };
      const hook = await service.prisma.runWebhook.findUniqueOrThrow({ where: { runId } });
      expect(hook).toMatchObject({ url: 'https://hooks.example.com/svc', events: ['run.started', 'run.completed'] });
      const privateUrl = await svc(['run', 'quick.json', '--webhook', 'http://10.0.0.8/hook']);
      expect(privateUrl.code).toBe(2);
      expect(privateUrl.stderr).toContain('the Webhook-Url header names 10.0.0.8, a private address');
      const unknown = await svc(['run', 'quick.json', '--webhook', 'https://hooks.example.com/svc', '--webhook-events', 'run.exploded']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('unknown: run.exploded');
    });

    it('--output-cache sends the run its output cache mode; an unknown mode is a usage error', async () => {
      fs.writeFileSync(path.join(home.dir, 'quick.json'), JSON.stringify({ version: 2, nodes: [{ id: 'wait', uses: 'test-pause', inputs: { ms: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${wait.done}' } }] }));
      const ok = await svc(['run', 'quick.json', '--output-cache', 'off', '--json']);
      expect(ok.code).toBe(0);
      const { runId } = JSON.parse(ok.stdout) as { runId: string };
      expect(await service.prisma.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ outputCache: 'off' });
      const bad = await svc(['run', 'quick.json', '--output-cache', 'sometimes']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('must be one of auto, llm, off');
    });

    it('--max-duration sends the run its deadline; a bad value is a usage error', async () => {
      fs.writeFileSync(path.join(home.dir, 'quick.json'), JSON.stringify({ version: 2, nodes: [{ id: 'wait', uses: 'test-pause', inputs: { ms: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${wait.done}' } }] }));
      const ok = await svc(['run', 'quick.json', '--max-duration', '120', '--json']);
      expect(ok.code).toBe(0);
      const { runId } = JSON.parse(ok.stdout) as { runId: string };
      const row = await service.prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { createdAt: true, deadlineAt: true } });
      expect(row.deadlineAt!.getTime() - row.createdAt.getTime()).toBe(120_000);
      const bad = await svc(['run', 'quick.json', '--max-duration', '0']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('give a whole number of seconds from 1 to 604800');
    });
  });

  describe('credentials and the base URL', () => {
    it('exits 3 without a token, and with a refused one', async () => {
      const none = await svc(['run', 'greet.yaml', '-i', 'name=x'], {});
      expect(none.code).toBe(3);
      expect(none.stderr).toContain(`not signed in to ${service.url}: run \`svc login\` or set SERVICE_TOKEN`);
      const refused = await svc(['whoami'], { SERVICE_TOKEN: 'svc_not-a-real-token' });
      expect(refused.code).toBe(3);
      expect(refused.stderr).toContain('(unauthorized)');
    });

    it('takes --url over SERVICE_URL over the saved login\'s URL, and exits 5 when nothing answers', async () => {
      const dead = 'http://127.0.0.1:9';
      const viaFlag = await svc(['whoami', '--url', service.url], { ...signedIn, SERVICE_URL: dead });
      expect(viaFlag.code).toBe(0);
      expect(viaFlag.stdout).toContain(`service       ${service.url}`);

      const unreachable = await svc(['whoami'], { ...signedIn, SERVICE_URL: dead });
      expect(unreachable.code).toBe(5);
      expect(unreachable.stderr).toContain(`could not reach the service at ${dead}`);

      // A saved login names the URL when neither the flag nor the variable does.
      const saved = new CliHome();
      try {
        writeSavedLogin(saved, service.url, service.account.token);
        const fromFile = await saved.run(['whoami']);
        expect(fromFile.code).toBe(0);
        expect(fromFile.stdout).toContain('(from saved login)');
        // SERVICE_URL wins over it, and the saved token is not sent to another service.
        const elsewhere = await saved.run(['whoami'], { env: { SERVICE_URL: dead } });
        expect(elsewhere.code).toBe(3);
        expect(elsewhere.stderr).toContain(`the saved login is for ${service.url}`);
      } finally {
        saved.remove();
      }
    });

    it('takes SERVICE_TOKEN over the saved token', async () => {
      const saved = new CliHome();
      try {
        writeSavedLogin(saved, service.url, 'svcs_revoked-or-garbage');
        expect((await saved.run(['whoami'])).code).toBe(3);
        const withEnv = await saved.run(['whoami', '--json'], { env: { SERVICE_TOKEN: service.account.token } });
        expect(withEnv.code).toBe(0);
        expect(JSON.parse(withEnv.stdout)).toMatchObject({ organization: { slug: service.account.orgSlug }, token: { kind: 'personal' } });
      } finally {
        saved.remove();
      }
    });
  });
});

function writeSavedLogin(home: CliHome, url: string, token: string): void {
  fs.mkdirSync(path.dirname(home.configFile), { recursive: true, mode: 0o700 });
  fs.writeFileSync(home.configFile, JSON.stringify({ url, token, savedAt: new Date().toISOString() }), { mode: 0o600 });
}

const GREET_YAML = `# A greeting, as a person would write it for svc run.
version: 2
nodes:
  - id: name
    uses: input
    outputType: TEXT
  - id: hello
    uses: text-regex-replace
    inputs: { text: "\${name.value}", pattern: "^", replacement: "Hello, " }
  - id: greeting
    uses: output
    inputs: { value: "\${hello.text}" }
`;

/** The terminal's escape character, built so that the regular expressions made of it say what they match (no-control-regex). */
const ESC = String.fromCharCode(27);

/** Two steps, so the live display has more than one line to redraw. */
const TWO_STEPS_YAML = `version: 2
nodes:
  - { id: name, uses: input, outputType: TEXT }
  - { id: hello, uses: text-regex-replace, inputs: { text: "\${name.value}", pattern: "^", replacement: "Hello, " } }
  - { id: bang, uses: text-regex-replace, inputs: { text: "\${hello.text}", pattern: "$", replacement: "!" } }
  - { id: greeting, uses: output, inputs: { value: "\${bang.text}" } }
`;

function yamlWorkflow(): unknown {
  return {
    version: 2,
    nodes: [
      { id: 'name', uses: 'input', outputType: 'TEXT' },
      { id: 'hello', uses: 'text-regex-replace', inputs: { text: '${name.value}', pattern: '^', replacement: 'Hello, ' } },
      { id: 'greeting', uses: 'output', inputs: { value: '${hello.text}' } },
    ],
  };
}

const TYPED = {
  version: 2,
  nodes: [
    { id: 'count', uses: 'input', outputType: 'INT' },
    { id: 'half', uses: 'input', outputType: 'FLOAT', inputs: { default: 0.5 } },
    { id: 'trim', uses: 'input', outputType: 'BOOLEAN', inputs: { default: true } },
    { id: 'person', uses: 'input', outputType: 'STRUCTURED' },
    { id: 'add', uses: 'math-add', inputs: { a: '${count.value}', b: '${half.value}' } },
    { id: 'split', uses: 'text-split', inputs: { text: 'a , b', separator: ',', trim: '${trim.value}' } },
    { id: 'sum', uses: 'output', inputs: { value: '${add.result}' } },
    { id: 'parts', uses: 'output', inputs: { value: '${split.parts}' } },
    { id: 'who', uses: 'output', inputs: { value: '${person.value}' } },
  ],
};

const IMAGE_YAML = `version: 2
nodes:
  - { id: photo, uses: input, outputType: IMAGE }
  - { id: meta, uses: image-metadata, inputs: { image: "\${photo.value}" } }
  - { id: width, uses: output, inputs: { value: "\${meta.width}" } }
`;

const SLOW = {
  version: 2,
  nodes: [
    { id: 'wait', uses: 'test-pause', inputs: { ms: 20_000 } },
    { id: 'out', uses: 'output', inputs: { value: '${wait.done}' } },
  ],
};
