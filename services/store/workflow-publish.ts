import type { Workflow } from '../contract/schemas/workflow';
import { bumpSemver, compareSemver, formatSemver, type Semver } from '../engine/semver';
import { checkOrgSlug } from '../engine/workflow-ref';
import { AppError } from '../platform/app-error';
import type { Prisma } from './prisma-generated';
import type { PublishedVersion, PublishRequest } from '../engine/published-version';

type Tx = Prisma.TransactionClient;

function notFound(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no workflow with id "${id}" in your organization` });
}

/** The version a publish gets: the first is 1.0.0 or the one asked for; later ones continue from the highest. */
function nextVersion(highest: Semver | null, request: PublishRequest): Semver {
  if (highest === null) {
    if (request.initialVersion && request.bump) {
      throw new AppError({ code: 'bad_request', message: 'give either "version" (the first version) or "bump", not both' });
    }
    return request.initialVersion ?? bumpSemver(null, request.bump ?? 'major');
  }
  if (request.initialVersion) {
    throw new AppError({
      code: 'conflict',
      message: `"version" only names the first version; this workflow has published up to ${formatSemver(highest)}, and new versions continue from there: choose "bump" (major, minor or patch)`,
    });
  }
  if (!request.bump) {
    throw new AppError({ code: 'bad_request', message: `choose "bump" (major, minor or patch): the highest version published is ${formatSemver(highest)}` });
  }
  return bumpSemver(highest, request.bump);
}

/**
 * Claims `slug` for the workflow: the first publish gives it its address. The organization's row
 * is locked first, so claims in one organization are serialized and the checks below hold until
 * commit; an organization slug that is a platform namespace cannot namespace anything.
 */
async function claimSlug(tx: Tx, workflowId: string, orgId: string, slug: string): Promise<void> {
  const orgs = await tx.$queryRaw<{ slug: string }[]>`SELECT slug FROM organizations WHERE id = ${orgId}::uuid FOR UPDATE`;
  const orgSlug = orgs[0]!.slug;
  const org = checkOrgSlug(orgSlug);
  if (!org.ok) {
    throw new AppError({ code: 'conflict', message: `${org.message}, so it cannot namespace published workflows; rename the organization before publishing` });
  }
  const retired = await tx.retiredSlug.findUnique({ where: { orgId_slug: { orgId, slug } } });
  if (retired) {
    throw new AppError({
      code: 'conflict',
      message: `the address ${orgSlug}/${slug} belonged to a deleted workflow and is retired for good; choose another slug`,
    });
  }
  // Deleted workflows keep their slug on their row too: a taken slug is never reused.
  const holder = await tx.workflow.findFirst({ where: { orgId, slug }, select: { id: true } });
  if (holder) {
    throw new AppError({ code: 'conflict', message: `the address ${orgSlug}/${slug} is taken by another workflow of your organization; choose another slug` });
  }
  await tx.workflow.update({ where: { id: workflowId }, data: { slug } });
}

/**
 * Publishes the draft of a workflow as a new immutable version, in the caller's transaction:
 * the workflow's row is locked first (`FOR UPDATE`), so concurrent publishes of one workflow
 * take turns and each sees the versions of those before it: distinct sequences (max + 1) and
 * distinct versions (bumped from the highest ever published, wherever the latest pointer is).
 * The first publish claims the slug and freezes the organization's slug; every publish moves the
 * latest pointer to the new version.
 */
export async function publishDraft(tx: Tx, request: PublishRequest): Promise<PublishedVersion> {
  const { workflowId, orgId } = request;
  const locked = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM workflows WHERE id = ${workflowId}::uuid AND org_id = ${orgId}::uuid AND deleted_at IS NULL FOR UPDATE`;
  if (locked.length === 0) throw notFound(workflowId);
  const workflow = await tx.workflow.findUniqueOrThrow({ where: { id: workflowId }, include: { org: { select: { slug: true } } } });
  if (workflow.draft === null) {
    throw new AppError({ code: 'conflict', message: 'the workflow has no draft to publish; save a definition first (PATCH /editor/workflows/:id)' });
  }
  const draft = workflow.draft as unknown as Workflow;
  request.check(draft);
  const definition = request.rewrite(draft);

  const versions = await tx.workflowVersion.findMany({ where: { workflowId }, select: { major: true, minor: true, patch: true, sequence: true } });
  let highest: Semver | null = null;
  let lastSequence = 0;
  for (const v of versions) {
    if (highest === null || compareSemver(v, highest) > 0) highest = { major: v.major, minor: v.minor, patch: v.patch };
    lastSequence = Math.max(lastSequence, v.sequence);
  }
  const version = nextVersion(highest, request);

  let slug = workflow.slug;
  if (slug === null) {
    if (!request.slug) {
      throw new AppError({ code: 'bad_request', message: 'the first publish claims the workflow\'s address <org-slug>/<workflow-slug>: give "slug" (kebab-case)' });
    }
    await claimSlug(tx, workflowId, orgId, request.slug);
    slug = request.slug;
  } else if (request.slug !== undefined && request.slug !== slug) {
    throw new AppError({
      code: 'conflict',
      message: `this workflow's address is ${workflow.org.slug}/${slug} for good; an address never changes (rename the display name instead)`,
    });
  }

  const created = await tx.workflowVersion.create({
    data: {
      workflowId,
      ...version,
      sequence: lastSequence + 1,
      definition: definition as unknown as Prisma.InputJsonValue,
      // The canvas as it was drawn when published: the editor shows a version as it looked.
      ...(workflow.draftLayout === null ? {} : { layout: workflow.draftLayout }),
      ...(request.note ? { note: request.note } : {}),
      publishedById: request.userId,
    },
    select: { id: true, sequence: true, createdAt: true },
  });
  // The draft follows the refs to the assets: a run artifact it named may expire before the next publish.
  const rewritten = JSON.stringify(definition) !== JSON.stringify(draft);
  await tx.workflow.update({
    where: { id: workflowId },
    // The draft as it is now (the row is locked) is what was published: nothing is pending.
    data: { latestVersionId: created.id, draftChangedAt: created.createdAt, ...(rewritten ? { draft: definition as unknown as Prisma.InputJsonValue } : {}) },
  });
  // Once it namespaces a published workflow, the organization's slug never changes.
  await tx.organization.updateMany({ where: { id: orgId, slugFrozen: false }, data: { slugFrozen: true } });

  return {
    workflowId,
    versionId: created.id,
    address: `${workflow.org.slug}/${slug}`,
    version,
    sequence: created.sequence,
    definition,
  };
}
