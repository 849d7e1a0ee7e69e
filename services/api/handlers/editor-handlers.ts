import type { Workflow } from '../../contract';
import { checkOrgSlug, checkSlug, parseSemver, validateWorkflow, type SpecLookup } from '../../engine';
import { withHostedRefs } from '../../nodes/workflow-assets';
import { AppError } from '../../platform/app-error';
import type { AuthContext } from '../auth/auth-context';
import { summaryBody, versionBody, versionDetailBody, workflowBody, type EditorWorkflowStore, type MemberRoles, type WorkflowAssetHost } from './editor-ports';
import type { CallContext, Handler } from './handler-types';
import { noUpload, readUploadBytes } from './upload-body';
import { publishedBody } from './workflow-handlers';

export interface EditorHandlerDeps {
  workflows: EditorWorkflowStore;
  memberships: MemberRoles;
  /** The node catalog drafts are validated against. */
  specs: SpecLookup;
  /** Recipe assets: uploads, and copies of a draft's refs at publish. */
  assets: WorkflowAssetHost;
  /** Largest asset uploaded (they are read back whole at publish and by runs). */
  assetMaxBytes: number;
}

type EditorName =
  | 'editor.workflows.list'
  | 'editor.workflows.create'
  | 'editor.workflows.get'
  | 'editor.workflows.update'
  | 'editor.workflows.delete'
  | 'editor.workflows.publish'
  | 'editor.workflows.assets'
  | 'editor.workflows.versions'
  | 'editor.workflows.latest'
  | 'editor.workflows.version'
  | 'editor.slugs.check';

/** Media types an asset may have: those the nodes read (images, audio, video, text, JSON, PDF). */
const ASSET_TYPES = /^(image\/(png|jpeg|webp|gif|avif)|audio\/(mpeg|wav|ogg)|video\/(mp4|webm)|text\/plain|application\/(json|pdf))$/;

type Role = 'owner' | 'admin' | 'member';

/** Deleting a published workflow retires its address for good: only owners and admins may. */
const DELETE_ROLES: readonly Role[] = ['owner', 'admin'];

function invalid(message: string, issues: { path: string; message: string }[]): AppError {
  return new AppError({ code: 'validation_failed', message, details: { issues } });
}

/** A display name: trimmed, not blank, no control characters. */
function cleanName(name: string): string {
  const trimmed = name.trim();
  // eslint-disable-next-line no-control-regex
  if (trimmed === '' || /[\u0000-\u001f\u007f]/.test(trimmed)) throw invalid('name must be text, not blank and without control characters', [{ path: 'name', message: 'blank or control characters' }]);
  return trimmed;
}

function parsedVersion(text: string) {
  const version = parseSemver(text);
  if (!version.ok) throw invalid(version.message, [{ path: 'version', message: version.message }]);
  return version.value;
}

