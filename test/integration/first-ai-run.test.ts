import fs from 'node:fs';
import path from 'node:path';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome } from '../support/cli-process';
import { startTestService, type TestService } from '../support/service';

/**
 * The README's first example, as a newcomer runs it after `make run`: the `svc` CLI uploads the
 * picture and runs a real OCR model on the service's own machines (no key), and prints what the
 * model read.
 */

const ROOT = path.join(__dirname, '../..');
const COMMAND = 'npx svc run docs/examples/read-text.yaml -i image=@docs/examples/assets/shop-sign.png';

describe("the README's first AI run", () => {
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

  it('is the command the README shows first', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const firstCommand = readme.split('\n').find((line) => line.startsWith('npx svc run '));
    expect(firstCommand?.split('#')[0]!.trim()).toBe(COMMAND);
  });

  it('reads the text of the example picture with the local OCR model, and prints it', async () => {
    const args = COMMAND.split(' ').slice(2);
    const result = await home.run([...args, '--json'], { cwd: ROOT, timeoutMs: 120_000 });
    expect(result.code).toBe(0);
    // Progress on stderr: the upload, then the step and the run with their cost.
    expect(result.stderr).toMatch(/^uploaded docs\/examples\/assets\/shop-sign.png .* as image image\/png$/m);
    expect(result.stderr).toMatch(/^step.completed read \$0\.\d+/m);
    const body = JSON.parse(result.stdout) as { outputs: { text: { value: string }; lines: { value: { text: string }[] } }; costUsd: number };
    // PaddleOCR may drop the spaces between English words: compare the letters.
    const letters = (text: string) => text.replace(/\s+/g, '').toLowerCase();
    expect(letters(body.outputs.text.value)).toContain('openeveryday');
    expect(letters(body.outputs.text.value)).toContain('freshbread8amto6pm');
    expect(body.outputs.lines.value).toHaveLength(2);
    // Priced like any node: its CPU time, more than nothing.
    expect(body.costUsd).toBeGreaterThan(0);

    // On a terminal-less stdout without --json: the outputs, readable.
    const plain = await home.run(args, { cwd: ROOT, timeoutMs: 120_000 });
    expect(plain.code).toBe(0);
    expect(letters(plain.stdout)).toContain('openeveryday');
  });
});
