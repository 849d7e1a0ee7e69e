import {
  ArtifactInputSchema,
  ArtifactSchema,
  ErrorBodySchema,
  NodeSpecSchema,
  PublishedWorkflowSchema,
  RunEventSchema,
  RunSchema,
  WorkflowSchema,
  validate,
  validateInput,
} from '../../services/contract';

/** The spec's own example shapes. */
const workflow = {
  version: 2,
  nodes: [
    { id: 'prompt', uses: 'input', outputType: 'TEXT', label: 'Prompt' },
    { id: 'size', uses: 'input', outputType: 'INT', inputs: { default: 512 } },
    { id: 'style', uses: 'const', outputType: 'TEXT', inputs: { value: 'watercolor' } },
    { id: 'gen', uses: 'image-generate', inputs: { prompt: '${prompt.value}', style: '${style.value}', width: '${size.value}', extra: { nested: '${not.a.ref}' } } },
    { id: 'sub', uses: 'acme/upscale@latest', inputs: { image: '${gen.image}' } },
    { id: 'image', uses: 'output', inputs: { value: '${sub.image}' } },
  ],
};

const nodeSpec = {
  id: 'image-resize',
  kind: 'model',
  title: 'Resize image',
  category: 'image',
  description: 'Resizes an image',
  inputs: {
    image: { name: 'image', connector: { id: 'IMAGE', isOptional: false, isArray: false } },
    fit: { name: 'fit', connector: { id: 'TEXT', isOptional: true, isArray: false, defaultValue: 'cover', optionValues: ['cover', 'contain'] } },
    width: { name: 'width', connector: { id: 'INT', isOptional: false, isArray: false, minValue: 1, maxValue: 8192 } },
    tags: { name: 'tags', connector: { id: 'CUSTOM:tag-list', isOptional: true, isArray: true } },
  },
  outputs: { image: { name: 'image', connector: { id: 'IMAGE', isOptional: false, isArray: false } } },
};

const runId = '7f0c2a4e-2b7a-4a53-9a52-0d1d8f7a1c11';

describe('contract schemas accept the spec examples', () => {
  it('accepts a workflow with input, const, platform, mounted and output nodes', () => {
    expect(validate(WorkflowSchema, workflow)).toMatchObject({ ok: true });
  });

  it('accepts inline and ref artifacts, with kind optional only on inputs', () => {
    expect(validate(ArtifactSchema, { kind: 'text', value: 'hello' }).ok).toBe(true);
    expect(validate(ArtifactSchema, { kind: 'image', ref: 'https://svc.example/blobs/a.png', mimeType: 'image/png', metadata: { width: 512, height: 512 } }).ok).toBe(true);
    expect(validate(ArtifactInputSchema, { value: 42 }).ok).toBe(true);
    expect(validate(ArtifactSchema, { value: 42 }).ok).toBe(false);
  });

  it('accepts a NodeSpec with defaults, option values, bounds and a custom connector', () => {
    expect(validate(NodeSpecSchema, nodeSpec).ok).toBe(true);
  });

  it('accepts a run record in every named state', () => {
    const steps = [{ nodeId: 'gen', status: 'completed', costUsd: 0.02, ms: 1200 }];
    const times = { createdAt: '2026-01-02T03:04:05.678Z', startedAt: '2026-01-02T03:04:05.900Z', finishedAt: null, deadlineAt: null, webhook: null };
    const workflow = { version: 2, nodes: [{ id: 'gen', uses: 'image.generate' }] };
    const record = { id: runId, error: null, costUsd: 0.02, maxCostUsd: 0.5, ...times, workflowRef: null, workflowId: null, workflowName: null, workflow };
    expect(validate(RunSchema, { ...record, workflowRef: 'acme/poster@1.2.0', status: 'running', steps, outputs: null }).ok).toBe(true);
    expect(validate(RunSchema, { ...record, status: 'running', steps, outputs: null }).ok).toBe(true);
    expect(
      validate(RunSchema, { ...record, status: 'completed', steps, outputs: { image: { kind: 'image', ref: 'https://x.example/b' } }, finishedAt: '2026-01-02T03:04:09.000Z' }).ok,
    ).toBe(true);
    expect(
      validate(RunSchema, {
        ...record,
        status: 'failed',
        steps: [{ nodeId: 'gen', status: 'failed', costUsd: 0, ms: 3, error: { code: 'provider_error', message: 'boom' } }],
        outputs: null,
        error: { code: 'step_failed', message: 'gen failed: boom' },
      }).ok,
    ).toBe(true);
  });

  it.each([
    { type: 'run.started', runId },
    { type: 'step.started', nodeId: 'gen' },
    { type: 'step.progress', nodeId: 'gen', message: '50%' },
    { type: 'step.completed', nodeId: 'gen', usage: { costUsd: 0.01, ms: 20 } },
    { type: 'step.failed', nodeId: 'gen', error: { code: 'timeout', message: 'no answer' } },
    { type: 'run.completed', outputs: { out: { kind: 'text', value: 'done' } } },
    { type: 'run.failed', error: { code: 'spend_cap_exceeded', message: 'cap reached' } },
  ])('accepts the $type event', (event) => {
    expect(validate(RunEventSchema, event).ok).toBe(true);
  });

  it('accepts a published workflow version and an error body with extra fields', () => {
    expect(validate(PublishedWorkflowSchema, { id: runId, address: 'acme/flow', version: '1.2.0', sequence: 3, workflow }).ok).toBe(true);
    expect(validate(PublishedWorkflowSchema, { id: runId, address: null, version: '1.0.0', sequence: 1, workflow }).ok).toBe(true);
    expect(validate(ErrorBodySchema, { error: 'no credit', code: 'insufficient_credit', balanceUsd: 0 }).ok).toBe(true);
  });
});

