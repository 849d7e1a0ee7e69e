/**
 * Runs a sweep every `intervalMs` after the previous one ended (an unref'd timer, so it never
 * keeps a process alive), until `stop`, which waits for a sweep under way. The sweep reports its
 * own outcome: a rejection is the caller's to catch before it gets here.
 */
export class RepeatingSweep {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;

  constructor(private readonly sweep: () => Promise<unknown>) {}

  start(intervalMs: number): void {
    const tick = () => {
      this.sweeping = this.sweep().finally(() => {
        this.sweeping = undefined;
        if (this.timer) this.timer = setTimeout(tick, intervalMs).unref();
      });
    };
    this.timer = setTimeout(tick, intervalMs).unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }
}
