/**
 * `npm run admin -- <command>`: creates and lists organizations and users, adds members and
 * credit, and issues personal access tokens (for CI), against DATABASE_URL. See docs/auth.md.
 *
 *   org create <slug> --name <name>            org list
 *   org limit <slug> --step-concurrency <n|default>
 *   user create <email> --name <name> [--password-stdin]    user list
 *   member add <org-slug> <email> [--role owner|admin|member]
 *   credit add <org-slug> <usd> --note <text>
 *   token create <email> --org <slug> --name <name> --scopes read,run [--expires-days N]
 *
 * `--json` prints one JSON document on stdout. Errors print one line on stderr and exit 1 (2
 * for a configuration error). A password is read from stdin, never from the arguments (they are
 * visible to every user of the machine in the process list).
 */
import { Command, CommanderError } from 'commander';
import { microsToUsd } from '../services/engine/money';
import { AppError } from '../services/platform/app-error';
import { ConfigError, loadSettings } from '../services/platform/config';
import { createPrismaClient, type PrismaClient } from '../services/store';
import { AccountAdmin, ROLES } from '../services/store/account-admin';
import { usdText as usd } from '../services/engine/money';

type Print = (json: unknown, lines: string[]) => void;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The password piped in: one trailing line break (from `echo` or a file) is not part of it. */
async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password (then Enter and Ctrl-D): ');
  return (await readStdin()).replace(/\r?\n$/, '');
}


/** The command tree; `run` gets the admin operations over an open database and prints. */
function buildProgram(run: (work: (admin: AccountAdmin, print: Print) => Promise<void>, json: boolean) => Promise<void>): Command {
  const program = new Command('admin')
    .description('Administer accounts: organizations, users, memberships, credit and tokens (DATABASE_URL)')
    .option('--json', 'print one JSON document instead of text')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  const json = (cmd: Command) => Boolean(cmd.optsWithGlobals().json);

  const org = program.command('org').description('organizations');
  org.command('create <slug>')
    .description('create an organization (kebab-case slug; platform namespaces such as "core" are reserved)')
    .requiredOption('--name <name>', 'display name')
    .action((slug: string, opts: { name: string }, cmd: Command) => run(async (admin, print) => {
      const created = await admin.createOrganization(slug, opts.name);
      print({ organization: created }, [`created organization ${created.slug} (${created.name}), id ${created.id}`]);
    }, json(cmd)));
  org.command('list')
    .description('list organizations with their balances and own step concurrency limits')
    .action((_opts: unknown, cmd: Command) => run(async (admin, print) => {
      const orgs = await admin.listOrganizations();
      print({ organizations: orgs.map((o) => ({ ...o, balanceUsd: microsToUsd(o.balanceMicros) })) }, orgs.map((o) => `${o.slug}\t${o.name}\t${usd(o.balanceMicros)}\t${o.id}${o.stepConcurrency === null ? '' : `\tsteps at once: ${o.stepConcurrency || 'no limit'}`}`));
    }, json(cmd)));
  org.command('limit <slug>')
    .description("set the organization's own limit of step jobs queued or running at once (fair scheduling, docs/scheduling.md)")
    .requiredOption('--step-concurrency <n>', 'a whole number (0: no limit), or "default" for ORG_STEP_CONCURRENCY')
    .action((slug: string, opts: { stepConcurrency: string }, cmd: Command) => run(async (admin, print) => {
      const organization = await admin.setStepConcurrency(slug, opts.stepConcurrency);
      const limit = organization.stepConcurrency;
      print({ organization: organization.slug, stepConcurrency: limit }, [`${organization.slug}: ${limit === null ? 'the default ORG_STEP_CONCURRENCY' : limit === 0 ? 'no limit' : `${limit} step jobs at once`}; workers apply it within ORG_LIMITS_SYNC_SECONDS`]);
    }, json(cmd)));

  const user = program.command('user').description('users');
  user.command('create <email>')
    .description('create a user')
    .requiredOption('--name <name>', 'display name')
    .option('--password-stdin', 'read the web editor sign-in password from stdin (at least 10 characters)')
    .action((email: string, opts: { name: string; passwordStdin?: boolean }, cmd: Command) => run(async (admin, print) => {
      const password = opts.passwordStdin ? await passwordFromStdin() : undefined;
      const created = await admin.createUser(email, opts.name, password);
      print({ user: created, password: password !== undefined }, [`created user ${created.email} (${created.name}), id ${created.id}${password === undefined ? ', no password' : ''}`]);
    }, json(cmd)));
  user.command('list')
    .description('list users and their organizations')
    .action((_opts: unknown, cmd: Command) => run(async (admin, print) => {
      const users = await admin.listUsers();
      print({ users: users.map((u) => ({ ...u.user, memberships: u.memberships })) }, users.map((u) => `${u.user.email}\t${u.user.name}\t${u.memberships.map((m) => `${m.slug}:${m.role}`).join(',') || '-'}`));
    }, json(cmd)));

  program.command('member').description('memberships')
    .command('add <org-slug> <email>')
    .description('add a user to an organization')
    .option('--role <role>', `one of ${ROLES.join(', ')}`, 'member')
    .action((orgSlug: string, email: string, opts: { role: string }, cmd: Command) => run(async (admin, print) => {
      const added = await admin.addMember(orgSlug, email, opts.role);
      print({ organization: added.organization.slug, user: added.user.email, role: added.membership.role }, [`added ${added.user.email} to ${added.organization.slug} as ${added.membership.role}`]);
    }, json(cmd)));

  program.command('credit').description("organizations' balances")
    .command('add <org-slug> <usd>')
    .description('add credit to an organization (a ledger entry), e.g. credit add acme 25.00 --note "invoice 1042"')
    .requiredOption('--note <text>', 'why (kept in the ledger)')
    .action((orgSlug: string, amount: string, opts: { note: string }, cmd: Command) => run(async (admin, print) => {
      const { organization, micros, posting } = await admin.addCredit(orgSlug, amount, opts.note);
      print(
        { organization: organization.slug, creditUsd: microsToUsd(micros), creditMicros: micros, balanceUsd: microsToUsd(posting.balanceMicros), entryId: posting.entry.id },
        [`credited ${organization.slug} with ${usd(micros)}; balance ${usd(posting.balanceMicros)}`],
      );
    }, json(cmd)));

  program.command('token').description('personal access tokens')
    .command('create <email>')
    .description('issue a personal access token for a member (printed once; only its hash is stored)')
    .requiredOption('--org <slug>', 'organization it acts in')
    .requiredOption('--name <name>', 'what it is for')
    .requiredOption('--scopes <list>', 'comma-separated: read, run')
    .option('--expires-days <n>', 'days until it expires (1 to 365); default: never')
    .action((email: string, opts: { org: string; name: string; scopes: string; expiresDays?: string }, cmd: Command) => run(async (admin, print) => {
      const { token, value } = await admin.createToken(email, opts);
      if (!json(cmd)) {
        // The value alone on stdout (for `$(npm run -s admin -- token create ...)`); the rest on stderr.
        process.stderr.write(`token ${token.displayPrefix}… "${token.name}" for ${email} in ${opts.org}, scopes ${token.scopes.join(',')}, ${token.expiresAt ? `expires ${token.expiresAt.toISOString()}` : 'no expiry'}; shown only now\n`);
      }
      print({ id: token.id, name: token.name, prefix: token.displayPrefix, scopes: token.scopes, expiresAt: token.expiresAt, token: value }, [value]);
    }, json(cmd)));

  return program;
}