describe('contract schemas reject what they must', () => {
  it('rejects unknown fields at every level and names them', () => {
    const top = validateInput('runs.create', { workflow, colour: 'red' });
    expect(top).toMatchObject({ ok: false });
    expect(!top.ok && top.message).toContain('unknown field "colour"');

    const nested = validateInput('runs.create', { workflow: { ...workflow, nodes: [{ id: 'a', uses: 'input', outputType: 'TEXT', lable: 'typo' }] } });
    expect(!nested.ok && nested.message).toContain('unknown field "lable" in workflow.nodes[0]');

    const artifact = validateInput('runs.create', { workflowRef: 'acme/flow', inputs: { p: { value: 'x', size: 3 } } });
    expect(!artifact.ok && artifact.message).toContain('unknown field "size" in inputs.p');

    const spec = validate(NodeSpecSchema, { ...nodeSpec, price: 1 });
    expect(!spec.ok && spec.message).toContain('unknown field "price"');
  });

  it('rejects both and neither of workflow and workflowRef with one clear message', () => {
    for (const body of [{}, { inputs: {} }, { workflow, workflowRef: 'acme/flow@1.0.0' }]) {
      const result = validateInput('runs.create', body);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.message).toBe('request: give exactly one of "workflow" (an inline definition) or "workflowRef" (a published reference such as "acme/flow@1.2.0")');
    }
    expect(validateInput('runs.create', { workflowRef: 'acme/flow@1.0.0' }).ok).toBe(true);
  });

  it('rejects wrong types with the field and the type it got', () => {
    const cases: [string, unknown, string][] = [
      ['runs.create', { workflowRef: 7 }, 'workflowRef must be string, got number'],
      ['runs.create', { workflowRef: 'a/b', maxCostUsd: '0.5' }, 'maxCostUsd must be number, got string'],
      ['runs.create', { workflowRef: 'a/b', maxCostUsd: 0 }, 'maxCostUsd must be >= 0.000001'],
      ['runs.create', { workflow: { version: 1, nodes: [] } }, 'workflow.version must be 2'],
      ['runs.create', { workflow: { version: 2, nodes: {} } }, 'workflow.nodes must be array, got object'],
      ['runs.create', { workflow: { version: 2, nodes: [{ id: 'x', uses: 'input', outputType: 'PICTURE' }] } }, 'workflow.nodes[0].outputType must be one of'],
      ['runs.create', { workflowRef: 'a/b', inputs: { p: { value: 1, ref: 'https://a.example/x' } } }, 'exactly one of "value" (inline) or "ref"'],
      ['runs.create', { workflowRef: 'a/b', inputs: { p: { ref: 'not a url' } } }, 'inputs.p.ref must be a valid uri'],
      ['runs.node', { node: 'x' }, 'missing required field "inputs"'],
      ['runs.node', { node: 'x', inputs: { a: [1, 2] } }, 'inputs.a must be string or number or boolean or null or object, got array'],
      ['nodes.list', { limit: 1.5 }, 'limit must be integer'],
      ['nodes.list', { limit: 0 }, 'limit must be >= 1'],
      ['nodes.get', {}, 'missing required field "id"'],
      ['workflows.get', { id: 'acme/flow', version: 2 }, 'version must be string, got number'],
    ];
    for (const [op, value, expected] of cases) {
      const result = validateInput(op as never, value);
      expect({ op, value, ok: result.ok }).toEqual({ op, value, ok: false });
      expect(!result.ok && result.message).toContain(expected);
    }
  });

  it('reports every problem of a body at once', () => {
    const result = validateInput('runs.create', { workflow: { version: 3, nodes: [{ id: '', uses: 'x', x: 1 }] }, maxCostUsd: -1 });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining(['workflow.version', 'workflow.nodes[0].id', 'workflow.nodes[0].x', 'maxCostUsd']),
    );
  });

  it('rejects events of unknown type or with missing payload', () => {
    expect(validate(RunEventSchema, { type: 'run.paused' }).ok).toBe(false);
    expect(validate(RunEventSchema, { type: 'step.completed', nodeId: 'a' }).ok).toBe(false);
  });
});
