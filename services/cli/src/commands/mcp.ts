import { readStdioSettings, serveStdio } from '../../../mcp';
import { usageError } from '../cli-error';
import { cliEnv, type CliEnv } from '../cli-config';

/**
 * `svc mcp` (also the `svc-mcp` bin): the local MCP server over stdio, configured by env only
 * (SPEC Authentication): `SERVICE_TOKEN` required, `SERVICE_API_URL` optional. Returns when the
 * client closes stdin. Logs go to stderr: stdout is the protocol.
 */
export async function mcp(version: string, env: CliEnv = cliEnv()): Promise<void> {
  const settings = readStdioSettings(env);
  if (!settings.ok) throw usageError(settings.message, 'missing_token');
  await serveStdio({ token: settings.token, baseUrl: settings.baseUrl, version, log: (line) => process.stderr.write(`${line}\n`) });
}
