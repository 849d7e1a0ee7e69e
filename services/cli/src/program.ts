import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CALL_OPTIONS, OPERATIONS, parseCallOption } from '../../contract';
import { apiCommand } from './commands/api';
import { batch } from './commands/batch';
import { login } from './commands/login';
import { logout } from './commands/logout';
import { mcp } from './commands/mcp';
import { node } from './commands/node';
import { nodes } from './commands/nodes';
import { run } from './commands/run';
import { scheduleCreate, scheduleIdCommands, scheduleList } from './commands/schedule';
import { whoami } from './commands/whoami';
import { collect } from './input-values';
import { INTERRUPT_CHOICES } from './interrupt-choice';
import { fieldOptions } from './schema-options';

/** The package's version: package.json sits one level above both src/ and the bundle's dist/. */
function version(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const URL_HELP = 'API base URL (else env SERVICE_URL, then the saved login\'s, then http://127.0.0.1:8080)';

function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new InvalidArgumentError('give a whole number above 0, e.g. 50');
  return value;
}

function positiveNumber(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError('give a positive number of USD, e.g. 0.25');
  return value;
}

/** `--url` and `--json`, on every command that talks to the service. */
function withConnection(command: Command): Command {
  return command.option('--url <url>', URL_HELP).option('--json', 'machine-readable output: exactly one JSON document on stdout');
}

function wholeSeconds(text: string): number {
  const parsed = parseCallOption('maxDurationSeconds', text);
  if (!parsed.ok) throw new InvalidArgumentError(`give a whole number of seconds from ${CALL_OPTIONS.maxDurationSeconds.min} to ${CALL_OPTIONS.maxDurationSeconds.max}, e.g. 300`);
  return parsed.value;
}

/** `-i`, `--max-cost`, `--max-duration`, `--webhook*` and `--output-cache`, on the commands that run something. */
function withRunOptions(command: Command): Command {
  return withConnection(command)
    .option('-i, --input <name=value>', 'an input, repeatable: a plain value, @https://… (a URL) or @./file (uploaded first)', collect, [])
    .addOption(new Option('--max-cost <usd>', 'spend cap in USD').argParser(positiveNumber))
    .addOption(new Option('--max-duration <seconds>', 'cancel the run if it has not finished this many seconds after it started').argParser(wholeSeconds))
    .addOption(new Option('--webhook <url>', "POST the run's events to this URL, signed (docs/webhooks.md)").argParser(callOption('webhookUrl')))
    .addOption(new Option('--webhook-events <types>', 'the events the webhook receives, comma-separated (default run.completed,run.failed)').argParser(callOption('webhookEvents')))
    .addOption(new Option('--output-cache <mode>', 'the output cache: auto (default), llm (also LLM calls at temperature 0) or off').argParser(callOption('outputCache')));
}

/** A flag read as the contract reads its header: the same checks, the same message. */
function callOption<K extends 'webhookUrl' | 'webhookEvents' | 'outputCache'>(name: K) {
  return (text: string) => {
    const parsed = parseCallOption(name, text);
    if (!parsed.ok) throw new InvalidArgumentError(parsed.message.replace(/^the [A-Za-z-]+ header/, 'it'));
    return parsed.value;
  };
}

