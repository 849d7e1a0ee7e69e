import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Download, Locator, Page } from 'playwright-core';
import sharp from 'sharp';
import { MembershipRepository } from '../../services/store';
import { createPasswordUser } from '../support/browser-session';
import { eventually } from '../support/eventually';
import { CliHome, finished, stderrMatching } from '../support/cli-process';
import { ensureCliBuilt } from '../support/cli-build';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { dragBetween, launchChromium, screenshot, watchProblems } from '../support/studio-browser';
import { openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { pauseNode } from '../support/test-nodes';

/**
 * The studio's acceptance, end to end in Chromium against the real stack (API and worker,
 * Postgres, Redis, blobs, the local espeak-ng and ffmpeg nodes): sign in; build a workflow from
 * the palette by dragging and connecting; see a validation error on its node and fix it; run it
 * and see an image and audio come out; publish 1.0.0 and 1.1.0; roll back to 1.0.0 and see the
 * API answer 1.0.0; create a token and use it; approve the code of a real `svc login`; reload in
 * the middle of a run and see it go on. Each main screen is saved under test/e2e/artifacts.
 *
 * The steps share one browser session and build on each other, as a person's visit would.
 */
jest.setTimeout(90_000);

describe('the studio, end to end in Chromium', () => {
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let user: { id: string; email: string; password: string };
  const problems: string[] = [];
  let workflowId = '';
  let address = '';
  // An OpenAI stand-in whose answers wait for `openLlm()`, behind a limit of one call at once.
  let llm: LlmFake;
  let openLlm!: () => void;
  const llmGate = new Promise<void>((resolve) => (openLlm = resolve));

  beforeAll(async () => {
    ensureCliBuilt();
    const reply = openAiStream(['A red fox.'], { prompt: 10, completion: 4 });
    llm = await startLlmFake(async (res, req) => {
      await llmGate;
      await reply(res, req);
    });
    service = await startTestService({
      nodes: [pauseNode],
      env: { OPENAI_API_KEY: 'sk-e2e-0123456789abcdef', OPENAI_BASE_URL: `${llm.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: 'fake-model=1.25/5.00', PROVIDER_LIMITS: 'openai: calls=1' },
    });
    user = await createPasswordUser(service.prisma, service.account.orgId, 'owner');
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: service.url, viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    watchProblems(page, problems);
  }, 120_000);

  afterAll(async () => {
    openLlm();
    await browser?.close();
    await service?.close();
    await llm?.close();
  });

  const runCount = async () => ((await (await api('/v1/runs?limit=100')).json()) as { runs: unknown[] }).runs.length;
  const api = (path: string, init: RequestInit = {}) => fetch(`${service.url}${path}`, { ...init, headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', ...(init.headers ?? {}) } });

  it('signs in and shows the organization with its balance', async () => {
    await page.goto('/');
    await page.waitForURL(/\/sign-in\?next=/);
    await screenshot(page, 'studio-01-sign-in');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workflows' }).waitFor();
    await expectText(page.getByTestId('balance'), '$100.00');
    await screenshot(page, 'studio-02-workflows-empty');
  });

  it('builds a workflow from the palette by dragging and connecting, with a validation error shown on its node and fixed', async () => {
    await page.getByRole('button', { name: /New workflow/ }).first().click();
    await page.getByLabel('Name').fill('Speak and draw');
    await page.getByRole('button', { name: 'Create and open' }).click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
    workflowId = page.url().split('/').pop()!;
    await page.getByTestId('palette-input').waitFor();

    const pane = page.locator('.react-flow__pane');
    // Each node is dropped on an empty corner of the canvas, then the graph is laid out again and
    // fitted into view, so the handles to connect are where a person would see them.
    const drop = async (paletteKey: string, nodeId: string) => {
      await page.getByTestId(`palette-${paletteKey}`).dragTo(pane, { targetPosition: { x: 120, y: 520 } });
      await page.getByTestId(`node-${nodeId}`).waitFor();
      await page.getByRole('button', { name: 'Auto-layout' }).click();
      await page.getByRole('button', { name: 'Fit view', exact: true }).click();
    };
    await drop('input', 'input');
    await drop('speech-espeak', 'speech_espeak');
    // A text-to-speech node without its text: the engine's check names the missing input on the node.
    await expectAttribute(page.getByTestId('node-speech_espeak'), 'aria-label', /problem/);
    await page.getByTestId('node-speech_espeak').click();
    await screenshot(page, 'studio-03-editor-validation-error');
    await dragBetween(page, 'handle-input-out-value', 'handle-speech_espeak-in-text');
    // Fixed by the connection: the node no longer reports a problem.
    await expectAttribute(page.getByTestId('node-speech_espeak'), 'aria-label', (label) => !/problem/.test(label));

    await drop('audio-waveform', 'audio_waveform');
    await dragBetween(page, 'handle-speech_espeak-out-audio', 'handle-audio_waveform-in-audio');
    await drop('output', 'output');
    await dragBetween(page, 'handle-speech_espeak-out-audio', 'handle-output-in-value');
    await drop('output', 'output_2');
    await dragBetween(page, 'handle-audio_waveform-out-image', 'handle-output_2-in-value');
    await page.getByRole('button', { name: 'Auto-layout' }).click();
    await page.getByRole('button', { name: 'Fit view', exact: true }).click();
    await screenshot(page, 'studio-04-editor-connected');

    // The draft is saved to the server, valid.
    await eventually(async () => ((await (await api(`/editor/workflows/${workflowId}`)).json()) as { problems: unknown[] }).problems.length === 0, {
      timeoutMs: 10_000,
      what: 'the saved draft to have no problems',
    });
    await expectText(page.getByTestId('save-state'), 'Saved');

    const saved = (await (await api(`/editor/workflows/${workflowId}`)).json()) as { draft: { nodes: { id: string; uses: string; inputs?: Record<string, unknown> }[] }; problems: unknown[]; layout: { nodes: Record<string, unknown> } };
    expect(saved.problems).toEqual([]);
    expect(Object.fromEntries(saved.draft.nodes.map((n) => [n.id, n.uses]))).toEqual({
      input: 'input',
      speech_espeak: 'speech-espeak',
      audio_waveform: 'audio-waveform',
      output: 'output',
      output_2: 'output',
    });
    expect(saved.draft.nodes.find((n) => n.id === 'speech_espeak')!.inputs).toMatchObject({ text: '${input.value}' });
    expect(saved.draft.nodes.find((n) => n.id === 'output_2')!.inputs).toMatchObject({ value: '${audio_waveform.image}' });
    expect(Object.keys(saved.layout.nodes).sort()).toEqual(['audio_waveform', 'input', 'output', 'output_2', 'speech_espeak']);

    // Nothing is lost on reload.
    await page.reload();
    await page.getByTestId('node-output_2').waitFor();
    await screenshot(page, 'studio-04-editor');
  });

  it('runs the draft and shows its outputs as what they are: audio and an image', async () => {
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const panel = page.locator('.run-panel');
    await panel.waitFor();
    await panel.locator('textarea, input[type="text"]').first().fill('hello from the studio');
    await panel.locator('.run-panel-foot button[type="submit"]').click();
    const image = panel.locator('img.output-media');
    const audio = panel.locator('audio.output-audio');
    await image.waitFor({ timeout: 60_000 });
    await audio.waitFor();
    await expectText(panel.locator('.badge').first(), 'completed');
    // The image really loaded and the audio really is audio.
    await eventually(() => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), { timeoutMs: 10_000, what: 'the output image to load' });
    const audioRef = await audio.getAttribute('src');
    const audioFile = await fetch(audioRef!);
    expect(audioFile.status).toBe(200);
    expect(audioFile.headers.get('content-type')).toMatch(/^audio\//);
    // The canvas lit up: every step completed.
    await expectAttribute(page.getByTestId('node-audio_waveform'), 'class', /completed/);
    await screenshot(page, 'studio-05-run-outputs');
    await panel.getByRole('button', { name: 'Close the run panel' }).click();
    // The saved draft ran under the workflow: the run history names it, not "inline".
    const [latest] = ((await (await api('/v1/runs?limit=1')).json()) as { runs: { workflowId: string | null; workflowName: string | null; workflowRef: string | null }[] }).runs;
    expect(latest).toMatchObject({ workflowId, workflowName: 'Speak and draw', workflowRef: null });
    await page.goto('/runs');
    await expectText(page.locator('table tbody tr').first(), 'Speak and draw · draft');
    await page.goto(`/workflows/${workflowId}`);
    await page.getByTestId('node-output_2').waitFor();
  });

  it('publishes 1.0.0 then 1.1.0, and rolls latest back to 1.0.0, which the API then answers', async () => {
    await page.getByRole('button', { name: /^Publish/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Slug').fill('speak-and-draw');
    await expectText(dialog, /available/i);
    await dialog.getByLabel(/note/i).fill('First version');
    await screenshot(page, 'studio-06-publish-first');
    await dialog.getByRole('button', { name: /^Publish .*1\.0\.0/ }).click();
    await dialog.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: /^Publish/ }).click();
    await page.getByRole('dialog').getByRole('radio', { name: /Minor/ }).check();
    await page.getByRole('dialog').getByLabel(/note/i).fill('Second version');
    await screenshot(page, 'studio-07-publish-minor');
    await page.getByRole('dialog').getByRole('button', { name: /^Publish .*1\.1\.0/ }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    const summary = (await (await api(`/editor/workflows/${workflowId}`)).json()) as { address: string; latest: { version: string } };
    address = summary.address;
    expect(summary.latest.version).toBe('1.1.0');

    await page.getByRole('button', { name: 'History' }).click();
    await page.getByRole('button', { name: 'Point latest at 1.0.0' }).click();
    await screenshot(page, 'studio-08-rollback-confirm');
    await page.getByRole('button', { name: 'Point @latest at 1.0.0' }).click();
    await eventually(async () => ((await (await api(`/v1/workflows/${encodeURIComponent(address)}`)).json()) as { version: string }).version === '1.0.0', {
      timeoutMs: 10_000,
      what: `GET /v1/workflows/${address} to answer 1.0.0`,
    });
    await screenshot(page, 'studio-09-history');
    await page.keyboard.press('Escape');
  });

  it('creates an API token that works against the API, shown once', async () => {
    await page.goto('/settings/tokens');
    await page.getByRole('button', { name: /New token/ }).first().click();
    await page.getByRole('dialog').getByLabel('Name').fill('ci pipeline');
    await page.getByRole('dialog').getByRole('button', { name: 'Create token' }).click();
    const value = await page.locator('textarea.token-value').inputValue();
    expect(value).toMatch(/^svc_/);
    await screenshot(page, 'studio-10-token-created');
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(value) });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { token: { name: string } }).token.name).toBe('ci pipeline');
    await page.getByRole('button', { name: 'I’ve saved it' }).click();
    await expectText(page.locator('main'), 'ci pipeline');
    await screenshot(page, 'studio-11-tokens');
  });

  it('approves the code of a real `svc login`, which then signs the CLI in', async () => {
    const home = new CliHome({ SERVICE_URL: service.url });
    try {
      const child = home.spawn(['login', '--no-browser']);
      const [, verificationPage] = await stderrMatching(child, /^\s+(http\S+)\s*\n\s*\n\s+code: ([A-Z]{4}-[A-Z]{4})$/m);
      await page.goto(verificationPage!);
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      await screenshot(page, 'studio-12-device-approve');
      await page.getByRole('button', { name: 'Approve' }).click();
      await expectText(page.locator('main'), 'You can return to your terminal');
      const login = await finished(child);
      expect(login.code).toBe(0);
      const whoami = await home.run(['whoami']);
      expect(whoami.code).toBe(0);
      expect(whoami.stdout + whoami.stderr).toContain(user.email);
    } finally {
      home.remove();
    }
  });

  it('keeps following a run across a page reload', async () => {
    const created = await api('/editor/workflows', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Slow chain',
        definition: {
          version: 2,
          nodes: [
            { id: 'first', uses: 'test-pause', inputs: { ms: 1500 } },
            { id: 'second', uses: 'test-pause', inputs: { ms: 1500, n: '${first.n}' } },
            { id: 'result', uses: 'output', inputs: { value: '${second.n}' } },
          ],
        },
      }),
    });
    const { id } = (await created.json()) as { id: string };
    await page.goto(`/workflows/${id}`);
    await page.getByTestId('node-second').waitFor();
    const runsBefore = await runCount();
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('.run-panel-foot button[type="submit"]').click();
    await expectAttribute(page.getByTestId('node-first'), 'class', /running/);
    await page.reload();
    // The run panel comes back by itself and follows the same run to its end.
    const panel = page.locator('.run-panel');
    await panel.waitFor({ timeout: 10_000 });
    await expectText(panel.locator('.badge').first(), 'completed', 20_000);
    await expectText(panel.locator('.output'), '2');
    await expectAttribute(page.getByTestId('node-second'), 'class', /completed/);
    await screenshot(page, 'studio-13-run-after-reload');
    // One run, not a second one started by the reload.
    expect(await runCount()).toBe(runsBefore + 1);
  });

  it('cancels a run from the run panel: the badge says cancelled, the API agrees', async () => {
    const created = await api('/editor/workflows', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Long wait',
        definition: { version: 2, nodes: [{ id: 'wait', uses: 'test-pause', inputs: { ms: 60_000 } }, { id: 'result', uses: 'output', inputs: { value: '${wait.n}' } }] },
      }),
    });
    const { id } = (await created.json()) as { id: string };
    await page.goto(`/workflows/${id}`);
    await page.getByTestId('node-wait').waitFor();
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    // Before it runs, the panel says what it would cost (runs.estimate): test-pause is free.
    await expectText(page.getByTestId('run-estimate'), 'Estimate: worst case $0.00');
    await screenshot(page, 'studio-13a-run-estimate');
    await page.locator('.run-panel-foot button[type="submit"]').click();
    await expectAttribute(page.getByTestId('node-wait'), 'class', /running/);
    const cancel = page.getByRole('button', { name: 'Cancel this run' });
    await screenshot(page, 'studio-13b-run-cancel-button');
    await cancel.click();
    const panel = page.locator('.run-panel');
    await expectText(panel.locator('.badge').first(), 'cancelled', 10_000);
    await expectText(panel.locator('.run-error'), 'cancelled by the user who started it');
    expect(await cancel.count()).toBe(0);
    await screenshot(page, 'studio-13c-run-cancelled');
    const runs = (await (await api(`/v1/runs?workflow=${id}`)).json()) as { runs: { status: string; error: { code: string } | null }[] };
    expect(runs.runs[0]).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
  });

  it('lists the runs and shows one run with its graph, steps and outputs, on a desktop and on a phone', async () => {
    await page.goto('/runs');
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await expectText(page.locator('table'), 'completed');
    await screenshot(page, 'studio-14-runs');
    await page.locator('table a[href^="/runs/"]').first().click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await page.locator('.react-flow__node').first().waitFor();
    await screenshot(page, 'studio-15-run-detail');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.locator('.react-flow__node').first().waitFor();
    await screenshot(page, 'studio-16-run-detail-phone');
    await page.goto('/runs');
    await expectText(page.locator('main'), 'completed');
    await screenshot(page, 'studio-17-runs-phone');
    const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('imports a YAML workflow file onto the canvas and exports the draft as JSON and YAML', async () => {
    const created = await api('/editor/workflows', { method: 'POST', body: JSON.stringify({ name: 'Imported' }) });
    const { id } = (await created.json()) as { id: string };
    await page.goto(`/workflows/${id}`);
    await page.getByTestId('palette-input').waitFor();
    const yamlText = [
      'version: 2',
      'nodes:',
      '  - id: a',
      '    uses: input',
      '    outputType: FLOAT',
      '  - id: sum',
      '    uses: math-add',
      '    inputs: { a: "${a.value}", b: 2 }',
      '  - id: result',
      '    uses: output',
      '    inputs: { value: "${sum.result}" }',
      '',
    ].join('\n');
    await page.locator('input[type="file"][accept*="yaml"]').setInputFiles({ name: 'adder.yaml', mimeType: 'application/yaml', buffer: Buffer.from(yamlText) });
    await page.getByTestId('node-sum').waitFor();
    await eventually(async () => ((await (await api(`/editor/workflows/${id}`)).json()) as { draft: { nodes: unknown[] } | null }).draft?.nodes.length === 3, {
      timeoutMs: 10_000,
      what: 'the imported draft to be saved',
    });

    const [jsonFile] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSON' }).click()]);
    const exported = JSON.parse(await readDownload(jsonFile)) as { version: number; nodes: { id: string; uses: string; inputs?: unknown }[] };
    expect(exported.version).toBe(2);
    expect(exported.nodes.map((n) => n.uses)).toEqual(['input', 'math-add', 'output']);
    expect(exported.nodes[1]!.inputs).toEqual({ a: '${a.value}', b: 2 });
    const [yamlFile] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export YAML' }).click()]);
    expect(yamlFile.suggestedFilename()).toMatch(/\.yaml$/);
    expect(await readDownload(yamlFile)).toContain('uses: math-add');
  });

  it('switches organization from the header, with that organization\'s name, balance and workflows', async () => {
    const other = await seedAccount(service.prisma, { slug: 'labs', scopes: ['read'], balanceMicros: 2_500_000 });
    await new MembershipRepository(service.prisma).create({ orgId: other.orgId, userId: user.id, role: 'member' });
    // The session lists organizations when it is read: a page load picks the new membership up.
    await page.goto('/');
    const switcher = page.getByRole('combobox', { name: 'Organization' });
    await switcher.selectOption(other.orgSlug);
    await expectText(page.getByTestId('balance'), '$2.50');
    await expectText(page.locator('main'), 'Build your first workflow');
    await screenshot(page, 'studio-18-switched-organization');
    await switcher.selectOption(service.account.orgSlug);
    await expectText(page.locator('main'), 'Speak and draw');
  });

  it('marks a step answered from the output cache: the same image run again costs nothing', async () => {
    const created = await api('/editor/workflows', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Image facts',
        definition: {
          version: 2,
          nodes: [
            { id: 'photo', uses: 'input', outputType: 'IMAGE' },
            { id: 'facts', uses: 'image-metadata', inputs: { image: '${photo.value}' } },
            { id: 'result', uses: 'output', inputs: { value: '${facts.metadata}' } },
          ],
        },
      }),
    });
    const { id } = (await created.json()) as { id: string };
    const png = await sharp({ create: { width: 4, height: 3, channels: 3, background: '#3a6' } }).png().toBuffer();
    await page.goto(`/workflows/${id}`);
    await page.getByTestId('node-facts').waitFor();
    const panel = page.locator('.run-panel');
    for (const pass of ['computed', 'cached']) {
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await panel.locator('input[type="file"]').setInputFiles({ name: 'green.png', mimeType: 'image/png', buffer: png });
      await panel.locator('.run-panel-foot button[type="submit"]').click();
      await expectText(panel.locator('.badge').first(), 'completed', 20_000);
      const cachedBadges = panel.locator('.step-meta .badge', { hasText: 'cached' });
      if (pass === 'computed') {
        expect(await cachedBadges.count()).toBe(0);
        await panel.getByRole('button', { name: 'Close the run panel' }).click();
      } else {
        await cachedBadges.first().waitFor();
        await screenshot(page, 'studio-19-run-cached-step');
        await panel.getByRole('button', { name: 'Close the run panel' }).click();
      }
    }
  });

  it('offers a newcomer an AI starter on the empty page, which reads a picture\'s text with a local model', async () => {
    // The organization switched to above has no workflow: its first screen is the empty state.
    await page.goto('/');
    const switcher = page.getByRole('combobox', { name: 'Organization' });
    await switcher.selectOption('labs');
    await expectText(page.locator('main'), 'Start from an AI example');
    await screenshot(page, 'studio-20-ai-starters');
    await page.getByTestId('starter-read-photo-text').click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
    await page.getByTestId('node-read').waitFor();
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const panel = page.locator('.run-panel');
    const sign = fs.readFileSync(path.join(__dirname, '../../docs/examples/assets/shop-sign.png'));
    await panel.locator('input[type="file"]').setInputFiles({ name: 'shop-sign.png', mimeType: 'image/png', buffer: sign });
    await panel.locator('.run-panel-foot button[type="submit"]').click();
    await expectText(panel.locator('.badge').first(), 'completed', 60_000);
    // PaddleOCR may run the words together; the letters are there.
    await expectText(panel.locator('.output').first(), /OPEN\s*EVERY\s*DAY/);
    await screenshot(page, 'studio-21-ai-starter-run');
    await panel.getByRole('button', { name: 'Close the run panel' }).click();
    await page.goto('/');
    await switcher.selectOption(service.account.orgSlug);
    await expectText(page.locator('main'), 'Speak and draw');
  });

  it("shows a step waiting its turn under a provider's limit, and why; the API's queue says the same", async () => {
    const chat = { version: 2, nodes: [{ id: 'describe', uses: 'openai-chat', inputs: { prompt: 'Describe a fox in one line.', model: 'fake-model', maxTokens: 16 } }, { id: 'out', uses: 'output', inputs: { value: '${describe.text}' } }] };
    const post = () => api('/v1/runs', { method: 'POST', body: JSON.stringify({ workflow: chat }) });
    // The first run's call holds openai's one slot (its answer waits); the second waits its turn.
    const first = await post();
    await eventually(() => llm.requests.length === 1, { timeoutMs: 15_000, what: 'the first call to reach the provider' });
    const second = await post();
    const [waiting] = ((await (await api('/v1/runs?limit=1')).json()) as { runs: { id: string }[] }).runs;
    await page.goto(`/runs/${waiting!.id}`);
    const badge = page.locator('.badge.waiting');
    await expectText(badge, 'waiting for openai');
    expect(await badge.getAttribute('title')).toBe("waiting for openai's limit (concurrent calls)");
    await page.locator('section[aria-label="Steps"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'studio-22-provider-limit-wait');
    const queue = (await (await api('/v1/queue')).json()) as { providerLimits: unknown[] };
    expect(queue.providerLimits).toEqual([{ provider: 'openai', waitingSteps: 1, blockedBy: 'calls' }]);
    openLlm();
    await Promise.all([first.text(), second.text()]);
    await expectText(page.locator('main'), 'completed', 30_000);
    expect(llm.requests).toHaveLength(2);
  });

  it('follows a batch on its page: progress while it runs, then its counts, spend and failed rows', async () => {
    // Rows with n = -1 divide by zero: they fail, and the page lists them with their error.
    const divide = {
      version: 2,
      nodes: [
        { id: 'n', uses: 'input', outputType: 'INT' },
        { id: 'p', uses: 'test-pause', inputs: { ms: 250, n: '${n.value}' } },
        { id: 'd', uses: 'math-divide', inputs: { a: 100, b: '${p.n}' } },
        { id: 'out', uses: 'output', inputs: { value: '${d.result}' } },
      ],
    };
    const rows = Array.from({ length: 30 }, (_, i) => ({ n: i === 4 || i === 16 ? -1 : i }));
    const created = await api('/v1/batches', { method: 'POST', body: JSON.stringify({ workflow: divide, rows, concurrency: 3, maxCostUsd: 0.5 }) });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await page.goto(`/batches/${id}`);
    await expectText(page.getByTestId('batch-progress-line'), /\d+ of 30 rows ended/);
    // A cap of one row's cap: one row at a time, and the page says why.
    await expectText(page.getByTestId('cap-hint'), 'A lower rowMaxCostUsd lets more run at once');
    await screenshot(page, 'studio-23-batch-running');
    await expectText(page.getByTestId('batch-status'), 'completed', 30_000);
    await expectText(page.locator('section[aria-label="Failed rows"]'), 'division by zero');
    expect(await page.locator('section[aria-label="Failed rows"] tbody tr').count()).toBe(2);
    await expectText(page.getByRole('button', { name: /Retry failed/ }), 'Retry failed (2)');
    await screenshot(page, 'studio-24-batch-done');
    await page.goto('/batches');
    await expectText(page.locator('main'), '30 / 30');
    await screenshot(page, 'studio-25-batches');
  });

  it('creates a schedule from the form, shows its ticks with their runs, and pauses it', async () => {
    const adderFlow = { version: 2, nodes: [{ id: 'add', uses: 'math-add', inputs: { a: 40, b: 2 } }, { id: 'sum', uses: 'output', inputs: { value: '${add.result}' } }] };
    const draft = (await (await api('/editor/workflows', { method: 'POST', body: JSON.stringify({ name: 'nightly', definition: adderFlow }) })).json()) as { id: string };
    expect((await api(`/editor/workflows/${draft.id}/publish`, { method: 'POST', body: JSON.stringify({ slug: 'e2e-nightly' }) })).status).toBe(201);
    await page.goto('/schedules');
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByRole('textbox', { name: /Workflow/ }).fill(`${service.account.orgSlug}/e2e-nightly@latest`);
    await page.getByRole('textbox', { name: /Cron/ }).fill('0 9 * *');
    await page.getByRole('textbox', { name: /Time zone/ }).fill('Europe/Paris');
    await page.getByRole('textbox', { name: /^Name/ }).fill('Nightly sums');
    await page.getByRole('textbox', { name: /Monthly budget/ }).fill('5');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await expectText(page.locator('[role="alert"]'), 'has 4 fields; write five');
    await screenshot(page, 'studio-26-schedule-form-error');
    // That refusal is the 400 the browser logs as a failed resource: expected here, not a problem.
    const refused = problems.findIndex((p) => /\/schedules: console: Failed to load resource: the server responded with a status of 400/.test(p));
    expect(refused).toBeGreaterThanOrEqual(0);
    problems.splice(refused, 1);
    await page.getByRole('textbox', { name: /Cron/ }).fill('0 9 * * 1-5');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.waitForURL(/\/schedules\/[0-9a-f-]{36}$/);
    const scheduleId = page.url().split('/').pop()!;
    await expectText(page.locator('main'), 'Nightly sums');
    // Two ticks, run by the worker's ticker at their times.
    const { nextTicks } = (await (await api(`/v1/schedules/${scheduleId}`)).json()) as { nextTicks: string[] };
    for (const tick of nextTicks.slice(0, 2)) await service.runtime.schedules!.sweep(new Date(Date.parse(tick) + 100));
    await eventually(async () => ((await (await api(`/v1/runs?schedule=${scheduleId}`)).json()) as { runs: { status: string }[] }).runs.filter((r) => r.status === 'completed').length === 2 || null, { timeoutMs: 15_000 });
    await page.reload();
    await expectText(page.locator('section[aria-label="Latest ticks"]'), 'completed');
    expect(await page.locator('section[aria-label="Latest ticks"] tbody tr').count()).toBe(2);
    await screenshot(page, 'studio-27-schedule');
    await page.getByRole('button', { name: 'Pause' }).click();
    await expectText(page.getByTestId('pause-reason'), 'paused by a caller');
    await page.goto('/schedules');
    await expectText(page.locator('main'), 'Nightly sums');
    await screenshot(page, 'studio-28-schedules');
  });

  it('said nothing wrong in the console along the way', () => {
    expect(problems).toEqual([]);
  });
});

/** The text of a file the page downloaded. */
async function readDownload(download: Download): Promise<string> {
  const stream = await download.createReadStream();
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Waits until the element's text contains (or matches) `expected`. */
async function expectText(locator: Locator, expected: string | RegExp, timeoutMs = 15_000): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      last = (await locator.allInnerTexts()).join('\n');
      return typeof expected === 'string' ? last.includes(expected) : expected.test(last);
    },
    { timeoutMs, intervalMs: 100, what: `text ${String(expected)} (last seen: ${JSON.stringify(last.slice(0, 300))})` },
  );
}

/** Waits until an attribute of the element matches. */
async function expectAttribute(locator: Locator, name: string, expected: RegExp | ((value: string) => boolean), timeoutMs = 15_000): Promise<void> {
  const ok = (value: string | null) => value !== null && (typeof expected === 'function' ? expected(value) : expected.test(value));
  await eventually(async () => ok(await locator.getAttribute(name)), { timeoutMs, intervalMs: 100, what: `attribute ${name} to match ${String(expected)}` });
}
