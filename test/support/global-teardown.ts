import fs from 'node:fs';
import { stopServers } from './local-servers';
import type { StackRecord } from './stale-stacks';
import { STACK_FILE_ENV } from './stack';

/**
 * Jest global teardown of the integration project (it runs whether tests passed or failed): stops
 * the stack's servers and removes its directory. A failure to stop is reported after the removal.
 */
export default async function globalTeardown(): Promise<void> {
  const file = process.env[STACK_FILE_ENV];
  if (!file || !fs.existsSync(file)) return;
  const record = JSON.parse(fs.readFileSync(file, 'utf8')) as StackRecord;
  const failures = await stopServers(record);
  fs.rmSync(record.tmpDir, { recursive: true, force: true });
  delete process.env[STACK_FILE_ENV];
  if (failures.length) throw new Error(`stopping the integration-test stack failed:\n- ${failures.join('\n- ')}`);
}
