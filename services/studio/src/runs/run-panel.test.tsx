import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ROUTES, type Workflow } from '../../../contract';
import type * as Sdk from '../../../sdk/src';
import type * as Api from '../lib/api';
import type { Run } from '../../../contract';
import type { RunEventWithSeq } from '../../../sdk/src';
import { InsufficientCreditError, InvalidInputError } from '../../../sdk/src';
import type { StepViews } from './step-views';

const startRun = vi.fn();
const runsCancel = vi.fn();
const runsEstimate = vi.fn((..._args: unknown[]) => new Promise<unknown>(() => undefined));
vi.mock('../../../sdk/src', async (importOriginal) => {
  const actual = await importOriginal<typeof Sdk>();
  return { ...actual, startRun: (...args: unknown[]) => startRun(...args) };
});
const runsGet = vi.fn();
const follow = vi.fn();
vi.mock('../lib/api', async (importOriginal) => {
  const actual = await importOriginal<typeof Api>();
  return {
    ...actual,
    client: {
      routes: { 'runs.get': (...a: unknown[]) => runsGet(...a), 'runs.cancel': (...a: unknown[]) => runsCancel(...a), 'runs.estimate': (...a: unknown[]) => runsEstimate(...a) },
      follow: (...a: unknown[]) => follow(...a),
    },
  };
});
vi.mock('../lib/session', () => ({ useSession: { getState: () => ({ refresh: () => Promise.resolve() }) } }));

const { RunPanel } = await import('./run-panel');

const RUN_ID = '4cc0e21e-8b9f-4a11-8ea9-dc05f3128a07';
const definition: Workflow = {
  version: 2,
  nodes: [
    { id: 'text', uses: 'input', outputType: 'TEXT', label: 'Text to speak' },
    { id: 'speak', uses: 'speech-espeak', label: 'Speak', inputs: { text: '${text.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${speak.audio}' } },
  ],
};

/** A fake RunHandle whose events are pushed by the test. */
function fakeHandle() {
  const queue: RunEventWithSeq[] = [];
  let wake: (() => void) | null = null;
  let done = false;
  let resolveId!: (id: string) => void;
  let rejectId!: (e: unknown) => void;
  const runId = new Promise<string>((res, rej) => {
    resolveId = res;
    rejectId = rej;
  });
  runId.catch(() => undefined);
  let failure: unknown = null;
  return {
    handle: {
      runId,
      async *events() {
        for (let i = 0; ; i++) {
          while (i >= queue.length) {
            if (failure) throw failure;
            if (done) return;
            await new Promise<void>((r) => (wake = r));
          }
          yield queue[i]!;
        }
      },
    },
    push(e: RunEventWithSeq) {
      if (e.type === 'run.started') resolveId(e.runId);
      queue.push(e);
      if (e.type === 'run.completed' || e.type === 'run.failed') done = true;
      wake?.();
    },
    fail(err: unknown) {
      failure = err;
      rejectId(err);
      wake?.();
    },
  };
}

function renderPanel(onSteps = vi.fn()) {
  render(
    <MemoryRouter>
      <RunPanel definition={definition} resumeKey="wf-1" onSteps={onSteps} onClose={() => undefined} />
    </MemoryRouter>,
  );
  return onSteps;
}

