import readline from 'node:readline';

/** What `svc run` does with its run at Ctrl-C: `--on-interrupt`. */
export type InterruptChoice = 'ask' | 'cancel' | 'detach';

export const INTERRUPT_CHOICES: readonly InterruptChoice[] = ['ask', 'cancel', 'detach'];

/**
 * Whether to cancel the run the user interrupted. `ask` asks on the terminal (a `y` cancels;
 * anything else, Enter, or another Ctrl-C leaves it going); without a terminal to ask on (a
 * script, a pipe) nothing is asked and the run goes on, as `detach`.
 */
export async function shouldCancel(choice: InterruptChoice, runId: string): Promise<boolean> {
  if (choice !== 'ask') return choice === 'cancel';
  if (!process.stdin.isTTY || !process.stderr.isTTY) return false;
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await new Promise<boolean>((resolve) => {
      // A second Ctrl-C at the question answers it: leave the run going.
      rl.once('SIGINT', () => resolve(false));
      rl.once('close', () => resolve(false));
      rl.question(`\nCancel run ${runId}? Its steps stop; what they spent so far is charged. [y/N] `, (answer) => resolve(/^\s*y(es)?\s*$/i.test(answer)));
    });
  } finally {
    rl.close();
  }
}
