import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Failpoints: named places in the code where the fault suite injects a fault into a real
 * process (as FoundationDB and TiKV do), configured by `SVC_FAILPOINTS`, e.g.
 * `step.afterReserve=sleep(5000);step.beforeSettle:resize=throw(boom)`. Unset in production, where
 * `hit` is one Map lookup that finds nothing.
 */
type Action = { kind: 'sleep'; ms: number } | { kind: 'throw'; message: string } | { kind: 'exit'; code: number };

export class Failpoints {
  private readonly actions = new Map<string, Action>();

  constructor(spec = '') {
    for (const part of spec.split(/[;,]/).map((p) => p.trim()).filter(Boolean)) {
      const m = /^([\w.:-]+)=(sleep|throw|exit)\(([^)]*)\)$/.exec(part);
      if (!m) throw new RangeError(`bad failpoint "${part}"; write name=sleep(ms), name=throw(message) or name=exit(code)`);
      const [, name, kind, arg] = m as unknown as [string, string, 'sleep' | 'throw' | 'exit', string];
      this.actions.set(name, kind === 'sleep' ? { kind, ms: Number(arg) } : kind === 'exit' ? { kind, code: Number(arg) } : { kind, message: arg });
    }
  }

  /**
   * Runs the fault configured for `name`, if any; with a `detail` (a node id), a fault configured
   * for `name:detail` wins, so one step of a run can be singled out.
   */
  async hit(name: string, detail?: string): Promise<void> {
    if (this.actions.size === 0) return;
    const action = (detail === undefined ? undefined : this.actions.get(`${name}:${detail}`)) ?? this.actions.get(name);
    if (!action) return;
    if (action.kind === 'sleep') await sleep(action.ms);
    else if (action.kind === 'throw') throw new Error(`failpoint ${name}: ${action.message}`);
    else process.exit(action.code);
  }
}

/** No failpoints. */
export const NO_FAILPOINTS = new Failpoints('');
