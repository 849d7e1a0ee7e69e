import { Type, type TProperties } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { ArtifactInputSchema, ArtifactSchema, OutputsSchema } from '../schemas/artifact';
import {
  EditorLatestInputSchema,
  EditorPublishInputSchema,
  EditorWorkflowCreateInputSchema,
  EditorWorkflowListSchema,
  EditorWorkflowSchema,
  EditorWorkflowUpdateInputSchema,
  SlugCheckSchema,
  WorkflowVersionDetailSchema,
  WorkflowVersionListSchema,
} from '../schemas/editor-workflow';
import { MaxCostUsdSchema } from '../schemas/max-cost';
import { strictObject } from '../schemas/strict-object';
import { PublishedWorkflowSchema } from '../schemas/workflow';

/**
 * The web editor's workflow routes (docs/workflows.md): drafts, publishing, version history, the
 * latest pointer, deletion and recipe assets, outside `/v1` (the spec keeps publishing out of the
 * API). They act for a member of the caller's organization; reading needs `read`, changing `run`
 * (a `read` token promises no side effects).
 */

const IdSchema = Type.String({ minLength: 1, description: 'Workflow id (UUID)' });
const withId = <T extends TProperties>(properties: T) => ({ id: IdSchema, ...properties });

const editor = {
  auth: 'required',
  response: 'json',
  spendsMoney: false,
} as const;

const READ_ERRORS = ['validation_failed', 'unauthorized', 'forbidden', 'insufficient_scope', 'rate_limited'] as const;
const CHANGE_ERRORS = [...READ_ERRORS, 'not_found'] as const;

export const editorWorkflowsList = defineOperation({
  ...editor,
  name: 'editor.workflows.list',
  mcpTool: 'editor_workflows_list',
  summary: "List the organization's workflows, most recently changed first",
  http: { method: 'GET', path: '/editor/workflows', pathParams: [] },
  scope: 'read',
  input: strictObject({}),
  output: EditorWorkflowListSchema,
  errors: READ_ERRORS,
  readOnly: true,
});

export const editorWorkflowsCreate = defineOperation({
  ...editor,
  name: 'editor.workflows.create',
  mcpTool: 'editor_workflows_create',
  summary: 'Create a workflow with a draft',
  http: { method: 'POST', path: '/editor/workflows', pathParams: [], status: 201 },
  scope: 'run',
  input: EditorWorkflowCreateInputSchema,
  output: EditorWorkflowSchema,
  errors: READ_ERRORS,
  readOnly: false,
});

export const editorWorkflowsGet = defineOperation({
  ...editor,
  name: 'editor.workflows.get',
  mcpTool: 'editor_workflows_get',
  summary: 'Get a workflow with its draft',
  http: { method: 'GET', path: '/editor/workflows/:id', pathParams: ['id'] },
  scope: 'read',
  input: strictObject(withId({})),
  output: EditorWorkflowSchema,
  errors: CHANGE_ERRORS,
  readOnly: true,
});

export const editorWorkflowsUpdate = defineOperation({
  ...editor,
  name: 'editor.workflows.update',
  mcpTool: 'editor_workflows_update',
  summary: 'Rename a workflow and/or replace its draft or layout (an invalid draft is saved, with its problems)',
  http: { method: 'PATCH', path: '/editor/workflows/:id', pathParams: ['id'] },
  scope: 'run',
  input: strictObject(withId(EditorWorkflowUpdateInputSchema.properties), {
    anyOf: [{ required: ['name'] }, { required: ['definition'] }, { required: ['layout'] }],
    'x-error': 'give at least one of "name", "definition", "layout"',
  }),
  output: EditorWorkflowSchema,
  errors: CHANGE_ERRORS,
  readOnly: false,
});

export const editorWorkflowsDelete = defineOperation({
  ...editor,
  name: 'editor.workflows.delete',
  mcpTool: 'editor_workflows_delete',
  summary: 'Delete a workflow (owners and admins); its address is retired',
  http: { method: 'DELETE', path: '/editor/workflows/:id', pathParams: ['id'], status: 204 },
  scope: 'run',
  input: strictObject(withId({})),
  output: Type.Null(),
  errors: CHANGE_ERRORS,
  readOnly: false,
});