describe('RunPanel', () => {
  beforeEach(() => {
    localStorage.clear();
    startRun.mockReset();
  });

  it('shows what the run would cost before it runs, asked again when the inputs change, and warns when the worst case is over the cap', async () => {
    runsEstimate.mockReset();
    const answer = (over: object) => ({ nodes: [], worstCaseUsd: 0.000051, expectedUsd: 0.00004, maxCostUsd: 0.5, fitsCap: true, availableUsd: 10, fitsBalance: true, ...over });
    runsEstimate.mockResolvedValueOnce(answer({})).mockResolvedValueOnce(answer({ worstCaseUsd: 0.9, maxCostUsd: 0.2, fitsCap: false }));
    renderPanel();
    expect(screen.getByText('Fill in the inputs to see what the run would cost.')).toBeTruthy();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'hello' } });
    await waitFor(() => expect(screen.getByTestId('run-estimate').textContent).toBe('Estimate: worst case $0.000051, expected $0.00004 (within the cap).'));
    expect(runsEstimate).toHaveBeenLastCalledWith({ workflow: definition, inputs: { text: { kind: 'text', value: 'hello' } }, maxCostUsd: 0.5 }, expect.anything());
    fireEvent.change(screen.getByRole('spinbutton', { name: /Spend cap/ }), { target: { value: '0.2' } });
    await waitFor(() => expect(screen.getByTestId('run-estimate').textContent).toContain('more than the cap: the run stops at it'));
    expect(screen.getByTestId('run-estimate').className).toContain('warning-text');
    expect(runsEstimate).toHaveBeenCalledTimes(2);
  });

  it('asks for the required input before running, with the default cap', () => {
    renderPanel();
    expect((screen.getByRole('spinbutton', { name: /Spend cap/ }) as HTMLInputElement).value).toBe('0.50');
    expect(screen.getByText(/ceiling \$1\.00/)).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    expect(screen.getByText('Required.')).toBeTruthy();
    expect(startRun).not.toHaveBeenCalled();
  });

  it('runs the definition, lights steps up, sums cost, shows outputs and remembers the run', async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    const onSteps = renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'hello' } });
    fireEvent.change(screen.getByRole('spinbutton', { name: /Spend cap/ }), { target: { value: '0.2' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await waitFor(() => expect(startRun).toHaveBeenCalled());
    expect(startRun.mock.calls[0]![1]).toEqual({ workflow: definition, inputs: { text: { kind: 'text', value: 'hello' } }, maxCostUsd: 0.2 });

    await act(async () => {
      fake.push({ seq: 1, type: 'run.started', runId: RUN_ID });
    });
    // Steps still to come are listed as pending (the canvas is told only what the events say).
    await waitFor(() => expect(screen.getByText('pending', { selector: '.step-item .badge' })).toBeTruthy());
    expect(onSteps).toHaveBeenLastCalledWith({});
    await act(async () => {
      fake.push({ seq: 2, type: 'step.started', nodeId: 'speak' });
    });
    await waitFor(() => expect(onSteps).toHaveBeenLastCalledWith({ speak: { status: 'running' } } satisfies StepViews));
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toMatchObject({ runId: RUN_ID, lastSeq: 2, finished: false, maxCostUsd: 0.2 });
    expect(screen.getByText('Speak')).toBeTruthy();

    await act(async () => {
      fake.push({ seq: 3, type: 'step.completed', nodeId: 'speak', usage: { costUsd: 0.000051, ms: 69 } });
      fake.push({ seq: 4, type: 'run.completed', outputs: { out: { kind: 'text', value: 'spoken' } } });
    });
    await waitFor(() => expect(screen.getByText('spoken')).toBeTruthy());
    expect(onSteps).toHaveBeenLastCalledWith({ speak: { status: 'completed', progress: 1, costUsd: 0.000051, ms: 69 } });
    expect(screen.getAllByText('$0.000051').length).toBeGreaterThan(0);
    expect(screen.getByText('completed', { selector: '.run-panel-head .badge' })).toBeTruthy();
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toMatchObject({ lastSeq: 4, finished: true });

    fireEvent.click(screen.getByRole('button', { name: 'Dismiss result' }));
    expect(localStorage.getItem('svc.run.wf-1')).toBeNull();
    expect(onSteps).toHaveBeenLastCalledWith({});
  });

  it('cancels the run under way with its Cancel button: the stream ends run.failed cancelled, shown as cancelled', async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    runsCancel.mockReset();
    runsCancel.mockResolvedValue({});
    // The record after the cancel: the provider call that was cut is charged what it held.
    runsGet.mockReset();
    runsGet.mockResolvedValue({
      id: RUN_ID,
      status: 'cancelled',
      steps: [{ nodeId: 'speak', status: 'cancelled', costUsd: 0.000051, ms: null }],
      outputs: null,
      error: { code: 'cancelled', message: 'the run was cancelled by the user who started it' },
      costUsd: 0.000051,
      maxCostUsd: 0.5,
      createdAt: '2026-11-25T01:00:00.000Z',
      startedAt: '2026-11-25T01:00:00.000Z',
      finishedAt: '2026-11-25T01:00:01.000Z',
      deadlineAt: null,
      webhook: null,
      workflowRef: null,
      workflowId: null,
      workflowName: null,
      workflow: definition,
    } satisfies Run);
    const onSteps = renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'hello' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await waitFor(() => expect(startRun).toHaveBeenCalled());
    // No run to cancel until the service has started one.
    expect(screen.queryByRole('button', { name: 'Cancel this run' })).toBeNull();
    await act(async () => {
      fake.push({ seq: 1, type: 'run.started', runId: RUN_ID });
      fake.push({ seq: 2, type: 'step.started', nodeId: 'speak' });
    });
    const button = await waitFor(() => screen.getByRole('button', { name: 'Cancel this run' }));
    fireEvent.click(button);
    await waitFor(() => expect(runsCancel).toHaveBeenCalledWith({ id: RUN_ID }));
    await act(async () => {
      fake.push({ seq: 3, type: 'run.failed', error: { code: 'cancelled', message: 'the run was cancelled by the user who started it' } });
    });
    await waitFor(() => expect(screen.getByText('cancelled', { selector: '.run-panel-head .badge' })).toBeTruthy());
    expect(screen.getByText('the run was cancelled by the user who started it')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Cancel this run' })).toBeNull();
    // Then the record's view: the step cancelled, not running, and what it was charged counted.
    await waitFor(() => expect(runsGet).toHaveBeenCalledWith({ id: RUN_ID }));
    await waitFor(() => expect(onSteps).toHaveBeenLastCalledWith({ speak: { status: 'cancelled', costUsd: 0.000051 } }));
    expect(screen.getAllByText('$0.000051').length).toBeGreaterThan(0);
  });

  it('says so when the cancel is refused, and the run goes on', async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    runsCancel.mockReset();
    runsCancel.mockRejectedValue(Object.assign(new Error('only the user who started a run can cancel it'), { status: 403 }));
    renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'hello' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await act(async () => {
      fake.push({ seq: 1, type: 'run.started', runId: RUN_ID });
    });
    fireEvent.click(await waitFor(() => screen.getByRole('button', { name: 'Cancel this run' })));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('The run could not be cancelled: only the user who started a run can cancel it'));
    expect(screen.getByRole('button', { name: 'Cancel this run' })).toBeTruthy();
  });

  it("shows a refusal in the service's words, with issues under their input", async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'x' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await act(async () => {
      fake.fail(new InvalidInputError('inputs are invalid', { status: 400, code: 'validation_failed', issues: [{ path: 'inputs.text', message: 'too short for speech' }] }));
    });
    await waitFor(() => expect(screen.getByText('too short for speech')).toBeTruthy());
    expect(screen.getByText('The service refused an input: see above.')).toBeTruthy();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'a longer text' } });
    expect(screen.queryByText('too short for speech')).toBeNull();
    expect(localStorage.getItem('svc.run.wf-1')).toBeNull();
  });

  it("keeps the service's message when an issue names no input", async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'x' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await act(async () => {
      fake.fail(new InvalidInputError('nodes[1] "speak": unknown node', { status: 400, code: 'validation_failed', issues: [{ path: 'workflow.nodes[1].uses', message: 'unknown node' }] }));
    });
    await waitFor(() => expect(screen.getByText('nodes[1] "speak": unknown node')).toBeTruthy());
    expect(screen.getByText('workflow.nodes[1].uses: unknown node')).toBeTruthy();
  });

  it('shows insufficient credit with the balance', async () => {
    const fake = fakeHandle();
    startRun.mockReturnValue(fake.handle);
    renderPanel();
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'x' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await act(async () => {
      fake.fail(new InsufficientCreditError('your balance cannot cover this run', { status: 402, code: 'insufficient_credit', body: { balanceUsd: 0 } }));
    });
    await waitFor(() => expect(screen.getByText('your balance cannot cover this run')).toBeTruthy());
    expect(screen.getByText('Balance: $0.00')).toBeTruthy();
  });
});

