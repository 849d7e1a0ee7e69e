import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Static, TSchema } from '@sinclair/typebox';
import {
  EditorLatestInputSchema,
  EditorPublishInputSchema,
  EditorWorkflowCreateInputSchema,
  EditorWorkflowUpdateInputSchema,
  validate,
  type EditorWorkflowList,
  type Scope,
  type Workflow,
  type WorkflowVersionList,
} from '../../contract';
import { checkSlug, parseSemver, validateWorkflow, type SpecLookup } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { authenticateScope } from '../auth/authenticate';
import { allowOnly } from './route-marks';
import { withHostedRefs } from '../../nodes/workflow-assets';
import { publishedBody } from '../handlers/workflow-handlers';
import {
  summaryBody,
  versionBody,
  workflowBody,
  type EditorWorkflowStore,
  type MemberRoles,
  type WorkflowAssetHost,
} from './workflow-editor-ports';

export interface WorkflowEditorRouteDeps {
  workflows: EditorWorkflowStore;
  memberships: MemberRoles;
  tokens: TokenLookup;
  /** The node catalog drafts are validated against. */
  specs: SpecLookup;
  bodyLimitBytes: number;
  /** Recipe assets: uploads, and copies of a draft's refs at publish. */
  assets: WorkflowAssetHost;
  /** Largest asset upload, bytes (`FETCH_MAX_BYTES`: no run would read a larger input file). */
  assetMaxBytes: number;
}

/** Media types an asset may have: those the nodes read (images, audio, video, text, JSON, PDF). */
const ASSET_TYPES = /^(image\/(png|jpeg|webp|gif|avif)|audio\/(mpeg|wav|ogg)|video\/(mp4|webm)|text\/plain|application\/(json|pdf))$/;

type Role = 'owner' | 'admin' | 'member';

/** Deleting a published workflow retires its address for good: only owners and admins may. */
const DELETE_ROLES: readonly Role[] = ['owner', 'admin'];

function authOf(res: Response): AuthContext {
  return res.locals.auth as AuthContext;
}

function invalid(message: string, issues: { path: string; message: string }[]): AppError {
  return new AppError({ code: 'validation_failed', message, details: { issues } });
}

function checkedBody<S extends TSchema>(schema: S, body: unknown): Static<S> {
  const checked = validate(schema, body);
  if (!checked.ok) throw invalid(checked.message, checked.issues);
  return checked.value;
}

/** A display name: trimmed, not blank, no control characters. */
function cleanName(name: string): string {
  const trimmed = name.trim();
  // eslint-disable-next-line no-control-regex
  if (trimmed === '' || /[\u0000-\u001f\u007f]/.test(trimmed)) throw invalid('name must be text, not blank and without control characters', [{ path: 'name', message: 'blank or control characters' }]);
  return trimmed;
}

function noSuchWorkflow(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no workflow with id "${id}" in your organization; list them with GET /editor/workflows` });
}

/**
 * Editor routes act for a member of the token's organization: a user removed from it keeps no
 * access through a token issued before. `roles` narrows who may (deletion).
 */
function memberOnly(deps: WorkflowEditorRouteDeps, what: string, roles?: readonly Role[]) {
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    const auth = authOf(res);
    const membership = await deps.memberships.find(auth.orgId, auth.userId);
    if (!membership) throw new AppError({ code: 'forbidden', message: `${what}: you are no longer a member of this token's organization` });
    if (roles && !roles.includes(membership.role)) {
      throw new AppError({ code: 'forbidden', message: `${what} needs the ${roles.join(' or ')} role in the organization; yours is ${membership.role}` });
    }
    next();
  };
}

/**
 * The web editor's workflow endpoints (docs/workflows.md): drafts, publishing, version history,
 * the latest pointer and deletion, outside `/v1` (the spec keeps publishing out of the API).
 * They take the editor's cookie session (CSRF-guarded by the authentication middleware) or a
 * bearer token; reading needs the `read` scope, changing needs `run` (a `read` token promises no
 * side effects).
 */
