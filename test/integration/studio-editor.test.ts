import {
  EditorWorkflowListSchema,
  EditorWorkflowSchema,
  RunListSchema,
  RunSchema,
  SlugCheckSchema,
  WorkflowVersionDetailSchema,
  WorkflowVersionListSchema,
  type RunEvent,
} from '../../services/contract';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { adder, expectValid, jsonCall, type JsonAnswer } from '../support/json-api';
import { readSse } from '../support/sse';

/** Schema-valid, but the engine refuses it: an unknown node and a reference to a node that is not there. */
const unfinished = {
  version: 2,
  nodes: [
    { id: 'gen', uses: 'no-such-node' },
    { id: 'sum', uses: 'output', inputs: { value: '${missing.result}' } },
  ],
};

const layoutOf = (x: number) => ({ nodes: { add: { x, y: 10 }, sum: { x: x + 200, y: 10.5 } } });

describe('the studio: layouts, draft problems, pending changes, version details, slug checks, runs by workflow', () => {
  let service: TestService;
  let owner: SeededAccount;
  let orgSlug: string;

  beforeAll(async () => {
    service = await startTestService();
    owner = service.account;
    orgSlug = (await service.prisma.organization.findUniqueOrThrow({ where: { id: owner.orgId } })).slug;
  });

  afterAll(async () => {
    await service?.close();
  });

  const call = (method: string, path: string, body?: unknown, token: string | null = owner.token) => jsonCall(service.url, method, path, body, token);

  async function create(body: Record<string, unknown>, token = owner.token): Promise<JsonAnswer> {
    const created = await call('POST', '/editor/workflows', body, token);
    expect(created.status).toBe(201);
    expectValid(EditorWorkflowSchema, created.body);
    return created;
  }

  const publish = (id: string, body: Record<string, unknown>, token = owner.token) => call('POST', `/editor/workflows/${id}/publish`, body, token);
  const summaryOf = async (id: string) => {
    const list = await call('GET', '/editor/workflows');
    expectValid(EditorWorkflowListSchema, list.body);
    return list.body.workflows.find((w: { id: string }) => w.id === id);
  };

  it('refuses a draft or layout holding a key named __proto__ with a 400 naming where, and saves nothing (fault suite S1: a 500)', async () => {
    // Raw JSON, so "__proto__" arrives as an own key. Prisma's JSON columns made a null one the
    // object's prototype and failed (500), and silently dropped an object one.
    for (const value of ['null', '{"polluted":true}']) {
      const before = await service.prisma.workflow.count({ where: { orgId: owner.orgId } });
      const res = await fetch(`${service.url}/editor/workflows`, {
        method: 'POST',
        headers: { ...bearer(owner.token), 'Content-Type': 'application/json' },
        body: `{"name":"Proto","definition":{"version":2,"nodes":[{"id":"n","uses":"math-add","inputs":{"a":1,"__proto__":${value}}}]}}`,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('a key named "__proto__" is not accepted (at definition.nodes[0].inputs.__proto__)') });
      expect(await service.prisma.workflow.count({ where: { orgId: owner.orgId } })).toBe(before);
    }
    const { id } = (await create({ name: 'Laid out' })).body as { id: string };
    const res = await fetch(`${service.url}/editor/workflows/${id}`, { method: 'PATCH', headers: { ...bearer(owner.token), 'Content-Type': 'application/json' }, body: '{"layout":{"nodes":{"__proto__":null}}}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('at layout.nodes.__proto__');
  });

  describe('canvas layouts', () => {
    it('saves a layout with the draft, replaces it alone, and keeps it apart from the definition', async () => {
      const created = await create({ name: 'Drawn', definition: adder(1, 2), layout: layoutOf(0) });
      const id = created.body.id as string;
      expect(created.body).toMatchObject({ draft: adder(1, 2), layout: layoutOf(0), problems: [] });

      const moved = await call('PATCH', `/editor/workflows/${id}`, { layout: layoutOf(50) });
      expect(moved.status).toBe(200);
      expectValid(EditorWorkflowSchema, moved.body);
      expect(moved.body).toMatchObject({ draft: adder(1, 2), layout: layoutOf(50) });
      const read = await call('GET', `/editor/workflows/${id}`);
      expect(read.body.layout).toEqual(layoutOf(50));
      // Replacing the definition leaves the layout as it was.
      expect((await call('PATCH', `/editor/workflows/${id}`, { definition: adder(3, 4) })).body.layout).toEqual(layoutOf(50));
    });

    it('answers layout null for a workflow without one, and refuses a layout of the wrong shape', async () => {
      const bare = await create({ name: 'Bare' });
      expect(bare.body).toMatchObject({ draft: null, layout: null, problems: [], draftPending: false, lastPublishedAt: null });
      const id = bare.body.id as string;
      for (const layout of [{ nodes: { a: { x: 1 } } }, { nodes: { a: { x: 1, y: 2, z: 3 } } }, { nodes: {}, zoom: 2 }, { nodes: { a: { x: '1', y: 2 } } }]) {
        const refused = await call('PATCH', `/editor/workflows/${id}`, { layout });
        expect([JSON.stringify(layout), refused.status, refused.body.code]).toEqual([JSON.stringify(layout), 400, 'validation_failed']);
      }
      const empty = await call('PATCH', `/editor/workflows/${id}`, {});
      expect(empty.status).toBe(400);
      expect(empty.body.error).toContain('"layout"');
    });
  });

  describe('drafts that the engine refuses', () => {
    it('saves them on create and update with their problems; publishing refuses them with the same messages', async () => {
      const created = await create({ name: 'Unfinished', definition: unfinished });
      const id = created.body.id as string;
      expect(created.body.draft).toEqual(unfinished);
      const problems = created.body.problems as { path: string; message: string }[];
      expect(problems.length).toBeGreaterThanOrEqual(2);
      expect(problems.map((p) => p.path)).toEqual(expect.arrayContaining([expect.stringMatching(/^nodes\[0\]/), expect.stringMatching(/^nodes\[1\]/)]));

      const refused = await publish(id, { slug: 'unfinished' });
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('validation_failed');
      // Publishing names the same problems, under "draft.".
      expect(refused.body.issues).toEqual(problems.map((p) => ({ path: `draft.${p.path}`, message: p.message })));
      expect((await call('GET', `/editor/workflows/${id}/versions`)).body.versions).toEqual([]);

      // Finished, it has no problems and publishes.
      const fixed = await call('PATCH', `/editor/workflows/${id}`, { definition: adder(1, 1) });
      expect(fixed.status).toBe(200);
      expect(fixed.body.problems).toEqual([]);
      expect((await publish(id, { slug: 'unfinished' })).status).toBe(201);
    });

    it('lists the problems of a saved draft against the catalog as it is now', async () => {
      const created = await create({ name: 'Aged', definition: adder(1, 1) });
      const id = created.body.id as string;
      const aged = { version: 2, nodes: [{ id: 'gone', uses: 'retired-node' }, { id: 'out', uses: 'output', inputs: { value: 'done' } }] };
      await service.prisma.workflow.update({ where: { id }, data: { draft: aged } });
      const read = await call('GET', `/editor/workflows/${id}`);
      expect(read.body.problems).toEqual([{ path: 'nodes[0].uses', message: expect.stringContaining('names no known node "retired-node"') }]);
    });
  });

  describe('pending changes and the last publish', () => {
    it('tells whether the draft has changes not yet published, in the list and the workflow alike', async () => {
      const empty = await create({ name: 'Pending', definition: { version: 2, nodes: [] } });
      const id = empty.body.id as string;
      // Never published: pending once the draft has nodes.
      expect(empty.body).toMatchObject({ draftPending: false, lastPublishedAt: null });
      const drawn = await call('PATCH', `/editor/workflows/${id}`, { definition: adder(1, 2) });
      expect(drawn.body).toMatchObject({ draftPending: true, lastPublishedAt: null });
      expect(await summaryOf(id)).toMatchObject({ draftPending: true, lastPublishedAt: null });

      expect((await publish(id, { slug: 'pending-changes' })).status).toBe(201);
      const published = await call('GET', `/editor/workflows/${id}`);
      const [version] = (await call('GET', `/editor/workflows/${id}/versions`)).body.versions;
      expect(published.body).toMatchObject({ draftPending: false, lastPublishedAt: version.createdAt });
      expect(await summaryOf(id)).toMatchObject({ draftPending: false, lastPublishedAt: version.createdAt });

      // Saving the same definition again (an autosave) and moving nodes change nothing to publish.
      expect((await call('PATCH', `/editor/workflows/${id}`, { definition: adder(1, 2) })).body.draftPending).toBe(false);
      expect((await call('PATCH', `/editor/workflows/${id}`, { name: 'Renamed', layout: layoutOf(5) })).body.draftPending).toBe(false);
      // A changed definition does.
      expect((await call('PATCH', `/editor/workflows/${id}`, { definition: adder(2, 2) })).body.draftPending).toBe(true);
      expect(await summaryOf(id)).toMatchObject({ draftPending: true });

      // A rollback of the latest pointer is not a publish: the last publish time stays.
      expect((await publish(id, { bump: 'minor' })).status).toBe(201);
      const versions = (await call('GET', `/editor/workflows/${id}/versions`)).body.versions;
      const rolledBack = await call('POST', `/editor/workflows/${id}/latest`, { version: '1.0.0' });
      expectValid(EditorWorkflowSchema, rolledBack.body);
      expect(rolledBack.body).toMatchObject({ draftPending: false, lastPublishedAt: versions[0].createdAt, latest: { version: '1.0.0' } });
    });
  });

  describe('version notes and one version in full', () => {
    let id: string;

    beforeAll(async () => {
      id = (await create({ name: 'Noted', definition: adder(1, 1), layout: layoutOf(0) })).body.id as string;
      expect((await publish(id, { slug: 'noted', note: 'First cut: adds two numbers' })).status).toBe(201);
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(2, 2), layout: layoutOf(300) });
      expect((await publish(id, { bump: 'patch' })).status).toBe(201);
    });

    it('keeps the changelog note with each version (null when none was given)', async () => {
      const history = await call('GET', `/editor/workflows/${id}/versions`);
      expectValid(WorkflowVersionListSchema, history.body);
      expect(history.body.versions.map((v: { version: string; note: string | null }) => [v.version, v.note])).toEqual([
        ['1.0.1', null],
        ['1.0.0', 'First cut: adds two numbers'],
      ]);
      const tooLong = await publish(id, { bump: 'patch', note: 'x'.repeat(2001) });
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.code).toBe('validation_failed');
    });

    it('answers one version with its definition, the layout saved at publish, its note and publisher', async () => {
      const first = await call('GET', `/editor/workflows/${id}/versions/1.0.0`);
      expect(first.status).toBe(200);
      expectValid(WorkflowVersionDetailSchema, first.body);
      expect(first.body).toMatchObject({
        version: '1.0.0',
        sequence: 1,
        latest: false,
        note: 'First cut: adds two numbers',
        publishedBy: { id: owner.userId },
        definition: adder(1, 1),
        layout: layoutOf(0),
      });
      // A later layout change of the draft leaves the published one as it was.
      const second = await call('GET', `/editor/workflows/${id}/versions/1.0.1`);
      expect(second.body).toMatchObject({ version: '1.0.1', sequence: 2, latest: true, note: null, definition: adder(2, 2), layout: layoutOf(300) });
      await call('PATCH', `/editor/workflows/${id}`, { layout: layoutOf(900) });
      expect((await call('GET', `/editor/workflows/${id}/versions/1.0.1`)).body.layout).toEqual(layoutOf(300));
    });

    it('answers layout null for a version published without one', async () => {
      const plain = (await create({ name: 'Plain', definition: adder(1, 1) })).body.id as string;
      await publish(plain, { slug: 'plain-layout' });
      expect((await call('GET', `/editor/workflows/${plain}/versions/1.0.0`)).body).toMatchObject({ layout: null, note: null });
    });

    it('answers 404 for an unknown version, workflow or another organization\'s workflow, 400 for a malformed version', async () => {
      const missing = await call('GET', `/editor/workflows/${id}/versions/9.9.9`);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toContain('no published version 9.9.9');
      expect((await call('GET', '/editor/workflows/00000000-0000-4000-8000-000000000000/versions/1.0.0')).status).toBe(404);
      expect((await call('GET', '/editor/workflows/not-a-uuid/versions/1.0.0')).status).toBe(404);
      const stranger = await seedAccount(service.prisma, { slug: 'peeker', scopes: ['read'] });
      expect((await call('GET', `/editor/workflows/${id}/versions/1.0.0`, undefined, stranger.token)).status).toBe(404);
      for (const version of ['1.0', 'latest', '1.0.0-beta']) {
        const bad = await call('GET', `/editor/workflows/${id}/versions/${version}`);
        expect([version, bad.status, bad.body.code]).toEqual([version, 400, 'validation_failed']);
      }
      expect((await call('GET', `/editor/workflows/${id}/versions/1.0.0`, undefined, null)).status).toBe(401);
    });
  });

  describe('slug checks', () => {
    const check = (slug: string, token: string | null = owner.token) => call('GET', `/editor/slugs/${encodeURIComponent(slug)}`, undefined, token);

    it('answers a free slug as available with the address it would give', async () => {
      const free = await check('brand-new-thing');
      expect(free.status).toBe(200);
      expectValid(SlugCheckSchema, free.body);
      expect(free.body).toEqual({ slug: 'brand-new-thing', address: `${orgSlug}/brand-new-thing`, available: true, message: 'available' });
    });

    it('answers a malformed slug with 200, available false and the reason, as the user types', async () => {
      for (const slug of ['Not_Kebab', 'trailing-', 'a'.repeat(65)]) {
        const res = await check(slug);
        expect([slug, res.status]).toEqual([slug, 200]);
        expectValid(SlugCheckSchema, res.body);
        expect(res.body).toMatchObject({ slug, address: null, available: false });
        expect(res.body.message).toBe(`workflow slug "${slug}" must be kebab-case (lowercase letters, digits and single hyphens, 1 to 64 characters)`);
      }
    });

    it('names the workflow that holds a taken slug, and says when a deleted workflow retired it', async () => {
      const holder = (await create({ name: 'Slug Holder', definition: adder(1, 1) })).body.id as string;
      expect((await publish(holder, { slug: 'held-slug' })).status).toBe(201);
      const taken = await check('held-slug');
      expect(taken.body).toEqual({
        slug: 'held-slug',
        address: `${orgSlug}/held-slug`,
        available: false,
        message: `the address ${orgSlug}/held-slug is already taken by workflow "Slug Holder" in this organization; choose another slug`,
      });

      expect((await call('DELETE', `/editor/workflows/${holder}`)).status).toBe(204);
      const retired = await check('held-slug');
      expect(retired.body).toMatchObject({ available: false, address: `${orgSlug}/held-slug` });
      expect(retired.body.message).toContain('retired by a deleted workflow');
      // What the check says, the publish does.
      const heir = (await create({ name: 'Heir', definition: adder(1, 1) })).body.id as string;
      expect((await publish(heir, { slug: 'held-slug' })).status).toBe(409);

      // Another organization's namespace is its own; a read-only token may check.
      const other = await seedAccount(service.prisma, { slug: 'other-ns', scopes: ['read'] });
      const theirs = await check('held-slug', other.token);
      expect(theirs.body).toMatchObject({ available: true, address: `${other.orgSlug}/held-slug` });
    });

    it('refuses an organization slug that cannot namespace workflows, and a caller without a token', async () => {
      const legacy = await seedAccount(service.prisma, { slug: 'legacy-ns', scopes: ['read'] });
      await service.prisma.organization.update({ where: { id: legacy.orgId }, data: { slug: 'core' } });
      const res = await check('anything', legacy.token);
      expect(res.body).toMatchObject({ available: false, address: 'core/anything' });
      expect(res.body.message).toContain('reserved');
      expect((await check('anything', null)).status).toBe(401);
    });
  });

  describe('runs with their workflow', () => {
    let id: string;
    let versionRuns: string[];
    let inlineRun: string;

    async function run(body: Record<string, unknown>): Promise<string> {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
      expect(events.at(-1)!.type).toBe('run.completed');
      return (events[0] as { runId: string }).runId;
    }

    beforeAll(async () => {
      id = (await create({ name: 'Counted', definition: adder(2, 3) })).body.id as string;
      await publish(id, { slug: 'counted' });
      const v1 = await run({ workflowRef: `${orgSlug}/counted` });
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(10, 10) });
      await publish(id, { bump: 'major' });
      const v2 = await run({ workflowRef: `${orgSlug}/counted@2.0.0` });
      const v2again = await run({ workflowRef: id });
      versionRuns = [v2again, v2, v1];
      inlineRun = await run({ workflow: adder(1, 1) });
    });

    it('answers a run record with the workflowRef of the version it ran and the definition as run', async () => {
      const record = await call('GET', `/v1/runs/${versionRuns[2]}`);
      expect(record.status).toBe(200);
      expectValid(RunSchema, record.body);
      expect(record.body).toMatchObject({ workflowRef: `${orgSlug}/counted@1.0.0`, workflowId: id, workflowName: 'Counted', workflow: adder(2, 3) });
      expect((await call('GET', `/v1/runs/${versionRuns[0]}`)).body).toMatchObject({ workflowRef: `${orgSlug}/counted@2.0.0`, workflow: adder(10, 10) });
      const inline = await call('GET', `/v1/runs/${inlineRun}`);
      expect(inline.body).toMatchObject({ workflowRef: null, workflow: adder(1, 1) });
    });

    it('filters the listing by workflow address, across its versions, page by page', async () => {
      const all = await call('GET', '/v1/runs?limit=100');
      expectValid(RunListSchema, all.body);
      const listed = all.body.runs.find((r: { id: string }) => r.id === versionRuns[2]);
      expect(listed.workflowRef).toBe(`${orgSlug}/counted@1.0.0`);
      expect(all.body.runs.find((r: { id: string }) => r.id === inlineRun).workflowRef).toBeNull();

      const filtered = await call('GET', `/v1/runs?workflow=${encodeURIComponent(`${orgSlug}/counted`)}`);
      expect(filtered.status).toBe(200);
      expectValid(RunListSchema, filtered.body);
      expect(filtered.body.runs.map((r: { id: string }) => r.id)).toEqual(versionRuns);
      expect(filtered.body.nextCursor).toBeNull();

      // Pages of the filtered listing follow one another.
      const page1 = await call('GET', `/v1/runs?limit=2&workflow=${orgSlug}/counted`);
      expect(page1.body.runs.map((r: { id: string }) => r.id)).toEqual(versionRuns.slice(0, 2));
      const page2 = await call('GET', `/v1/runs?limit=2&workflow=${orgSlug}/counted&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
      expect(page2.body).toMatchObject({ runs: [{ id: versionRuns[2] }], nextCursor: null });

      // With a status filter too.
      expect((await call('GET', `/v1/runs?workflow=${orgSlug}/counted&status=failed`)).body.runs).toEqual([]);
    });

    it('answers an empty page for an address or UUID that names no workflow, and 400 for one that is neither', async () => {
      expect((await call('GET', `/v1/runs?workflow=${orgSlug}/no-such-workflow`)).body).toEqual({ runs: [], nextCursor: null });
      expect((await call('GET', '/v1/runs?workflow=00000000-0000-4000-8000-000000000000')).body).toEqual({ runs: [], nextCursor: null });
      for (const workflow of ['Not An Address', 'just-a-slug', `${orgSlug}/counted@1.0.0`]) {
        const bad = await call('GET', `/v1/runs?workflow=${encodeURIComponent(workflow)}`);
        expect([workflow, bad.status, bad.body.code]).toEqual([workflow, 400, 'validation_failed']);
      }
    });

    it("lists only the caller's organization's runs of a workflow, even of another organization's workflow", async () => {
      const borrower = await seedAccount(service.prisma, { slug: 'borrower', scopes: ['run'], balanceMicros: 1_000_000 });
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(borrower.token), body: JSON.stringify({ workflowRef: `${orgSlug}/counted` }) });
      await readSse(res);
      const theirs = await call('GET', `/v1/runs?workflow=${orgSlug}/counted`, undefined, borrower.token);
      expect(theirs.body.runs).toHaveLength(1);
      expect(theirs.body.runs[0].workflowRef).toBe(`${orgSlug}/counted@2.0.0`);
      expect((await call('GET', `/v1/runs?workflow=${orgSlug}/counted`)).body.runs.map((r: { id: string }) => r.id)).toEqual(versionRuns);
    });
  });
});