describe('RunPanel of a saved workflow', () => {
  beforeEach(() => {
    localStorage.clear();
    startRun.mockReset();
    follow.mockReset();
  });

  function renderForWorkflow(prepare: () => Promise<void>) {
    render(
      <MemoryRouter>
        <RunPanel definition={definition} workflowId="wf-1" prepare={prepare} resumeKey="wf-1" onSteps={vi.fn()} onClose={() => undefined} />
      </MemoryRouter>,
    );
    fireEvent.change(screen.getByRole('textbox', { name: /Text to speak/ }), { target: { value: 'hello' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
  }

  it('saves first, then runs the saved draft through editor.workflows.run', async () => {
    const fake = fakeHandle();
    follow.mockReturnValue(fake.handle);
    const order: string[] = [];
    const prepare = vi.fn(async () => void order.push('saved'));
    follow.mockImplementation(() => (order.push('run'), fake.handle));
    renderForWorkflow(prepare);
    await waitFor(() => expect(follow).toHaveBeenCalled());
    expect(order).toEqual(['saved', 'run']);
    expect(follow.mock.calls[0]![0]).toBe(ROUTES['editor.workflows.run']);
    expect(follow.mock.calls[0]![1]).toEqual({ id: 'wf-1', inputs: { text: { kind: 'text', value: 'hello' } }, maxCostUsd: 0.5 });
    expect(startRun).not.toHaveBeenCalled();
    await act(async () => {
      fake.push({ seq: 1, type: 'run.started', runId: RUN_ID });
      fake.push({ seq: 2, type: 'run.completed', outputs: { out: { kind: 'text', value: 'spoken' } } });
    });
    await waitFor(() => expect(screen.getByText('spoken')).toBeTruthy());
  });

  it('does not run when the save fails, and says why', async () => {
    renderForWorkflow(() => Promise.reject(new Error('The draft could not be saved, so it was not run.')));
    await waitFor(() => expect(screen.getByText('The draft could not be saved, so it was not run.')).toBeTruthy());
    expect(follow).not.toHaveBeenCalled();
    expect(startRun).not.toHaveBeenCalled();
    expect((screen.getByRole('button', { name: 'Run' }) as HTMLButtonElement).disabled).toBe(false);
  });
});

describe('RunPanel after a reload', () => {
  const record = (over: Partial<Run>): Run => ({
    id: RUN_ID,
    status: 'running',
    steps: [{ nodeId: 'speak', status: 'running', costUsd: 0, ms: null }],
    outputs: null,
    error: null,
    costUsd: 0,
    maxCostUsd: 0.3,
    createdAt: '2026-11-25T01:00:00.000Z',
    startedAt: '2026-11-25T01:00:00.000Z',
    finishedAt: null,
    deadlineAt: null,
    webhook: null,
    workflowRef: null,
    workflowId: null,
    workflowName: null,
    workflow: definition,
    ...over,
  });

  beforeEach(() => {
    localStorage.clear();
    runsGet.mockReset();
    follow.mockReset();
  });

  it('reattaches to a remembered unfinished run, rebuilding the steps from the replayed events', async () => {
    localStorage.setItem('svc.run.wf-1', JSON.stringify({ runId: RUN_ID, lastSeq: 3, finished: false, maxCostUsd: 0.3 }));
    runsGet.mockResolvedValue(record({}));
    const fake = fakeHandle();
    follow.mockReturnValue(fake.handle);
    const onSteps = renderPanel();
    await waitFor(() => expect(follow).toHaveBeenCalled());
    expect(follow.mock.calls[0]![1]).toEqual({ id: RUN_ID, after: 0 });
    await act(async () => {
      fake.push({ seq: 1, type: 'run.started', runId: RUN_ID });
      fake.push({ seq: 2, type: 'step.started', nodeId: 'speak' });
      fake.push({ seq: 3, type: 'step.completed', nodeId: 'speak', usage: { costUsd: 0.25, ms: 9 } });
    });
    await waitFor(() => expect(onSteps).toHaveBeenLastCalledWith({ speak: { status: 'completed', progress: 1, costUsd: 0.25, ms: 9 } }));
    expect(screen.getByText('of $0.30 cap')).toBeTruthy();
    await act(async () => {
      fake.push({ seq: 4, type: 'run.completed', outputs: { out: { kind: 'text', value: 'done while watched' } } });
    });
    await waitFor(() => expect(screen.getByText('done while watched')).toBeTruthy());
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toMatchObject({ lastSeq: 4, finished: true });
  });

  it('shows the final state of a run that ended while away, without following', async () => {
    localStorage.setItem('svc.run.wf-1', JSON.stringify({ runId: RUN_ID, lastSeq: 2, finished: false, maxCostUsd: 0.3 }));
    runsGet.mockResolvedValue(
      record({
        status: 'completed',
        steps: [{ nodeId: 'speak', status: 'completed', costUsd: 0.01, ms: 20 }],
        outputs: { out: { kind: 'text', value: 'finished away' } },
        costUsd: 0.01,
        finishedAt: '2026-11-25T01:00:02.000Z',
      }),
    );
    const onSteps = renderPanel();
    await waitFor(() => expect(screen.getByText('finished away')).toBeTruthy());
    expect(follow).not.toHaveBeenCalled();
    // onSteps is told in an effect, which React may run after the text is on the page (it did under load).
    await waitFor(() => expect(onSteps).toHaveBeenLastCalledWith({ speak: { status: 'completed', progress: 1, costUsd: 0.01, ms: 20 } }));
    expect(screen.getByText('Took 2.0 s')).toBeTruthy();
    expect(JSON.parse(localStorage.getItem('svc.run.wf-1')!)).toMatchObject({ finished: true });
  });

  it('forgets a remembered run the service no longer knows', async () => {
    localStorage.setItem('svc.run.wf-1', JSON.stringify({ runId: RUN_ID, lastSeq: 2, finished: false, maxCostUsd: 0.3 }));
    runsGet.mockRejectedValue(Object.assign(new Error('no run with id'), { status: 404 }));
    renderPanel();
    await waitFor(() => expect(localStorage.getItem('svc.run.wf-1')).toBeNull());
    expect(screen.getByRole('button', { name: 'Run' })).toBeTruthy();
  });
});
