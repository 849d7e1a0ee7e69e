import type { Workflow } from '../../services/contract';
import { LedgerRepository } from '../../services/store';
import { bearer, publishWorkflow, startTestService, type TestService } from '../support/service';

/**
 * Values known before a run (run inputs, input defaults, consts, what reaches mounted workflows)
 * are checked against the ports they feed before the stream: a 400 naming the node, the port
 * and the input, with no run stored and nothing charged, instead of a step failing after earlier
 * steps ran and were paid for.
 */
describe('checks before the run', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  const headers = () => ({ ...bearer(service.account.token), 'Content-Type': 'application/json' });
  const post = (path: string, body: unknown) => fetch(`${service.url}${path}`, { method: 'POST', headers: headers(), body: typeof body === 'string' ? body : JSON.stringify(body) });


  /** Posts and expects a 400 JSON answer (no stream) with no run stored and nothing charged; returns its message. */
  async function refusedBeforeTheRun(path: string, body: unknown): Promise<string> {
    const ledger = new LedgerRepository(service.prisma);
    const where = { where: { orgId: service.account.orgId } };
    const [runsBefore, balanceBefore] = [await service.prisma.run.count(where), await ledger.balance(service.account.orgId)];
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const { error } = (await res.json()) as { error: string };
    expect(await service.prisma.run.count(where)).toBe(runsBefore);
    expect(await ledger.balance(service.account.orgId)).toBe(balanceBefore);
    return error;
  }

  /** text → speech-espeak(voice, speed) → audio-convert(format) → out. */
  const speech = (inputs: Workflow['nodes']): Workflow => ({
    version: 2,
    nodes: [
      ...inputs,
      { id: 'tts', uses: 'speech-espeak', inputs: { text: 'Hello there', voice: '${voice.value}', speed: '${sp.value}' } },
      { id: 'convert', uses: 'audio-convert', inputs: { audio: '${tts.audio}', format: '${fmt.value}' } },
      { id: 'out', uses: 'output', inputs: { value: '${convert.audio}' } },
    ],
  });
  const defaults = (values: { voice?: string; sp?: number; fmt?: string } = {}): Workflow['nodes'] => [
    { id: 'voice', uses: 'input', outputType: 'TEXT', inputs: { default: values.voice ?? 'en-us' } },
    { id: 'sp', uses: 'input', outputType: 'INT', inputs: { default: values.sp ?? 175 } },
    { id: 'fmt', uses: 'input', outputType: 'TEXT', inputs: { default: values.fmt ?? 'mp3' } },
  ];

  it('refuses a format downstream of speech-espeak before espeak runs or is charged', async () => {
    const message = await refusedBeforeTheRun('/v1/runs', { workflow: speech(defaults()), inputs: { fmt: { value: 'flac' } } });
    expect(message).toMatch(/"convert": input "format" \(from run input "fmt"\) must be one of .*"mp3".*, got "flac"/);
  });

  it('refuses an espeak voice outside its options, given as a run input or as the input’s default', async () => {
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: speech(defaults()), inputs: { voice: { value: 'klingon' } } })).toMatch(
      /"tts": input "voice" \(from run input "voice"\) must be one of .*, got "klingon"/,
    );
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: speech(defaults({ voice: 'klingon' })) })).toMatch(
      /"tts": input "voice" \(from the default of input "voice"\) must be one of .*, got "klingon"/,
    );
  });

  it('refuses a speed under the port’s minimum', async () => {
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: speech(defaults()), inputs: { sp: { value: 5 } } })).toContain('"tts": input "speed" (from run input "sp") must be an INT between 80 and 450, got 5');
  });

  it('refuses a const node’s value outside the options of the port it feeds', async () => {
    const nodes = defaults().map((n) => (n.id === 'fmt' ? ({ id: 'fmt', uses: 'const', outputType: 'TEXT', inputs: { value: 'flac' } }) as const : n));
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: speech(nodes) })).toContain('"convert": input "format" (from const node "fmt") must be one of');
  });

  it('refuses the same values for a published workflow run by workflowRef, and for one mounted in another', async () => {
    await publishWorkflow(service, 'say-prerun', speech(defaults()));
    expect(await refusedBeforeTheRun('/v1/runs', { workflowRef: `${service.account.orgSlug}/say-prerun@latest`, inputs: { voice: { value: 'klingon' } } })).toContain(
      '"tts": input "voice" (from run input "voice") must be one of',
    );
    expect(await refusedBeforeTheRun('/v1/runs', { workflowRef: `${service.account.orgSlug}/say-prerun`, inputs: { fmt: { value: 'flac' } } })).toContain('"convert": input "format" (from run input "fmt") must be one of');

    const mounting = (voice: string): Workflow => ({
      version: 2,
      nodes: [
        { id: 'v', uses: 'input', outputType: 'TEXT', inputs: { default: voice } },
        { id: 'say', uses: `${service.account.orgSlug}/say-prerun`, inputs: { voice: '${v.value}', sp: 120 } },
        { id: 'out', uses: 'output', inputs: { value: '${say.out}' } },
      ],
    });
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: mounting('klingon') })).toContain('"say__tts": input "voice" (from the default of input "v") must be one of');
    expect(await refusedBeforeTheRun('/v1/runs', { workflow: mounting('en-us'), inputs: { v: { value: 'klingon' } } })).toContain('"say__tts": input "voice" (from run input "v") must be one of');
  });

  it('refuses a runs.node value outside a port’s options or bounds', async () => {
    expect(await refusedBeforeTheRun('/v1/runs/node', { node: 'speech-espeak', inputs: { text: 'hi', voice: 'klingon' } })).toContain('input "voice" must be one of');
    expect(await refusedBeforeTheRun('/v1/runs/node', { node: 'speech-espeak', inputs: { text: 'hi', speed: 5 } })).toContain('input "speed" must be an INT between 80 and 450, got 5');
  });

  it.each(['constructor', 'toString'])('answers a node input named %s with a 400 naming the unknown input, on runs.create and runs.node', async (name) => {
    // Raw JSON: "__proto__" must reach the server as an own key, as any client can send it.
    const workflow = `{"version":2,"nodes":[{"id":"tts","uses":"speech-espeak","inputs":{"text":"hi","${name}":1}},{"id":"out","uses":"output","inputs":{"value":"\${tts.audio}"}}]}`;
    expect(await refusedBeforeTheRun('/v1/runs', `{"workflow":${workflow}}`)).toContain(`"speech-espeak" has no input "${name}"; its inputs are: text, voice, speed, format`);
    expect(await refusedBeforeTheRun('/v1/runs/node', `{"node":"speech-espeak","inputs":{"text":"hi","${name}":1}}`)).toContain(`"speech-espeak" has no input "${name}"`);
  });

  it('answers a key named __proto__ anywhere in a body with a 400 naming where it is, on runs.create and runs.node', async () => {
    // Raw JSON: "__proto__" must reach the server as an own key, as any client can send it.
    const workflow = `{"version":2,"nodes":[{"id":"tts","uses":"speech-espeak","inputs":{"text":"hi","__proto__":null}},{"id":"out","uses":"output","inputs":{"value":"\${tts.audio}"}}]}`;
    expect(await refusedBeforeTheRun('/v1/runs', `{"workflow":${workflow}}`)).toContain('a key named "__proto__" is not accepted (at workflow.nodes[0].inputs.__proto__)');
    expect(await refusedBeforeTheRun('/v1/runs/node', `{"node":"speech-espeak","inputs":{"text":"hi","__proto__":1}}`)).toContain('a key named "__proto__" is not accepted (at inputs.__proto__)');
  });
});
