import { CommanderError } from 'commander';
import { EXIT } from './cli-error';
import { failureOf } from './failure';
import { printJson } from './output';
import { buildProgram } from './program';

/**
 * The entry point of `svc`: runs the command, then exits with the code of its outcome (the
 * table in docs/cli.md). Failures say their message and code on stderr; with `--json` stdout
 * also gets one JSON document, `{ "error": { code, message }, ... }`.
 */
async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    const json = argv.includes('--json');
    if (err instanceof CommanderError) {
      // commander has printed the message (or the help, or the version) already.
      if (err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
      if (json) printJson({ error: { code: 'usage', message: err.message.replace(/^error: /, '') } });
      return EXIT.usage;
    }
    const failure = failureOf(err);
    const run = failure.runId === undefined ? '' : `\nrun ${failure.runId}`;
    process.stderr.write(`svc: ${failure.message} (${failure.code})${run}\n`);
    if (json) printJson({ error: { code: failure.code, message: failure.message }, ...(failure.runId === undefined ? {} : { runId: failure.runId }), ...failure.details });
    return failure.exitCode;
  }
}

void main(process.argv).then((code) => {
  // Let stdout drain (a pipe) before leaving; exitCode instead of exit() for the same reason.
  process.exitCode = code;
  // Should anything keep a finished command alive (a kept-alive socket), it ends anyway, after
  // stdout has had time to drain; an unref'd timer does not itself hold the process.
  setTimeout(() => process.exit(code), 1000).unref();
});