function noSuchWorkflow(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no workflow with id "${id}" in your organization; list them with GET /editor/workflows` });
}

/**
 * The web editor's workflow routes (docs/workflows.md). They act for a member of the caller's
 * organization: a user removed from it keeps no access through a token issued before; deletion
 * needs the owner or admin role.
 */
export function editorHandlers(deps: EditorHandlerDeps): { [K in EditorName]: Handler<K> } {
  /** The caller, once known to be a member (with one of `roles`, when given). */
  const member = async (ctx: CallContext, what: string, roles?: readonly Role[]): Promise<AuthContext> => {
    const auth = ctx.auth!;
    const membership = await deps.memberships.find(auth.orgId, auth.userId);
    if (!membership) throw new AppError({ code: 'forbidden', message: `${what}: you are no longer a member of this token's organization` });
    if (roles && !roles.includes(membership.role)) {
      throw new AppError({ code: 'forbidden', message: `${what} needs the ${roles.join(' or ')} role in the organization; yours is ${membership.role}` });
    }
    return auth;
  };

  const checkDefinition = (definition: Workflow, at: string): void => {
    const check = validateWorkflow(definition, deps.specs);
    if (!check.ok) throw invalid(check.message, check.problems.map(({ path, message }) => ({ path: `${at}.${path}`, message })));
  };

  return {
    'editor.workflows.list': async (_input, ctx) => {
      const auth = await member(ctx, 'GET /editor/workflows');
      return { workflows: (await deps.workflows.listForOrg(auth.orgId)).map(summaryBody) };
    },

    // A draft is work in progress: one the engine's checks refuse is saved all the same (the
    // schema still holds), and its answer lists the problems that publishing would refuse.
    'editor.workflows.create': async (input, ctx) => {
      const auth = await member(ctx, 'POST /editor/workflows');
      const name = cleanName(input.name);
      const created = await deps.workflows.createDraft({ orgId: auth.orgId, name, draft: input.definition ?? null, layout: input.layout });
      return workflowBody(created, deps.specs);
    },

    'editor.workflows.get': async ({ id }, ctx) => {
      const auth = await member(ctx, 'GET /editor/workflows/:id');
      const found = await deps.workflows.findForOrg(id, auth.orgId);
      if (!found) throw noSuchWorkflow(id);
      return workflowBody(found, deps.specs);
    },

    'editor.workflows.update': async ({ id, ...input }, ctx) => {
      const auth = await member(ctx, 'PATCH /editor/workflows/:id');
      const name = input.name === undefined ? undefined : cleanName(input.name);
      const updated = await deps.workflows.updateDraft(id, auth.orgId, { name, draft: input.definition, layout: input.layout });
      if (!updated) throw noSuchWorkflow(id);
      return workflowBody(updated, deps.specs);
    },

    'editor.workflows.delete': async ({ id }, ctx) => {
      const auth = await member(ctx, 'DELETE /editor/workflows/:id', DELETE_ROLES);
      if (!(await deps.workflows.delete(id, auth.orgId))) throw noSuchWorkflow(id);
      return null;
    },

    'editor.workflows.publish': async ({ id, ...input }, ctx) => {
      const auth = await member(ctx, 'POST /editor/workflows/:id/publish');
      let initialVersion;
      if (input.version !== undefined) {
        const parsed = parseSemver(input.version);
        if (!parsed.ok) throw invalid(parsed.message, [{ path: 'version', message: parsed.message }]);
        initialVersion = parsed.value;
      }
      if (input.slug !== undefined) {
        const slug = checkSlug(input.slug, 'workflow slug');
        if (!slug.ok) throw invalid(slug.message, [{ path: 'slug', message: slug.message }]);
      }
      // Recipe assets are copied before the publish transaction (copies and fetches take time);
      // the transaction then swaps the refs of the draft it publishes for the copies.
      const current = await deps.workflows.findForOrg(id, auth.orgId);
      if (!current) throw noSuchWorkflow(id);
      const hosted = current.draft ? await deps.assets.host(id, current.draft) : new Map();
      const published = await deps.workflows.publish({
        workflowId: id,
        orgId: auth.orgId,
        userId: auth.userId,
        bump: input.bump,
        initialVersion,
        slug: input.slug,
        note: input.note,
        // The catalog may have changed since the draft was saved: what is published must run.
        check: (definition) => checkDefinition(definition, 'draft'),
        rewrite: (definition) => {
          const rewritten = withHostedRefs(definition, hosted);
          if (!rewritten) throw new AppError({ code: 'conflict', message: 'the draft changed while it was being published; publish again' });
          return rewritten;
        },
      });
      return publishedBody(published);
    },

    'editor.workflows.assets': async ({ id }, ctx) => {
      const auth = await member(ctx, 'POST /editor/workflows/:id/assets');
      const upload = ctx.upload ?? noUpload();
      const mediaType = upload.mediaType;
      if (!ASSET_TYPES.test(mediaType)) {
        throw new AppError({ code: 'unsupported_media_type', message: `an asset's Content-Type must be one of image/png, image/jpeg, image/webp, image/gif, image/avif, audio/mpeg, audio/wav, audio/ogg, video/mp4, video/webm, text/plain, application/json, application/pdf; got "${mediaType}"` });
      }
      const bytes = await readUploadBytes(upload, deps.assetMaxBytes);
      if (bytes.length === 0) throw new AppError({ code: 'bad_request', message: 'the asset is empty: send the file as the request body' });
      if (!(await deps.workflows.findForOrg(id, auth.orgId))) throw noSuchWorkflow(id);
      return deps.assets.upload(id, bytes, mediaType);
    },

    'editor.workflows.versions': async ({ id }, ctx) => {
      const auth = await member(ctx, 'GET /editor/workflows/:id/versions');
      const versions = await deps.workflows.listVersions(id, auth.orgId);
      if (!versions) throw noSuchWorkflow(id);
      return { versions: versions.map(versionBody) };
    },

    'editor.workflows.latest': async ({ id, version: text }, ctx) => {
      const auth = await member(ctx, 'POST /editor/workflows/:id/latest');
      const moved = await deps.workflows.setLatest(id, auth.orgId, parsedVersion(text));
      if (!moved) throw noSuchWorkflow(id);
      return workflowBody(moved, deps.specs);
    },

    'editor.workflows.version': async ({ id, version: text }, ctx) => {
      const auth = await member(ctx, 'GET /editor/workflows/:id/versions/:version');
      const found = await deps.workflows.findVersion(id, auth.orgId, parsedVersion(text));
      if (!found) throw noSuchWorkflow(id);
      return versionDetailBody(found);
    },

    // A live check as the user types: a malformed slug is an answer (available: false), not a 400.
    'editor.slugs.check': async ({ slug }, ctx) => {
      const auth = await member(ctx, 'GET /editor/slugs/:slug');
      const shape = checkSlug(slug, 'workflow slug');
      if (!shape.ok) return { slug, address: null, available: false, message: shape.message };
      const standing = await deps.workflows.slugStanding(auth.orgId, slug);
      if (!standing) throw new AppError({ code: 'forbidden', message: "GET /editor/slugs/:slug: this token's organization no longer exists" });
      const address = `${standing.orgSlug}/${slug}`;
      const refuse = (message: string) => ({ slug, address, available: false, message });
      const org = checkOrgSlug(standing.orgSlug);
      if (!org.ok) return refuse(`${org.message}, so it cannot namespace published workflows; rename the organization before publishing`);
      if (standing.retired || standing.holder?.deleted) return refuse(`the address ${address} was retired by a deleted workflow and is never used again; choose another slug`);
      if (standing.holder) return refuse(`the address ${address} is already taken by workflow "${standing.holder.name}" in this organization; choose another slug`);
      return { slug, address, available: true, message: 'available' };
    },
  };
}