export const editorWorkflowsPublish = defineOperation({
  ...editor,
  name: 'editor.workflows.publish',
  mcpTool: 'editor_workflows_publish',
  summary: 'Publish the draft as a new immutable version',
  http: { method: 'POST', path: '/editor/workflows/:id/publish', pathParams: ['id'], status: 201 },
  scope: 'run',
  input: strictObject(withId(EditorPublishInputSchema.properties)),
  output: PublishedWorkflowSchema,
  errors: [...CHANGE_ERRORS, 'conflict'],
  readOnly: false,
});

export const editorWorkflowsAssets = defineOperation({
  ...editor,
  name: 'editor.workflows.assets',
  mcpTool: 'editor_workflows_assets',
  summary: "Upload a file as one of the workflow's recipe assets (the body is the file)",
  http: { method: 'POST', path: '/editor/workflows/:id/assets', pathParams: ['id'], status: 201, body: 'bytes' },
  scope: 'run',
  input: strictObject(withId({})),
  output: ArtifactSchema,
  errors: [...CHANGE_ERRORS, 'bad_request', 'payload_too_large', 'unsupported_media_type'],
  readOnly: false,
});

export const editorWorkflowsVersions = defineOperation({
  ...editor,
  name: 'editor.workflows.versions',
  mcpTool: 'editor_workflows_versions',
  summary: 'List every published version, newest first',
  http: { method: 'GET', path: '/editor/workflows/:id/versions', pathParams: ['id'] },
  scope: 'read',
  input: strictObject(withId({})),
  output: WorkflowVersionListSchema,
  errors: CHANGE_ERRORS,
  readOnly: true,
});

export const editorWorkflowsLatest = defineOperation({
  ...editor,
  name: 'editor.workflows.latest',
  mcpTool: 'editor_workflows_latest',
  summary: 'Point latest at a published version (rollback or forward)',
  http: { method: 'POST', path: '/editor/workflows/:id/latest', pathParams: ['id'] },
  scope: 'run',
  input: strictObject(withId(EditorLatestInputSchema.properties)),
  output: EditorWorkflowSchema,
  errors: CHANGE_ERRORS,
  readOnly: false,
});

export const editorWorkflowsVersion = defineOperation({
  ...editor,
  name: 'editor.workflows.version',
  mcpTool: 'editor_workflows_version',
  summary: 'Get one published version with its definition and layout',
  http: { method: 'GET', path: '/editor/workflows/:id/versions/:version', pathParams: ['id', 'version'] },
  scope: 'read',
  input: strictObject(withId({ version: Type.String({ minLength: 1, maxLength: 40, description: 'A published version (MAJOR.MINOR.PATCH)' }) })),
  output: WorkflowVersionDetailSchema,
  errors: CHANGE_ERRORS,
  readOnly: true,
});

export const editorSlugsCheck = defineOperation({
  ...editor,
  name: 'editor.slugs.check',
  mcpTool: 'editor_slugs_check',
  summary: "Check whether a workflow slug is free in the caller's organization (a malformed slug answers available: false)",
  http: { method: 'GET', path: '/editor/slugs/:slug', pathParams: ['slug'] },
  scope: 'read',
  input: strictObject({ slug: Type.String({ minLength: 1, maxLength: 200, description: 'The workflow slug to check' }) }),
  output: SlugCheckSchema,
  errors: READ_ERRORS,
  readOnly: true,
});

/**
 * `editor.workflows.run`: runs the workflow's saved draft as `runs.create` runs an inline
 * definition (same checks, cap, credit hold and stream), recorded under the workflow (no version).
 */
export const editorWorkflowsRun = defineOperation({
  name: 'editor.workflows.run',
  mcpTool: 'editor_workflows_run',
  summary: "Run the workflow's saved draft; the response is a stream of run events",
  http: { method: 'POST', path: '/editor/workflows/:id/runs', pathParams: ['id'], options: ['maxDurationSeconds', 'idempotencyKey', 'webhookUrl', 'webhookEvents', 'outputCache'] },
  auth: 'required',
  scope: 'run',
  input: strictObject(
    withId({
      inputs: Type.Optional(Type.Record(Type.String(), ArtifactInputSchema, { maxProperties: MAX_MAP_ENTRIES, description: "Map from the draft's input names to artifacts" })),
      maxCostUsd: Type.Optional(MaxCostUsdSchema),
    }),
  ),
  output: strictObject({ outputs: OutputsSchema }),
  response: 'sse',
  holdsStream: true,
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'forbidden', 'insufficient_scope', 'insufficient_credit', 'not_found', 'conflict', 'rate_limited'],
  spendsMoney: true,
  readOnly: false,
});