/** The `svc` command line; each action's errors reach main, which maps them to exit codes. */
export function buildProgram(): Command {
  const program = new Command('svc')
    .description('The command-line client of the workflow execution service.\nExit codes: 0 ok, 1 run failed, 2 usage or input error, 3 authentication, 4 insufficient credit, 5 connection or server error, 130 interrupted.')
    .version(version())
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  withConnection(program.command('login').description('sign in through the browser (device flow) and save a session token'))
    .option('--no-browser', 'only print the link; do not try to open a browser')
    .action((options) => login(options));

  withConnection(program.command('logout').description('revoke the saved session token and remove it')).action((options) => logout(options));

  withConnection(program.command('whoami').description('show the signed-in user, organization and token')).action((options) => whoami(options));

  // The filters are nodes.list's own input fields (q is the positional query).
  const listNodes = withConnection(program.command('nodes').argument('[query]', 'text to match against node id, title and description').description('list or search the node palette'));
  for (const { option } of fieldOptions(OPERATIONS['nodes.list'].input, ['q'])) listNodes.addOption(option);
  listNodes.action((query: string | undefined, options) => nodes(query, options));

  withRunOptions(program.command('node').argument('<node_id>', 'the node to run, e.g. text-template').description('run a single node'))
    .action((nodeId: string, options) => node(nodeId, options));

  withRunOptions(program.command('run').argument('<file-or-ref>', 'a JSON or YAML workflow file, or a published ref such as acme/flow@1').description('run a workflow'))
    .addOption(
      new Option('--on-interrupt <choice>', 'what Ctrl-C does with the started run: ask (on a terminal; elsewhere the run goes on), cancel it, or detach (it goes on)')
        .choices(INTERRUPT_CHOICES)
        .default('ask'),
    )
    .option('--estimate', 'print what the run would cost, node by node, and whether it fits the cap and the balance; run nothing')
    .action((target: string, options) => run(target, options));

  withConnection(
    program
      .command('batch')
      .argument('[file-or-ref]', 'the workflow every row runs: a JSON or YAML file, or a published ref such as acme/flow@1')
      .description('run a workflow once per row of a file, under one spend cap, in the background (docs/batches.md)'),
  )
    .option('--rows <file>', 'the rows: JSON Lines (.jsonl), CSV with a header line of input names (.csv), or a JSON array (.json)')
    .addOption(new Option('--max-cost <usd>', 'the batch spend cap: its rows together never spend more (default rows × the row cap)').argParser(positiveNumber))
    .addOption(new Option('--row-max-cost <usd>', "each row's run's spend cap (default 0.50)").argParser(positiveNumber))
    .addOption(new Option('--concurrency <rows>', 'rows in flight at once (default 50)').argParser(positiveInteger))
    .option('--skip-bad-rows', 'run the valid rows and list the bad ones (default: any bad row refuses the batch)')
    .addOption(new Option('--max-duration <seconds>', 'cancel the batch if it is still running this many seconds after it started').argParser(wholeSeconds))
    .addOption(new Option('--webhook <url>', "POST the batch's end to this URL, signed (docs/webhooks.md)").argParser(callOption('webhookUrl')))
    .addOption(new Option('--output-cache <mode>', 'the output cache: auto (default), llm or off').argParser(callOption('outputCache')))
    .option('--attach <batch-id>', 'follow a batch started before (after Ctrl-C, or from another machine)')
    .option('--detach', 'start the batch, print its id and return; it runs on')
    .action((target: string | undefined, options) => batch(target, options));

  const schedule = program.command('schedule').description('run a published workflow on a cron schedule (docs/schedules.md): create, list, get, ticks, pause, resume, delete');
  withConnection(
    schedule
      .command('create')
      .argument('<workflow-ref>', 'the published workflow each tick runs: acme/flow@1.2.0, @1 (its latest 1.x) or @latest')
      .description('create a schedule: the workflow runs with these inputs at every tick of the cron expression'),
  )
    .requiredOption('--cron <expression>', 'five fields: minute hour day-of-month month day-of-week (e.g. "0 9 * * 1-5"), or @hourly, @daily, @weekly, @monthly')
    .option('--timezone <zone>', 'the IANA time zone the expression reads in (default UTC), e.g. Europe/Paris')
    .option('--name <text>', 'a label for people')
    .option('-i, --input <name=value>', 'an input of every run, repeatable: a plain value, @https://… (a URL) or @./file (uploaded now)', collect, [])
    .addOption(new Option('--max-cost <usd>', "each run's spend cap (default 0.50)").argParser(positiveNumber))
    .addOption(new Option('--monthly-budget <usd>', 'what its runs may spend in a calendar month of its time zone; a tick that could go over is skipped').argParser(positiveNumber))
    .addOption(new Option('--catch-up <seconds>', 'a tick missed while no worker ran is run late when at most this old (default 3600)').argParser(positiveInteger))
    .addOption(new Option('--max-duration <seconds>', 'cancel each run if it has not finished this many seconds after it started').argParser(wholeSeconds))
    .addOption(new Option('--webhook <url>', 'POST schedule.paused here, signed, when the schedule pauses itself (docs/webhooks.md)').argParser(callOption('webhookUrl')))
    .addOption(new Option('--output-cache <mode>', 'the output cache of its runs: auto (default), llm or off').argParser(callOption('outputCache')))
    .action((workflowRef: string, options) => scheduleCreate(workflowRef, options));
  withConnection(schedule.command('list').description("list your organization's schedules")).addOption(new Option('--status <status>', 'only active or paused ones').choices(['active', 'paused'])).action((options) => scheduleList(options));
  for (const command of scheduleIdCommands(withConnection)) schedule.addCommand(command);

  program.addCommand(apiCommand(withConnection));

  program
    .command('mcp')
    .description('serve the five operations and the batch tools as MCP tools over stdio (env SERVICE_TOKEN required, SERVICE_API_URL optional); also the svc-mcp command')
    .action(() => mcp(version()));

  const overrideExit = (command: Command): void => {
    for (const sub of command.commands) {
      sub.exitOverride();
      overrideExit(sub);
    }
  };
  overrideExit(program);
  return program;
}
