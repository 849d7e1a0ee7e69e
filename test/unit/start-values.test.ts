import type { ArtifactInput, NodeSpec, Workflow } from '../../services/contract';
import { expandMounts, prepareWorkflow } from '../../services/engine';
import { createCatalog } from '../../services/nodes';

const port = (name: string, id: string, extra: Record<string, unknown> = {}) => ({ name, connector: { id, isOptional: false, isArray: false, ...extra } });

const specs = createCatalog([
  {
    id: 'speak',
    kind: 'model',
    title: 'Speak',
    category: 'audio',
    description: '',
    inputs: {
      text: port('text', 'TEXT'),
      voice: port('voice', 'TEXT', { isOptional: true, defaultValue: 'en-us', optionValues: ['en-us', 'de'] }),
      speed: port('speed', 'INT', { isOptional: true, defaultValue: 175, minValue: 80, maxValue: 450 }),
      tags: port('tags', 'TEXT', { isOptional: true, isArray: true, optionValues: ['a', 'b'] }),
      level: port('level', 'TEXT', { isOptional: true, optionValues: ['1', '2'] }),
    },
    outputs: { audio: port('audio', 'AUDIO') },
  },
  {
    id: 'convert',
    kind: 'model',
    title: 'Convert',
    category: 'audio',
    description: '',
    inputs: { audio: port('audio', 'AUDIO'), format: port('format', 'TEXT', { optionValues: ['wav', 'mp3'] }) },
    outputs: { audio: port('audio', 'AUDIO') },
  },
] as NodeSpec[]);

const wf = (nodes: Workflow['nodes']): Workflow => ({ version: 2, nodes });

function refused(workflow: Workflow, inputs: Record<string, ArtifactInput> = {}): string {
  const result = prepareWorkflow(workflow, specs, inputs);
  if (result.ok) throw new Error('expected the run to be refused');
  return result.message;
}

function accepted(workflow: Workflow, inputs: Record<string, ArtifactInput> = {}): void {
  const result = prepareWorkflow(workflow, specs, inputs);
  if (!result.ok) throw new Error(`expected the run to be accepted, got: ${result.message}`);
}

/** text → speak → convert(format) → out; `fmt` and `voice` are inputs. */
const speech = (fmt: Record<string, unknown> = {}, voice: Record<string, unknown> = {}) =>
  wf([
    { id: 'fmt', uses: 'input', outputType: 'TEXT', ...fmt },
    { id: 'v', uses: 'input', outputType: 'TEXT', ...voice },
    { id: 'tts', uses: 'speak', inputs: { text: 'hello', voice: '${v.value}' } },
    { id: 'conv', uses: 'convert', inputs: { audio: '${tts.audio}', format: '${fmt.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${conv.audio}' } },
  ]);

