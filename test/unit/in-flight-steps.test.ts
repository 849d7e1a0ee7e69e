import { getMaxListeners } from 'node:events';
import { InFlightSteps } from '../../services/runs/steps/in-flight-steps';

describe('InFlightSteps', () => {
  it('gives the holds of one run one signal, which aborts with the run, and other runs their own', () => {
    const inFlight = new InFlightSteps();
    const job = inFlight.hold('run-a');
    const attempt = inFlight.hold('run-a');
    const other = inFlight.hold('run-b');
    expect(attempt).toBe(job);
    expect(other).not.toBe(job);

    const reason = new Error('the run stopped');
    expect(inFlight.abortRun('run-a', reason)).toBe(true);
    expect(job.aborted).toBe(true);
    expect(job.reason).toBe(reason);
    expect(other.aborted).toBe(false);
    // An attempt that starts in a job of the aborted run is aborted at once.
    expect(inFlight.hold('run-a').aborted).toBe(true);
  });

  it('drops a run once its last hold is released: a later hold gets a fresh signal, and aborting a run held nowhere does nothing', () => {
    const inFlight = new InFlightSteps();
    const first = inFlight.hold('run-a');
    inFlight.hold('run-a');
    inFlight.release('run-a');
    // One hold left: still the same signal.
    expect(inFlight.hold('run-a')).toBe(first);
    inFlight.release('run-a');
    inFlight.release('run-a');
    expect(inFlight.abortRun('run-a', new Error('stopped'))).toBe(false);
    expect(first.aborted).toBe(false);
    const next = inFlight.hold('run-a');
    expect(next).not.toBe(first);
    // Releasing a run held nowhere is harmless.
    inFlight.release('run-z');
  });

  it('lets any number of attempts of one run listen on its signal (no listener limit to warn at), and every listener hears the abort', () => {
    const inFlight = new InFlightSteps();
    const heard: number[] = [];
    for (let i = 0; i < 40; i++) inFlight.hold('run-a').addEventListener('abort', () => heard.push(i), { once: true });
    // Node warns of a leak past an EventTarget's limit (10 by default).
    expect(getMaxListeners(inFlight.hold('run-a'))).toBe(Infinity);
    inFlight.abortRun('run-a', new Error('stopped'));
    expect(heard).toHaveLength(40);
  });
});
