import { spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ensureCliBuilt, MCP_BIN } from '../support/cli-build';
import { seedAccount } from '../support/fixtures';
import { mcpToolBehaviours } from '../support/mcp-behaviours';
import { recordWireProgress, type WireProgress } from '../support/mcp-client';
import { startTestService, type TestService } from '../support/service';
import { failingNode, pauseNode } from '../support/test-nodes';

/** The local MCP server, `svc-mcp` as built from this tree, spawned by the official MCP client over stdio. */
describe('svc-mcp: the local MCP server over stdio', () => {
  let service: TestService;
  let client: Client;
  const wires = new Map<Client, WireProgress[]>();
  let stderr = '';

  /** A client of a fresh `svc-mcp` process acting with `token`. */
  async function connect(token: string): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_BIN],
      env: { PATH: process.env.PATH ?? '', SERVICE_TOKEN: token, SERVICE_API_URL: `${service.url}/` },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const connected = new Client({ name: 'mcp-stdio-test', version: '1.0.0' });
    await connected.connect(transport);
    wires.set(connected, recordWireProgress(transport));
    return connected;
  }

  beforeAll(async () => {
    ensureCliBuilt();
    service = await startTestService({ nodes: [pauseNode, failingNode] });
    client = await connect(service.account.token);
  });

  afterAll(async () => {
    await client?.close();
    await service?.close();
  });

  mcpToolBehaviours(() => ({
    service,
    client,
    wireProgress: wires.get(client)!,
    name: (op) => op,
    readOnlyClient: async () => connect((await seedAccount(service.prisma, { slug: 'reader', scopes: ['read'], balanceMicros: 1_000_000 })).token),
  }));

  it('logs on stderr only, naming the API it calls', () => {
    expect(stderr).toContain(`calling ${service.url}`);
  });

  it('exits 2 with a clear message when SERVICE_TOKEN is missing', () => {
    const result = spawnSync(process.execPath, [MCP_BIN], { env: { PATH: process.env.PATH ?? '' }, input: '', encoding: 'utf8', timeout: 20_000 });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('SERVICE_TOKEN is not set');
    expect(result.stdout).toBe('');
  });
});
