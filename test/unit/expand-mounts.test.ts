import type { Workflow } from '../../services/contract';
import { expandMounts, mountedAddresses, mountOf, prepareWorkflow, validateWorkflow } from '../../services/engine';
import { createNodeCatalog } from '../../services/nodes';
import { presentEvent } from '../../services/runs';

const catalog = createNodeCatalog();

/** acme/double: n → n + n, and a label. */
const double: Workflow = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'FLOAT' },
    { id: 'twice', uses: 'math-add', inputs: { a: '${n.value}', b: '${n.value}' } },
    { id: 'result', uses: 'output', inputs: { value: '${twice.result}' } },
    { id: 'label', uses: 'output', inputs: { value: 'doubled' } },
  ],
};

/** acme/quad: mounts acme/double twice in a row. */
const quad: Workflow = {
  version: 2,
  nodes: [
    { id: 'x', uses: 'input', outputType: 'FLOAT', inputs: { default: 1 } },
    { id: 'first', uses: 'acme/double', inputs: { n: '${x.value}' } },
    { id: 'second', uses: 'acme/double@latest', inputs: { n: '${first.result}' } },
    { id: 'out', uses: 'output', inputs: { value: '${second.result}' } },
  ],
};

const registry = new Map<string, Workflow>([
  ['acme/double', double],
  ['acme/quad', quad],
]);

describe('mounted workflows spliced into the run’s graph', () => {
  it('splices nested mounts: inputs from the mount node, outputs read through it, ids prefixed', () => {
    const run: Workflow = {
      version: 2,
      nodes: [
        { id: 'start', uses: 'input', outputType: 'FLOAT' },
        { id: 'q', uses: 'acme/quad', inputs: { x: '${start.value}' } },
        { id: 'plus', uses: 'math-add', inputs: { a: '${q.out}', b: 1 } },
        { id: 'final', uses: 'output', inputs: { value: '${plus.result}' } },
      ],
    };
    expect(mountedAddresses(run)).toEqual(['acme/quad']);
    const expanded = expandMounts(run, registry);
    expect(expanded.ok).toBe(true);
    if (!expanded.ok) return;
    const byId = new Map(expanded.workflow.nodes.map((n) => [n.id, n]));
    expect([...byId.keys()].sort()).toEqual(['final', 'plus', 'q__first__twice', 'q__second__twice', 'start']);
    expect(byId.get('q__first__twice')!.inputs).toEqual({ a: '${start.value}', b: '${start.value}' });
    expect(byId.get('q__second__twice')!.inputs).toEqual({ a: '${q__first__twice.result}', b: '${q__first__twice.result}' });
    expect(byId.get('plus')!.inputs).toEqual({ a: '${q__second__twice.result}', b: 1 });
    // The spliced graph is a valid graph of platform nodes, planned like any other.
    const prepared = prepareWorkflow(expanded.workflow, catalog, { start: { value: 3 } }, { spliced: true });
    expect(prepared.ok).toBe(true);
    if (prepared.ok) expect(prepared.prepared.plan.order).toEqual(['q__first__twice', 'q__second__twice', 'plus']);
  });

  it('passes literals and defaults into the mounted workflow and literal outputs out of it', () => {
    const run: Workflow = {
      version: 2,
      nodes: [
        { id: 'd', uses: 'acme/double', inputs: { n: 21 } },
        { id: 'o', uses: 'output', inputs: { value: '${d.result}' } },
        { id: 'l', uses: 'output', inputs: { value: '${d.label}' } },
      ],
    };
    const expanded = expandMounts(run, registry);
    expect(expanded.ok && expanded.workflow.nodes).toEqual([
      { id: 'd__twice', uses: 'math-add', inputs: { a: 21, b: 21 } },
      { id: 'o', uses: 'output', inputs: { value: '${d__twice.result}' } },
      { id: 'l', uses: 'output', inputs: { value: 'doubled' } },
    ]);
  });

  it('refuses a pinned selector, recursion, unknown inputs and outputs, and a missing required input', () => {
    const pinned = expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/double@1.2.0', inputs: { n: 1 } }, { id: 'o', uses: 'output', inputs: { value: '${d.result}' } }] }, registry);
    expect(pinned).toMatchObject({ ok: false, code: 'mount_pinned', message: expect.stringContaining('always runs its latest version') });
    const major = expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/double@2', inputs: { n: 1 } }] }, registry);
    expect(major).toMatchObject({ ok: false, code: 'mount_pinned' });

    const loop: Workflow = { version: 2, nodes: [{ id: 'again', uses: 'acme/loop', inputs: {} }, { id: 'o', uses: 'output', inputs: { value: 1 } }] };
    const recursive = expandMounts(loop, new Map([['acme/loop', loop]]));
    expect(recursive).toMatchObject({ ok: false, code: 'mount_recursion', message: expect.stringContaining('acme/loop → acme/loop') });

    expect(expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/double', inputs: { m: 1 } }] }, registry)).toMatchObject({ ok: false, code: 'mount_invalid', message: expect.stringContaining('has no input "m"') });
    expect(expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/double', inputs: {} }] }, registry)).toMatchObject({ ok: false, code: 'mount_invalid', message: expect.stringContaining('input "n" of "acme/double" is required') });
    expect(
      expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/double', inputs: { n: 1 } }, { id: 'o', uses: 'output', inputs: { value: '${d.nope}' } }] }, registry),
    ).toMatchObject({ ok: false, code: 'mount_invalid', message: expect.stringContaining('has no output "nope"') });
    expect(expandMounts({ version: 2, nodes: [{ id: 'd', uses: 'acme/missing', inputs: {} }] }, registry)).toMatchObject({ ok: false, code: 'mount_not_found' });
  });

  it('reserves "__" in node ids as written, and accepts it in spliced graphs', () => {
    const written: Workflow = { version: 2, nodes: [{ id: 'a__b', uses: 'math-add', inputs: { a: 1, b: 2 } }, { id: 'o', uses: 'output', inputs: { value: '${a__b.result}' } }] };
    const check = validateWorkflow(written, catalog);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.message).toContain('"__", which is reserved');
    expect(validateWorkflow(written, catalog, { spliced: true }).ok).toBe(true);
    expect(mountOf('q__first__twice')).toEqual({ mountId: 'q', innerId: 'first__twice' });
    expect(mountOf('plain')).toBeNull();
  });

  it('shows a mounted step’s events as progress (and failure) of the node that mounts it', () => {
    expect(presentEvent({ type: 'step.started', nodeId: 'q__first__twice' })).toEqual({ type: 'step.progress', nodeId: 'q', message: 'first__twice started' });
    expect(presentEvent({ type: 'step.completed', nodeId: 'q__x', usage: { costUsd: 0.000001, ms: 3 } })).toEqual({ type: 'step.progress', nodeId: 'q', message: 'x completed ($0.000001, 3 ms)' });
    expect(presentEvent({ type: 'step.failed', nodeId: 'q__x', error: { code: 'bad_request', message: 'no' } })).toEqual({ type: 'step.failed', nodeId: 'q', error: { code: 'bad_request', message: 'x: no' } });
    expect(presentEvent({ type: 'step.started', nodeId: 'plain' })).toEqual({ type: 'step.started', nodeId: 'plain' });
  });
});
