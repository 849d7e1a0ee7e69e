/**
 * `make run`, after migrating: creates (or finds) the dev organization, user and token, then
 * prints shell lines to use them, e.g. `eval "$(tsx workers/dev-bootstrap.ts)"`.
 */
import path from 'node:path';
import { ConfigError, loadSettings } from '../services/platform/config';
import { createPrismaClient } from '../services/store';
import { bootstrapDevAccount, DEV_ACCOUNT } from '../services/store/dev-account';
import { usdText } from '../services/engine/money';

async function main(): Promise<void> {
  const { databaseUrl, dataDir, publicBaseUrl } = loadSettings(['databaseUrl', 'dataDir', 'publicBaseUrl']);
  const prisma = createPrismaClient(databaseUrl, { poolSize: 2 });
  try {
    const account = await bootstrapDevAccount({ db: prisma, dataDir });
    const tokenFile = path.join(dataDir, DEV_ACCOUNT.tokenFile);
    console.log(`# dev organization "${DEV_ACCOUNT.orgSlug}" (balance ${usdText(account.balanceMicros)}), owner ${DEV_ACCOUNT.email}`);
    console.log(`# token ${account.tokenReused ? 'reused from' : 'issued and saved to'} ${tokenFile} (scopes ${DEV_ACCOUNT.scopes.join(', ')})`);
    console.log(
      account.password === null
        ? `# studio (the web editor) at ${publicBaseUrl}/ and svc login: sign in as ${DEV_ACCOUNT.email} with the password set for it (make admin)`
        : `# studio (the web editor) at ${publicBaseUrl}/ and svc login: sign in as ${DEV_ACCOUNT.email}, password ${account.password} (saved in ${path.join(dataDir, DEV_ACCOUNT.passwordFile)})`,
    );
    console.log(`export SERVICE_TOKEN=${account.token}`);
    console.log(`export SERVICE_URL=${publicBaseUrl}`);
  } finally {
    await prisma.$disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