export function createWorkflowEditorRouter(deps: WorkflowEditorRouteDeps): Router {
  const router = Router();
  const json = express.json({ limit: deps.bodyLimitBytes, type: () => true, strict: true });

  /**
   * Label, body parser (JSON changes; `rawBody` routes parse their own, after authentication),
   * authentication with the scope, membership (and role).
   */
  const guard = (method: string, path: string, scope: Scope, options: { roles?: readonly Role[]; rawBody?: boolean } = {}) => {
    const { roles, rawBody = false } = options;
    const what = `${method} ${path}`;
    const label = (_req: Request, res: Response, next: NextFunction): void => {
      res.locals.route = path;
      next();
    };
    const parsers = (method === 'POST' || method === 'PATCH') && !rawBody ? [json] : [];
    return [label, ...parsers, authenticateScope(scope, what, deps.tokens), memberOnly(deps, what, roles)];
  };

  const checkDefinition = (definition: Workflow, at: string): void => {
    const check = validateWorkflow(definition, deps.specs);
    if (!check.ok) throw invalid(check.message, check.problems.map(({ path, message }) => ({ path: `${at}.${path}`, message })));
  };

  router.get('/editor/workflows', ...guard('GET', '/editor/workflows', 'read'), async (_req: Request, res: Response) => {
    const rows = await deps.workflows.listForOrg(authOf(res).orgId);
    res.json({ workflows: rows.map(summaryBody) } satisfies EditorWorkflowList);
  });

  router.post('/editor/workflows', ...guard('POST', '/editor/workflows', 'run'), async (req: Request, res: Response) => {
    const input = checkedBody(EditorWorkflowCreateInputSchema, req.body);
    const name = cleanName(input.name);
    if (input.definition) checkDefinition(input.definition, 'definition');
    const created = await deps.workflows.createDraft({ orgId: authOf(res).orgId, name, draft: input.definition ?? null });
    res.status(201).json(workflowBody(created));
  });
  allowOnly(router, '/editor/workflows', ['GET', 'POST']);

  router.get('/editor/workflows/:id', ...guard('GET', '/editor/workflows/:id', 'read'), async (req: Request<{ id: string }>, res: Response) => {
    const found = await deps.workflows.findForOrg(req.params.id, authOf(res).orgId);
    if (!found) throw noSuchWorkflow(req.params.id);
    res.json(workflowBody(found));
  });

  router.patch('/editor/workflows/:id', ...guard('PATCH', '/editor/workflows/:id', 'run'), async (req: Request<{ id: string }>, res: Response) => {
    const input = checkedBody(EditorWorkflowUpdateInputSchema, req.body);
    const name = input.name === undefined ? undefined : cleanName(input.name);
    if (input.definition) checkDefinition(input.definition, 'definition');
    const updated = await deps.workflows.updateDraft(req.params.id, authOf(res).orgId, { name, draft: input.definition });
    if (!updated) throw noSuchWorkflow(req.params.id);
    res.json(workflowBody(updated));
  });

  router.delete('/editor/workflows/:id', ...guard('DELETE', '/editor/workflows/:id', 'run', { roles: DELETE_ROLES }), async (req: Request<{ id: string }>, res: Response) => {
    if (!(await deps.workflows.delete(req.params.id, authOf(res).orgId))) throw noSuchWorkflow(req.params.id);
    res.status(204).end();
  });
  allowOnly(router, '/editor/workflows/:id', ['GET', 'PATCH', 'DELETE']);

  router.post('/editor/workflows/:id/publish', ...guard('POST', '/editor/workflows/:id/publish', 'run'), async (req: Request<{ id: string }>, res: Response) => {
    const input = checkedBody(EditorPublishInputSchema, req.body);
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
    const auth = authOf(res);
    // Recipe assets are copied before the publish transaction (copies and fetches take time);
    // the transaction then swaps the refs of the draft it publishes for the copies.
    const current = await deps.workflows.findForOrg(req.params.id, auth.orgId);
    if (!current) throw noSuchWorkflow(req.params.id);
    const hosted = current.draft ? await deps.assets.host(req.params.id, current.draft) : new Map();
    const published = await deps.workflows.publish({
      workflowId: req.params.id,
      orgId: auth.orgId,
      userId: auth.userId,
      bump: input.bump,
      initialVersion,
      slug: input.slug,
      // The catalog may have changed since the draft was saved: what is published must run.
      check: (definition) => checkDefinition(definition, 'draft'),
      rewrite: (definition) => {
        const rewritten = withHostedRefs(definition, hosted);
        if (!rewritten) throw new AppError({ code: 'conflict', message: 'the draft changed while it was being published; publish again' });
        return rewritten;
      },
    });
    res.status(201).json(publishedBody(published));
  });
  allowOnly(router, '/editor/workflows/:id/publish', ['POST']);

  // The body is the file itself, its Content-Type its media type.
  const raw = express.raw({ limit: deps.assetMaxBytes, type: () => true });
  router.post('/editor/workflows/:id/assets', ...guard('POST', '/editor/workflows/:id/assets', 'run', { rawBody: true }), raw, async (req: Request<{ id: string }>, res: Response) => {
    const mimeType = (req.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
    if (!ASSET_TYPES.test(mimeType)) {
      throw new AppError({ code: 'unsupported_media_type', message: `an asset's Content-Type must be one of image/png, image/jpeg, image/webp, image/gif, image/avif, audio/mpeg, audio/wav, audio/ogg, video/mp4, video/webm, text/plain, application/json, application/pdf; got "${mimeType}"` });
    }
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (bytes.length === 0) throw new AppError({ code: 'bad_request', message: 'the asset is empty: send the file as the request body' });
    if (!(await deps.workflows.findForOrg(req.params.id, authOf(res).orgId))) throw noSuchWorkflow(req.params.id);
    res.status(201).json(await deps.assets.upload(req.params.id, bytes, mimeType));
  });
  allowOnly(router, '/editor/workflows/:id/assets', ['POST']);

  router.get('/editor/workflows/:id/versions', ...guard('GET', '/editor/workflows/:id/versions', 'read'), async (req: Request<{ id: string }>, res: Response) => {
    const versions = await deps.workflows.listVersions(req.params.id, authOf(res).orgId);
    if (!versions) throw noSuchWorkflow(req.params.id);
    res.json({ versions: versions.map(versionBody) } satisfies WorkflowVersionList);
  });
  allowOnly(router, '/editor/workflows/:id/versions', ['GET']);

  router.post('/editor/workflows/:id/latest', ...guard('POST', '/editor/workflows/:id/latest', 'run'), async (req: Request<{ id: string }>, res: Response) => {
    const input = checkedBody(EditorLatestInputSchema, req.body);
    const version = parseSemver(input.version);
    if (!version.ok) throw invalid(version.message, [{ path: 'version', message: version.message }]);
    const moved = await deps.workflows.setLatest(req.params.id, authOf(res).orgId, version.value);
    if (!moved) throw noSuchWorkflow(req.params.id);
    res.json(workflowBody(moved));
  });
  allowOnly(router, '/editor/workflows/:id/latest', ['POST']);

  return router;
}
