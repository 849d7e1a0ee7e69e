import fs from 'node:fs';
import { stopStack } from './global-setup';
import { STACK_FILE, type Stack } from './stack';

/** Stops the servers global-setup started and removes their directory, whatever the results. */
export default async function globalTeardown(): Promise<void> {
  if (!fs.existsSync(STACK_FILE)) return;
  const s = JSON.parse(fs.readFileSync(STACK_FILE, 'utf8')) as Stack;
  await stopStack(s);
  fs.rmSync(STACK_FILE, { force: true });
}