// The README's commands run against make run's database only with its settings loaded.
const SETTINGS_HINT = 'for the database of make run: make admin ARGS="...", or first: set -a; . .data/env; set +a';

function oneLine(err: unknown): string {
  if (err instanceof ConfigError) return `${err.problems.join('; ')}; ${SETTINGS_HINT}`;
  if (err instanceof AppError || err instanceof RangeError) return err.message;
  return err instanceof Error ? `unexpected failure: ${err.message}` : `unexpected failure: ${String(err)}`;
}

async function main(argv: string[]): Promise<number> {
  let prisma: PrismaClient | undefined;
  const run = async (work: (admin: AccountAdmin, print: Print) => Promise<void>, json: boolean): Promise<void> => {
    const { databaseUrl } = loadSettings(['databaseUrl']);
    prisma = createPrismaClient(databaseUrl, { poolSize: 2 });
    const print: Print = (doc, lines) => process.stdout.write(json ? `${JSON.stringify(doc, null, 2)}\n` : lines.map((l) => `${l}\n`).join(''));
    await work(new AccountAdmin(prisma), print);
  };
  try {
    await buildProgram(run).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    // Commander has printed its own message (usage errors, --help) already.
    if (err instanceof CommanderError) return err.exitCode;
    process.stderr.write(`admin: ${oneLine(err)}\n`);
    return err instanceof ConfigError ? 2 : 1;
  } finally {
    await prisma?.$disconnect();
  }
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
