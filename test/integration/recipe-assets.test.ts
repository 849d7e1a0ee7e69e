import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import type { Artifact, RunEvent, Workflow } from '../../services/contract';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * SPEC Limits: recipe assets (files a workflow definition carries) "live as long as the
 * workflow"; run artifacts expire after 30 days. Publishing copies a definition's refs into the
 * workflow's assets; the editor uploads assets; deleting the workflow withdraws them.
 */
describe('recipe assets', () => {
  let service: TestService;
  let foreign: http.Server;
  let foreignUrl: string;
  let png: Buffer;

  beforeAll(async () => {
    png = await sharp({ create: { width: 4, height: 3, channels: 3, background: '#c00' } }).png().toBuffer();
    foreign = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'image/png' }).end(png));
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    const { port } = foreign.address() as AddressInfo;
    foreignUrl = `http://127.0.0.1:${port}/red.png`;
    service = await startTestService({ blobs: 's3', env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${port}`, FETCH_MAX_BYTES: '100000' } });
  });

  afterAll(async () => {
    await service?.close();
    await new Promise((resolve) => foreign?.close(resolve));
  });

  const json = () => ({ ...bearer(service.account.token), 'Content-Type': 'application/json' });

  async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const res = await fetch(`${service.url}${path}`, { method, headers: json(), body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  }

  async function draft(name: string, definition: Workflow): Promise<string> {
    const created = await call('POST', '/editor/workflows', { name, definition });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  async function run(body: Record<string, unknown>): Promise<RunEvent[]> {
    const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: json(), body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return (await readSse(res)).slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent);
  }

  const upload = (id: string, bytes: Buffer, type: string, headers: Record<string, string> = bearer(service.account.token)) =>
    fetch(`${service.url}/editor/workflows/${id}/assets`, { method: 'POST', headers: { ...headers, 'Content-Type': type }, body: bytes });

  /** An image input with `image` as its default, converted to webp. */
  const converter = (image: Artifact): Workflow => ({
    version: 2,
    nodes: [
      { id: 'picture', uses: 'input', outputType: 'IMAGE', inputs: { default: image } },
      { id: 'webp', uses: 'image-convert', inputs: { image: '${picture.value}', format: 'webp' } },
      { id: 'out', uses: 'output', inputs: { value: '${webp.image}' } },
    ],
  });

  const expiresYear = (ref: string) => new Date(Number(new URL(ref).searchParams.get('expires')) * 1000).getUTCFullYear();

  it('uploads an asset through the editor, with limits on size and type, answering a ref usable in a definition', async () => {
    const id = await draft('Uploads', converter({ kind: 'image', ref: foreignUrl }));
    const res = await upload(id, png, 'image/png');
    expect(res.status).toBe(201);
    const asset = (await res.json()) as Artifact;
    expect(asset).toMatchObject({ kind: 'image', mimeType: 'image/png' });
    expect(asset.ref).toContain(`/blobs/workflows/${id}/assets/`);
    expect(expiresYear(asset.ref!)).toBeGreaterThan(9000);
    expect(Buffer.from(await (await fetch(asset.ref!)).arrayBuffer())).toEqual(png);

    expect((await upload(id, png, 'text/html')).status).toBe(415);
    expect((await upload(id, Buffer.alloc(0), 'image/png')).status).toBe(400);
    expect((await upload(id, Buffer.alloc(200_000), 'image/png')).status).toBe(413);
    expect((await upload(id, png, 'image/png', {})).status).toBe(401);
    expect((await upload('00000000-0000-4000-8000-000000000000', png, 'image/png')).status).toBe(404);

    // An uploaded asset stays as it is when the workflow is published.
    expect((await call('PATCH', `/editor/workflows/${id}`, { definition: converter(asset) })).status).toBe(200);
    const published = await call('POST', `/editor/workflows/${id}/publish`, { slug: 'uploads' });
    expect(published.status).toBe(201);
    expect(published.body.workflow.nodes[0].inputs.default.ref).toBe(asset.ref);
  });

  it('copies a run output and a foreign file into the workflow at publish; run artifacts expire, the copies do not', async () => {
    const ran = await run({ workflow: converter({ kind: 'image', ref: foreignUrl }) });
    const output = (ran.at(-1) as Extract<RunEvent, { type: 'run.completed' }>).outputs.out!;
    expect(output.ref).toContain('/blobs/runs/');
    expect(expiresYear(output.ref!)).toBeLessThan(9000);

    const recipe: Workflow = {
      version: 2,
      nodes: [
        { id: 'picture', uses: 'input', outputType: 'IMAGE', inputs: { default: output } },
        { id: 'png', uses: 'image-convert', inputs: { image: '${picture.value}', format: 'png' } },
        { id: 'stamp', uses: 'image-composite', inputs: { base: '${png.image}', overlay: { kind: 'image', ref: foreignUrl } } },
        { id: 'out', uses: 'output', inputs: { value: '${stamp.image}' } },
      ],
    };
    const id = await draft('Recipe', recipe);
    const published = await call('POST', `/editor/workflows/${id}/publish`, { slug: 'recipe' });
    expect(published.status).toBe(201);
    const [picture, , stamp] = published.body.workflow.nodes;
    for (const asset of [picture.inputs.default, stamp.inputs.overlay] as Artifact[]) {
      expect(asset.ref).toContain(`/blobs/workflows/${id}/assets/`);
      expect(expiresYear(asset.ref!)).toBeGreaterThan(9000);
    }
    expect(picture.inputs.default).toMatchObject({ kind: 'image', mimeType: 'image/webp' });
    // The draft follows the copies: the next publish does not depend on the run artifact.
    expect((await call('GET', `/editor/workflows/${id}`)).body.draft.nodes[0].inputs.default.ref).toBe(picture.inputs.default.ref);

    // Every run artifact's retention ends; the sweeper deletes them, and not the assets.
    await service.prisma.artifact.updateMany({ where: { runId: { not: null } }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await service.runtime.sweeper!.sweepOnce()).deleted).toBeGreaterThan(0);
    expect((await fetch(output.ref!)).status).toBe(404);
    const copy = await fetch(picture.inputs.default.ref);
    expect(copy.status).toBe(200);
    expect(copy.headers.get('content-type')).toBe('image/webp');

    // The published workflow still runs from its assets.
    const again = await run({ workflowRef: `${published.body.address}` });
    expect(again.at(-1)).toMatchObject({ type: 'run.completed', outputs: { out: { kind: 'image' } } });

    // Deleting the workflow withdraws its assets at once; the sweeper then deletes their blobs.
    expect((await call('DELETE', `/editor/workflows/${id}`)).status).toBe(204);
    expect((await fetch(picture.inputs.default.ref)).status).toBe(404);
    await service.runtime.sweeper!.sweepOnce();
    const left = await service.prisma.artifact.findMany({ where: { blobKey: { startsWith: `workflows/${id}/assets/` } } });
    expect(left).toHaveLength(2);
    expect(left.every((row) => row.deletedAt !== null)).toBe(true);
  });

  it('refuses to publish a ref that no longer resolves', async () => {
    const ran = await run({ workflow: converter({ kind: 'image', ref: foreignUrl }) });
    const output = (ran.at(-1) as Extract<RunEvent, { type: 'run.completed' }>).outputs.out!;
    const tampered = { ...output, ref: output.ref!.replace(/signature=[^&]+/, 'signature=forged') };
    const id = await draft('Broken', converter(tampered));
    const refused = await call('POST', `/editor/workflows/${id}/publish`, { slug: 'broken' });
    expect(refused.status).toBe(400);
    expect((await call('GET', `/editor/workflows/${id}/versions`)).body.versions).toEqual([]);
  });
});

describe('the node catalog', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  it('is served to a call with a garbage, unknown, or no token alike (SPEC: 401 applies to all except the node catalog)', async () => {
    for (const headers of [{}, bearer('garbage'), bearer('svc_broken'), { Authorization: 'Basic abc' }, bearer(service.account.token)]) {
      const list = await fetch(`${service.url}/v1/nodes?q=math-add`, { headers });
      expect([headers, list.status]).toEqual([headers, 200]);
      expect(((await list.json()) as { id: string }[]).map((n) => n.id)).toContain('math-add');
      const one = await fetch(`${service.url}/v1/nodes/math-add`, { headers });
      expect([headers, one.status]).toEqual([headers, 200]);
    }
    // Everything else still refuses a bad token.
    expect((await fetch(`${service.url}/v1/workflows/acme%2Fflow`, { headers: bearer('garbage') })).status).toBe(401);
  });
});
