import {
  EditorWorkflowListSchema,
  EditorWorkflowSchema,
  PublishedWorkflowSchema,
  WorkflowVersionListSchema,
  validate,
  type RunEvent,
} from '../../services/contract';
import { issueToken } from '../../services/platform/access-token';
import type { PrismaClient } from '../../services/store';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { adder, jsonCall, type JsonAnswer } from '../support/json-api';
import { readSse } from '../support/sse';

/** Another user of `orgId` with `role` and a personal token; returns the token. */
async function addMember(prisma: PrismaClient, orgId: string, role: 'owner' | 'admin' | 'member', scopes = ['read', 'run']): Promise<{ token: string; userId: string }> {
  const user = await prisma.user.create({ data: { email: `${role}-${Math.random().toString(36).slice(2)}@example.test`, name: `A ${role}` } });
  await prisma.membership.create({ data: { orgId, userId: user.id, role } });
  const issued = issueToken('personal');
  await prisma.accessToken.create({
    data: { userId: user.id, orgId, name: 'test', kind: 'personal', displayPrefix: issued.displayPrefix, tokenHash: issued.hash, scopes },
  });
  return { token: issued.value, userId: user.id };
}

describe('published workflows: the editor endpoints, workflows.get and runs by workflowRef', () => {
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

  const call = (method: string, path: string, body?: unknown, token = owner.token) => jsonCall(service.url, method, path, body, token);

  /** A new draft of `adder(a, b)`; returns its id. */
  async function draft(name: string, definition: unknown = adder(2, 3), token = owner.token): Promise<string> {
    const created = await call('POST', '/editor/workflows', { name, definition }, token);
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  async function publish(id: string, body: Record<string, unknown>, token = owner.token): Promise<JsonAnswer> {
    return call('POST', `/editor/workflows/${id}/publish`, body, token);
  }

  const getWorkflow = (ref: string, token = owner.token) => call('GET', `/v1/workflows/${ref}`, undefined, token);

  describe('drafts', () => {
    it('creates, reads, lists, renames and replaces a draft; a draft the engine refuses is saved with its problems', async () => {
      const created = await call('POST', '/editor/workflows', { name: '  Greeter  ', definition: adder(1, 1) });
      expect(created.status).toBe(201);
      expect(validate(EditorWorkflowSchema, created.body).ok).toBe(true);
      expect(created.body).toMatchObject({ name: 'Greeter', address: null, latest: null, draft: adder(1, 1) });

      const id = created.body.id as string;
      const renamed = await call('PATCH', `/editor/workflows/${id}`, { name: 'Adder', definition: adder(4, 4) });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id, name: 'Adder', draft: adder(4, 4) });
      expect((await call('GET', `/editor/workflows/${id}`)).body).toMatchObject({ name: 'Adder', draft: adder(4, 4) });

      const list = await call('GET', '/editor/workflows');
      expect(validate(EditorWorkflowListSchema, list.body).ok).toBe(true);
      expect(list.body.workflows[0]).toMatchObject({ id, name: 'Adder' });
      expect(list.body.workflows[0].draft).toBeUndefined();

      // A draft is work in progress: saved as it is, its problems listed (publishing still refuses it).
      const brokenDraft = { version: 2, nodes: [{ id: 'x', uses: 'no-such-node' }] };
      const broken = await call('PATCH', `/editor/workflows/${id}`, { definition: brokenDraft });
      expect(broken.status).toBe(200);
      expect(validate(EditorWorkflowSchema, broken.body).ok).toBe(true);
      expect(broken.body.draft).toEqual(brokenDraft);
      expect(broken.body.problems[0].path).toMatch(/^nodes\[0\]/);
      expect((await call('GET', `/editor/workflows/${id}`)).body.problems).toEqual(broken.body.problems);
      // The schema still holds: a draft of the wrong shape is refused.
      const malformed = await call('PATCH', `/editor/workflows/${id}`, { definition: { version: 2, nodes: [{ id: 'x' }] } });
      expect(malformed.status).toBe(400);
      expect(malformed.body.code).toBe('validation_failed');

      expect((await call('POST', '/editor/workflows', { name: 'x', extra: 1 })).body.error).toContain('unknown field "extra"');
      expect((await call('PATCH', `/editor/workflows/${id}`, {})).status).toBe(400);
      expect((await call('POST', '/editor/workflows', { name: '   ' })).status).toBe(400);
    });

    it('answers 404 for another organization\'s workflow, and 405 with Allow for a wrong method', async () => {
      const id = await draft('Private');
      const stranger = await seedAccount(service.prisma, { slug: 'stranger', scopes: ['read', 'run'] });
      expect((await call('GET', `/editor/workflows/${id}`, undefined, stranger.token)).status).toBe(404);
      expect((await call('PATCH', `/editor/workflows/${id}`, { name: 'mine' }, stranger.token)).status).toBe(404);
      expect((await publish(id, { slug: 'stolen' }, stranger.token)).status).toBe(404);
      expect((await call('GET', '/editor/workflows/not-a-uuid')).status).toBe(404);
      const wrong = await fetch(`${service.url}/editor/workflows/${id}/publish`, { headers: bearer(owner.token) });
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toBe('POST');
    });

    it('needs "read" to look and "run" to change: a read-only token promises no side effects', async () => {
      const { token: reader } = await addMember(service.prisma, owner.orgId, 'owner', ['read']);
      expect((await call('GET', '/editor/workflows', undefined, reader)).status).toBe(200);
      const refused = await call('POST', '/editor/workflows', { name: 'x' }, reader);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('insufficient_scope');
      expect((await fetch(`${service.url}/editor/workflows`)).status).toBe(401);
    });

    it("takes the web editor's cookie session, and refuses a cross-origin change made with it", async () => {
      const session = issueToken('browser');
      await service.prisma.accessToken.create({
        data: {
          userId: owner.userId,
          orgId: owner.orgId,
          name: 'browser',
          kind: 'browser',
          displayPrefix: session.displayPrefix,
          tokenHash: session.hash,
          scopes: ['read', 'run'],
          expiresAt: new Date(Date.now() + 3_600_000),
        },
      });
      const withCookie = (origin: string, method = 'POST') => ({
        method,
        headers: { Cookie: `svc_session=${session.value}`, Origin: origin, 'Content-Type': 'application/json' },
        body: method === 'POST' ? JSON.stringify({ name: 'From the editor', definition: adder(1, 2) }) : undefined,
      });
      const own = new URL(service.url).origin;
      const created = await fetch(`${service.url}/editor/workflows`, withCookie(own));
      expect(created.status).toBe(201);
      const forged = await fetch(`${service.url}/editor/workflows`, withCookie('https://evil.example'));
      expect(forged.status).toBe(403);
      expect((await fetch(`${service.url}/editor/workflows`, withCookie('https://evil.example', 'GET'))).status).toBe(200);
    });

    it('refuses a token whose user left the organization', async () => {
      const { token: leaver, userId } = await addMember(service.prisma, owner.orgId, 'member');
      expect((await call('GET', '/editor/workflows', undefined, leaver)).status).toBe(200);
      await service.prisma.membership.delete({ where: { orgId_userId: { orgId: owner.orgId, userId } } });
      const refused = await call('GET', '/editor/workflows', undefined, leaver);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toContain('no longer a member');
    });
  });

  describe('publishing', () => {
    it('claims the slug on the first publish (1.0.0), freezes the organization slug, and answers the published version', async () => {
      const id = await draft('First');
      expect((await publish(id, {})).body.error).toContain('give "slug"');
      expect((await publish(id, { slug: 'Not_Kebab' })).status).toBe(400);
      expect((await publish(id, { slug: 'first', bump: 'minor', version: '0.1.0' })).status).toBe(400);

      const first = await publish(id, { slug: 'first' });
      expect(first.status).toBe(201);
      expect(validate(PublishedWorkflowSchema, first.body).ok).toBe(true);
      expect(first.body).toEqual({ id, address: `${orgSlug}/first`, version: '1.0.0', sequence: 1, workflow: adder(2, 3) });

      const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: owner.orgId } });
      expect(org.slugFrozen).toBe(true);
      // The database holds the rule too, whatever code tries.
      await expect(service.prisma.organization.update({ where: { id: owner.orgId }, data: { slug: `${orgSlug}-renamed` } })).rejects.toThrow(/frozen/);

      // Later publishes: a bump is required, "version" is refused, the address never changes.
      expect((await publish(id, {})).body.error).toContain('choose "bump"');
      expect((await publish(id, { bump: 'patch', version: '5.0.0' })).status).toBe(409);
      expect((await publish(id, { bump: 'patch', slug: 'other' })).status).toBe(409);
      const second = await publish(id, { bump: 'patch', slug: 'first' });
      expect(second.body).toMatchObject({ version: '1.0.1', sequence: 2, address: `${orgSlug}/first` });
    });

    it('lets the first publish choose its version, and continues from it', async () => {
      const id = await draft('Early');
      expect((await publish(id, { slug: 'early', version: '1.2' })).status).toBe(400);
      expect((await publish(id, { slug: 'early', version: '1.0.0-beta' })).status).toBe(400);
      expect((await publish(id, { slug: 'early', version: '0.1.0' })).body).toMatchObject({ version: '0.1.0', sequence: 1 });
      expect((await publish(id, { bump: 'minor' })).body).toMatchObject({ version: '0.2.0', sequence: 2 });
      expect((await getWorkflow(`${orgSlug}%2Fearly@0`)).body.version).toBe('0.2.0');
    });

    it('refuses a slug another workflow of the organization holds, and one that is not kebab-case', async () => {
      const a = await draft('Taken A');
      const b = await draft('Taken B');
      expect((await publish(a, { slug: 'taken' })).status).toBe(201);
      const clash = await publish(b, { slug: 'taken' });
      expect(clash.status).toBe(409);
      expect(clash.body.error).toContain('taken by another workflow');
      for (const slug of ['-x', 'x-', 'a--b', 'UPPER', 'with space', 'a/b', 'x'.repeat(65)]) {
        expect((await publish(b, { slug })).status).toBe(400);
      }
    });

    it('lets exactly one of several workflows racing for one slug claim it', async () => {
      const drafts = await Promise.all(Array.from({ length: 6 }, (_, i) => draft(`Racer ${i}`)));
      const answers = await Promise.all(drafts.map((id) => publish(id, { slug: 'contested' })));
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    });

    it('refuses to publish under a reserved organization namespace', async () => {
      const core = await seedAccount(service.prisma, { slug: 'legacy', scopes: ['read', 'run'] });
      // An organization created before the rule (the repository refuses such slugs now).
      await service.prisma.organization.update({ where: { id: core.orgId }, data: { slug: 'core' } });
      const id = await draft('Platform?', adder(1, 2), core.token);
      const refused = await publish(id, { slug: 'thing' }, core.token);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toContain('reserved');
      expect((await service.prisma.organization.findUniqueOrThrow({ where: { id: core.orgId } })).slugFrozen).toBe(false);
    });

    it('refuses to publish without a draft, and a draft the catalog no longer accepts', async () => {
      const empty = await call('POST', '/editor/workflows', { name: 'Empty' });
      expect((await publish(empty.body.id, { slug: 'empty' })).status).toBe(409);
      const stale = await draft('Stale');
      await service.prisma.workflow.update({ where: { id: stale }, data: { draft: { version: 2, nodes: [{ id: 'gone', uses: 'retired-node' }] } } });
      const refused = await publish(stale, { slug: 'stale' });
      expect(refused.status).toBe(400);
      expect(refused.body.issues[0].path).toMatch(/^draft\.nodes\[0\]/);
    });

    it('keeps versions immutable: a later draft does not change them, and the database refuses an update', async () => {
      const id = await draft('Frozen', adder(1, 1));
      await publish(id, { slug: 'frozen-version' });
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(9, 9) });
      expect((await getWorkflow(`${orgSlug}%2Ffrozen-version@1.0.0`)).body.workflow).toEqual(adder(1, 1));
      await expect(
        service.prisma.workflowVersion.updateMany({ where: { workflowId: id }, data: { definition: adder(7, 7) } }),
      ).rejects.toThrow(/immutable/);
      await expect(service.prisma.workflow.update({ where: { id }, data: { slug: 'moved' } })).rejects.toThrow(/permanent/);
    });

    it('gives 20 parallel publishes of one workflow 20 distinct sequences and versions', async () => {
      const id = await draft('Busy');
      const answers = await Promise.all(Array.from({ length: 20 }, () => publish(id, { slug: 'busy', bump: 'minor' })));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
      const sequences = answers.map((a) => a.body.sequence as number).sort((x, y) => x - y);
      expect(sequences).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      const versions = new Set(answers.map((a) => a.body.version as string));
      expect(versions.size).toBe(20);
      // Publish order is sequence order, and each is the previous one bumped.
      const bySequence = [...answers].sort((x, y) => x.body.sequence - y.body.sequence).map((a) => a.body.version);
      expect(bySequence).toEqual(['1.0.0', ...Array.from({ length: 19 }, (_, i) => `1.${i + 1}.0`)]);
      expect((await getWorkflow(`${orgSlug}%2Fbusy`)).body).toMatchObject({ version: '1.19.0', sequence: 20 });
    });
  });

  describe('history and the latest pointer', () => {
    let id: string;

    beforeAll(async () => {
      id = await draft('Rolling', adder(1, 0));
      await publish(id, { slug: 'rolling' });
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(1, 1) });
      await publish(id, { bump: 'minor' });
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(2, 0) });
      await publish(id, { bump: 'major' });
    });

    const address = () => `${orgSlug}%2Frolling`;

    it('lists every version with semver, sequence, time, publisher and the latest mark', async () => {
      const listed = await call('GET', `/editor/workflows/${id}/versions`);
      expect(validate(WorkflowVersionListSchema, listed.body).ok).toBe(true);
      const publisher = await service.prisma.user.findUniqueOrThrow({ where: { id: owner.userId } });
      expect(listed.body.versions.map((v: { version: string; sequence: number; latest: boolean }) => [v.version, v.sequence, v.latest])).toEqual([
        ['2.0.0', 3, true],
        ['1.1.0', 2, false],
        ['1.0.0', 1, false],
      ]);
      expect(listed.body.versions[0].publishedBy).toEqual({ id: owner.userId, name: publisher.name });
      expect(Date.parse(listed.body.versions[0].createdAt)).toBeGreaterThan(Date.now() - 600_000);
    });

    it('rolls latest back without deleting anything, and a bare major follows the pointer', async () => {
      const back = await call('POST', `/editor/workflows/${id}/latest`, { version: '1.1.0' });
      expect(back.status).toBe(200);
      expect(back.body.latest).toEqual({ version: '1.1.0', sequence: 2 });
      expect((await getWorkflow(address())).body).toMatchObject({ version: '1.1.0', sequence: 2, workflow: adder(1, 1) });
      expect((await getWorkflow(`${address()}@latest`)).body.version).toBe('1.1.0');
      // Bare majors do not go past the pointer: 2 has nothing at or below it now; 1 is its highest.
      expect((await getWorkflow(`${address()}@1`)).body.version).toBe('1.1.0');
      expect((await getWorkflow(`${address()}@2`)).status).toBe(404);
      // Exact versions resolve wherever the pointer is; nothing was deleted.
      expect((await getWorkflow(`${address()}@2.0.0`)).body.workflow).toEqual(adder(2, 0));
      expect((await call('GET', `/editor/workflows/${id}/versions`)).body.versions).toHaveLength(3);

      await call('POST', `/editor/workflows/${id}/latest`, { version: '1.0.0' });
      expect((await getWorkflow(`${address()}@1`)).body.version).toBe('1.0.0');

      const forward = await call('POST', `/editor/workflows/${id}/latest`, { version: '2.0.0' });
      expect(forward.body.latest).toEqual({ version: '2.0.0', sequence: 3 });
      expect((await getWorkflow(`${address()}@1`)).body.version).toBe('1.1.0');
      expect((await getWorkflow(`${address()}@2`)).body.version).toBe('2.0.0');

      expect((await call('POST', `/editor/workflows/${id}/latest`, { version: '3.0.0' })).status).toBe(404);
      expect((await call('POST', `/editor/workflows/${id}/latest`, { version: '2' })).status).toBe(400);
    });

    it('continues from the highest version after a rollback, so numbers never collide', async () => {
      await call('POST', `/editor/workflows/${id}/latest`, { version: '1.0.0' });
      const next = await publish(id, { bump: 'patch' });
      expect(next.body).toMatchObject({ version: '2.0.1', sequence: 4 });
      expect((await getWorkflow(address())).body.version).toBe('2.0.1');
      const minor = await publish(id, { bump: 'minor' });
      expect(minor.body).toMatchObject({ version: '2.1.0', sequence: 5 });
    });

    it('renames the display name without touching the address', async () => {
      const renamed = await call('PATCH', `/editor/workflows/${id}`, { name: 'Rolling, renamed' });
      expect(renamed.body).toMatchObject({ name: 'Rolling, renamed', address: `${orgSlug}/rolling` });
      expect((await getWorkflow(address())).status).toBe(200);
    });
  });

  describe('GET /v1/workflows/:id', () => {
    let id: string;

    beforeAll(async () => {
      id = await draft('Lookup', adder(3, 4));
      await publish(id, { slug: 'lookup' });
    });

    it('answers by address (the / encoded) and by UUID, with the version as @ or ?version=', async () => {
      const expected = { id, address: `${orgSlug}/lookup`, version: '1.0.0', sequence: 1, workflow: adder(3, 4) };
      for (const ref of [`${orgSlug}%2Flookup`, `${orgSlug}%2Flookup@latest`, `${orgSlug}%2Flookup@1`, `${orgSlug}%2Flookup@1.0.0`, id, `${id}@1.0.0`, `${id.toUpperCase()}@latest`]) {
        const got = await getWorkflow(ref);
        expect([ref, got.status]).toEqual([ref, 200]);
        expect(got.body).toEqual(expected);
      }
      expect((await getWorkflow(`${orgSlug}%2Flookup?version=1.0.0`)).body).toEqual(expected);
      expect((await getWorkflow(`${orgSlug}%2Flookup%401`)).body).toEqual(expected);
      expect((await call('GET', `/api/v1/workflows/${id}?version=latest`)).body).toEqual(expected);
    });

    it('answers 400 for both @ and ?version=, an ambiguous or malformed selector, and a bad id', async () => {
      const both = await getWorkflow(`${orgSlug}%2Flookup@1.0.0?version=1.0.0`);
      expect(both.status).toBe(400);
      expect(both.body.error).toContain('given twice');
      const ambiguous = await getWorkflow(`${orgSlug}%2Flookup@2.5`);
      expect(ambiguous.status).toBe(400);
      expect(ambiguous.body.error).toContain('ambiguous');
      expect((await getWorkflow(`${orgSlug}%2Flookup?version=2.5`)).body.error).toContain('ambiguous');
      expect((await getWorkflow(`${orgSlug}%2Flookup@1.0.0-rc.1`)).status).toBe(400);
      expect((await getWorkflow(`${orgSlug}%2Flookup@1.0.0%2Bbuild`)).status).toBe(400);
      expect((await getWorkflow('Not_An_Address')).status).toBe(400);
      expect((await getWorkflow(`${orgSlug}%2Flookup?other=1`)).status).toBe(400);
    });

    it('answers 404 when nothing matches: unknown address or UUID, no such version, a draft never published', async () => {
      expect((await getWorkflow(`${orgSlug}%2Fnothing`)).status).toBe(404);
      expect((await getWorkflow('00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await getWorkflow(`${orgSlug}%2Flookup@1.0.1`)).status).toBe(404);
      expect((await getWorkflow(`${orgSlug}%2Flookup@2`)).status).toBe(404);
      const unpublished = await draft('Unpublished');
      expect((await getWorkflow(unpublished)).status).toBe(404);
    });

    it('serves any caller with the read scope (publishing is sharing), and refuses one without it', async () => {
      const other = await seedAccount(service.prisma, { slug: 'outsider', scopes: ['read'] });
      expect((await getWorkflow(`${orgSlug}%2Flookup`, other.token)).body.id).toBe(id);
      const runOnly = await seedAccount(service.prisma, { slug: 'runner-only', scopes: ['run'] });
      expect((await getWorkflow(`${orgSlug}%2Flookup`, runOnly.token)).status).toBe(403);
      expect((await fetch(`${service.url}/v1/workflows/${id}`)).status).toBe(401);
    });
  });

  describe('deleting a published workflow', () => {
    let id: string;

    beforeAll(async () => {
      id = await draft('Doomed', adder(5, 5));
      await publish(id, { slug: 'doomed' });
    });

    it('is for owners and admins only', async () => {
      const { token: member } = await addMember(service.prisma, owner.orgId, 'member');
      const refused = await call('DELETE', `/editor/workflows/${id}`, undefined, member);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toContain('owner or admin');
      // Members may do everything else.
      expect((await call('PATCH', `/editor/workflows/${id}`, { name: 'Doomed!' }, member)).status).toBe(200);
    });

    it('retires the slug for good, keeps runs\' records, and resolves by no reference, its UUID included', async () => {
      const ran = await readSse(await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ workflowRef: `${orgSlug}/doomed` }) }));
      const runId = (JSON.parse(ran[0]!.data) as { runId: string }).runId;

      expect((await call('DELETE', `/editor/workflows/${id}`)).status).toBe(204);
      expect((await call('DELETE', `/editor/workflows/${id}`)).status).toBe(404);
      expect((await call('GET', `/editor/workflows/${id}`)).status).toBe(404);
      expect((await call('GET', '/editor/workflows')).body.workflows.map((w: { id: string }) => w.id)).not.toContain(id);

      expect((await getWorkflow(`${orgSlug}%2Fdoomed`)).status).toBe(404);
      // workflows.get and runs.create agree: a deleted workflow is withdrawn by every reference.
      for (const ref of [id, `${id}@1.0.0`, `${id}@latest`]) expect([ref, (await getWorkflow(ref)).status]).toEqual([ref, 404]);
      const run = await service.prisma.run.findUniqueOrThrow({ where: { id: runId } });
      expect(run.workflowId).toBe(id);

      for (const workflowRef of [`${orgSlug}/doomed`, id, `${id}@1.0.0`]) {
        const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ workflowRef }) });
        expect([workflowRef, res.status]).toEqual([workflowRef, 404]);
      }

      // No workflow of the organization can claim the slug again...
      const heir = await draft('Heir');
      const refused = await publish(heir, { slug: 'doomed' });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toContain('retired');
      // ...while another organization's namespace is its own.
      const elsewhere = await seedAccount(service.prisma, { slug: 'elsewhere', scopes: ['read', 'run'] });
      const theirs = await draft('Theirs', adder(1, 1), elsewhere.token);
      expect((await publish(theirs, { slug: 'doomed' }, elsewhere.token)).status).toBe(201);
    });
  });

  describe('runs by workflowRef', () => {
    let id: string;
    let versions: Record<string, string>;

    beforeAll(async () => {
      id = await draft('Pinned', adder(2, 3));
      await publish(id, { slug: 'pinned' });
      await call('PATCH', `/editor/workflows/${id}`, { definition: adder(10, 10) });
      await publish(id, { bump: 'major' });
      const rows = await service.prisma.workflowVersion.findMany({ where: { workflowId: id } });
      versions = Object.fromEntries(rows.map((r) => [`${r.major}.${r.minor}.${r.patch}`, r.id]));
    });

    async function runRef(workflowRef: string, token = owner.token): Promise<{ runId: string; sum: unknown }> {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(token), body: JSON.stringify({ workflowRef }) });
      expect([workflowRef, res.status]).toEqual([workflowRef, 200]);
      const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
      const terminal = events.at(-1) as { type: string; outputs?: Record<string, { value: unknown }> };
      expect(terminal.type).toBe('run.completed');
      return { runId: (events[0] as { runId: string }).runId, sum: terminal.outputs!.sum!.value };
    }

    it('runs the pinned definition and records the workflow and the version it ran', async () => {
      const pinned = await runRef(`${orgSlug}/pinned@1.0.0`);
      expect(pinned.sum).toBe(5);
      const record = await service.prisma.run.findUniqueOrThrow({ where: { id: pinned.runId } });
      expect(record).toMatchObject({ workflowId: id, workflowVersionId: versions['1.0.0'], definition: adder(2, 3) });

      const latest = await runRef(id);
      expect(latest.sum).toBe(20);
      expect((await service.prisma.run.findUniqueOrThrow({ where: { id: latest.runId } })).workflowVersionId).toBe(versions['2.0.0']);

      await call('POST', `/editor/workflows/${id}/latest`, { version: '1.0.0' });
      const rolledBack = await runRef(`${orgSlug}/pinned@latest`);
      expect(rolledBack.sum).toBe(5);
      expect((await service.prisma.run.findUniqueOrThrow({ where: { id: rolledBack.runId } })).workflowVersionId).toBe(versions['1.0.0']);
    });

    it("runs another organization's published workflow, charged to the caller's organization", async () => {
      const caller = await seedAccount(service.prisma, { slug: 'borrower', scopes: ['run'], balanceMicros: 1_000_000 });
      const ran = await runRef(`${orgSlug}/pinned@2.0.0`, caller.token);
      expect(ran.sum).toBe(20);
      const record = await service.prisma.run.findUniqueOrThrow({ where: { id: ran.runId } });
      expect(record).toMatchObject({ orgId: caller.orgId, workflowId: id, workflowVersionId: versions['2.0.0'] });
    });

    it('answers 404 for a ref that resolves to nothing, 400 for an ambiguous one', async () => {
      const missing = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ workflowRef: `${orgSlug}/pinned@9` }) });
      expect(missing.status).toBe(404);
      const ambiguous = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ workflowRef: `${orgSlug}/pinned@1.0` }) });
      expect(ambiguous.status).toBe(400);
      expect(((await ambiguous.json()) as { error: string }).error).toContain('ambiguous');
    });
  });
});