describe('values known before the run, checked against the ports they are wired to', () => {
  it('refuses a run input outside a downstream port’s optionValues, naming the node, the port and the input', () => {
    const message = refused(speech(), { fmt: { value: 'flac' }, v: { value: 'en-us' } });
    expect(message).toBe('nodes[3] "conv": input "format" (from run input "fmt") must be one of "wav", "mp3", got "flac"');
    expect(refused(speech(), { fmt: { value: 'mp3' }, v: { value: 'klingon' } })).toContain('nodes[2] "tts": input "voice" (from run input "v") must be one of "en-us", "de", got "klingon"');
  });

  it('refuses an input node’s default outside the options when the caller leaves it out', () => {
    const message = refused(speech({}, { inputs: { default: 'klingon' } }), { fmt: { value: 'mp3' } });
    expect(message).toContain('"tts": input "voice" (from the default of input "v") must be one of "en-us", "de", got "klingon"');
    accepted(speech({}, { inputs: { default: 'klingon' } }), { fmt: { value: 'mp3' }, v: { value: 'de' } });
  });

  it('refuses a number outside a port’s bounds, from a run input and from a const node', () => {
    const bySpeed = (source: Workflow['nodes'][number]) =>
      wf([source, { id: 'tts', uses: 'speak', inputs: { text: 'hi', speed: '${sp.value}' } }, { id: 'out', uses: 'output', inputs: { value: '${tts.audio}' } }]);
    expect(refused(bySpeed({ id: 'sp', uses: 'input', outputType: 'INT' }), { sp: { value: 5 } })).toContain('input "speed" (from run input "sp") must be an INT between 80 and 450, got 5');
    expect(refused(bySpeed({ id: 'sp', uses: 'const', outputType: 'INT', inputs: { value: 500 } }))).toContain('input "speed" (from const node "sp") must be an INT between 80 and 450, got 500');
    accepted(bySpeed({ id: 'sp', uses: 'input', outputType: 'INT' }), { sp: { value: 80 } });
  });

  it('checks a value after the coercion its port applies: numbers as TEXT, a single value as a list', () => {
    const workflow = wf([
      { id: 'n', uses: 'input', outputType: 'INT' },
      { id: 't', uses: 'input', outputType: 'TEXT', inputs: { default: 'a' } },
      { id: 'tts', uses: 'speak', inputs: { text: 'hi', level: '${n.value}', tags: '${t.value}' } },
      { id: 'out', uses: 'output', inputs: { value: '${tts.audio}' } },
    ]);
    accepted(workflow, { n: { value: 2 } });
    expect(refused(workflow, { n: { value: 3 } })).toContain('input "level" (from run input "n") must be one of "1", "2", got "3"');
    expect(refused(workflow, { n: { value: 1 }, t: { value: 'c' } })).toContain('input "tags" (from run input "t") item 0 must be one of "a", "b", got "c"');
  });

  it('checks the type of a STRUCTURED const read by a scalar port', () => {
    const workflow = wf([
      { id: 's', uses: 'const', outputType: 'STRUCTURED', inputs: { value: { fast: true } } },
      { id: 'tts', uses: 'speak', inputs: { text: 'hi', speed: '${s.value}' } },
      { id: 'out', uses: 'output', inputs: { value: '${tts.audio}' } },
    ]);
    expect(refused(workflow)).toContain('input "speed" (from const node "s") must be an INT (a whole number), got {"fast":true}');
  });

  it('checks values that reach a mounted workflow’s nodes, as literals and as the run’s inputs', () => {
    const child = wf([
      { id: 'voice', uses: 'input', outputType: 'TEXT', inputs: { default: 'en-us' } },
      { id: 'tts', uses: 'speak', inputs: { text: 'hi', voice: '${voice.value}' } },
      { id: 'audio', uses: 'output', inputs: { value: '${tts.audio}' } },
    ]);
    const prepare = (parent: Workflow, inputs: Record<string, ArtifactInput>) => {
      const expanded = expandMounts(parent, new Map([['acme/say', child]]));
      if (!expanded.ok) throw new Error(expanded.message);
      return prepareWorkflow(expanded.workflow, specs, inputs, { spliced: true });
    };
    const byInput = wf([
      { id: 'v', uses: 'input', outputType: 'TEXT' },
      { id: 'm', uses: 'acme/say', inputs: { voice: '${v.value}' } },
      { id: 'out', uses: 'output', inputs: { value: '${m.audio}' } },
    ]);
    expect(prepare(byInput, { v: { value: 'klingon' } })).toMatchObject({ ok: false, message: expect.stringContaining('"m__tts": input "voice" (from run input "v") must be one of') });
    expect(prepare(byInput, { v: { value: 'de' } }).ok).toBe(true);
    const byLiteral = wf([
      { id: 'm', uses: 'acme/say', inputs: { voice: 'klingon' } },
      { id: 'out', uses: 'output', inputs: { value: '${m.audio}' } },
    ]);
    expect(prepare(byLiteral, {})).toMatchObject({ ok: false, message: expect.stringContaining('"m__tts": input "voice" must be one of') });
  });
});

describe('names that are members of every JavaScript object', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('refuses a node input named %s as an unknown input', (name) => {
    // JSON.parse makes "__proto__" an own key, as a request body does.
    const workflow = JSON.parse(`{"version":2,"nodes":[{"id":"tts","uses":"speak","inputs":{"text":"hi","${name}":1}},{"id":"out","uses":"output","inputs":{"value":"\${tts.audio}"}}]}`) as Workflow;
    expect(refused(workflow)).toBe(`nodes[0] "tts": "speak" has no input "${name}"; its inputs are: text, voice, speed, tags, level`);
  });

  it('refuses a reference to a port named like an Object member', () => {
    const workflow = wf([
      { id: 'tts', uses: 'speak', inputs: { text: 'hi' } },
      { id: 'conv', uses: 'convert', inputs: { audio: '${tts.constructor}', format: 'mp3' } },
      { id: 'out', uses: 'output', inputs: { value: '${tts.toString}' } },
    ]);
    const message = refused(workflow);
    expect(message).toContain('"conv": input "audio" refers to "tts.constructor", but "tts" has no port "constructor"; its ports are: audio');
    expect(message).toContain('"out": input "value" refers to "tts.toString", but "tts" has no port "toString"');
  });

  it('requires an input node named "constructor" or "toString" like any other', () => {
    const workflow = wf([
      { id: 'constructor', uses: 'input', outputType: 'TEXT' },
      { id: 'toString', uses: 'input', outputType: 'TEXT', inputs: { default: 'x' } },
      { id: 'out', uses: 'output', inputs: { value: '${constructor.value}' } },
      { id: 'out2', uses: 'output', inputs: { value: '${toString.value}' } },
    ]);
    expect(refused(workflow)).toBe('input "constructor" (TEXT) is required');
    const result = prepareWorkflow(workflow, specs, { constructor: { value: 'c' } });
    expect(result).toMatchObject({ ok: true, inputs: { constructor: { kind: 'text', value: 'c' }, toString: { kind: 'text', value: 'x' } } });
  });

  it('requires a mounted workflow’s input named "constructor" when the mount node does not give it', () => {
    const child = wf([
      { id: 'constructor', uses: 'input', outputType: 'TEXT' },
      { id: 'out', uses: 'output', inputs: { value: '${constructor.value}' } },
    ]);
    const parent = wf([
      { id: 'm', uses: 'acme/child', inputs: {} },
      { id: 'out', uses: 'output', inputs: { value: '${m.out}' } },
    ]);
    expect(expandMounts(parent, new Map([['acme/child', child]]))).toMatchObject({ ok: false, code: 'mount_invalid', message: 'node "m": input "constructor" of "acme/child" is required' });
  });
});
