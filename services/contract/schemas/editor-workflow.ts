import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './strict-object';
import { WorkflowSchema } from './workflow';

/**
 * The web editor's workflow endpoints (`/editor/workflows...`, docs/workflows.md): drafts,
 * publishing, version history, the latest pointer, deletion. They are not contract operations
 * (the spec keeps publishing out of the API), but their bodies are validated the same way:
 * unknown fields are rejected.
 */

const NameSchema = Type.String({ minLength: 1, maxLength: 200, description: 'Display name; the address does not change with it' });
// Checked by the engine's parser (its messages say what is wrong), not by a schema pattern.
const semver = (description: string) => Type.String({ minLength: 1, maxLength: 40, description: `${description}: MAJOR.MINOR.PATCH, no prerelease or build tags` });
const time = (description: string) => Type.String({ format: 'date-time', description });

/**
 * Where the editor's canvas draws each node of a draft: node id → position. The workflow
 * definition has no place for it (and must not change), so it is kept beside the draft and
 * saved with each published version.
 */
export const EditorLayoutSchema = strictObject(
  {
    nodes: Type.Record(Type.String(), strictObject({ x: Type.Number(), y: Type.Number() }), {
      maxProperties: 10000,
      description: 'Canvas position of each node, by node id',
    }),
  },
  { description: "The canvas positions of a draft's nodes" },
);
export type EditorLayout = Static<typeof EditorLayoutSchema>;

const LayoutOrNullSchema = Type.Union([EditorLayoutSchema, Type.Null()], { description: 'Canvas positions; null when none were saved' });

/** One thing wrong with a draft, as publishing would report it. */
export const DraftProblemSchema = Type.Object({
  path: Type.String({ description: 'Where, relative to the definition, e.g. `nodes[2].inputs.width`' }),
  message: Type.String(),
});
export type DraftProblem = Static<typeof DraftProblemSchema>;

/** `POST /editor/workflows`: a new draft. */
export const EditorWorkflowCreateInputSchema = strictObject({
  name: NameSchema,
  definition: Type.Optional(WorkflowSchema),
  layout: Type.Optional(EditorLayoutSchema),
});
export type EditorWorkflowCreateInput = Static<typeof EditorWorkflowCreateInputSchema>;

/**
 * `PATCH /editor/workflows/:id`: rename, replace the draft and/or its layout (at least one). A
 * draft that fails the engine's checks is still saved (work in progress); its `problems` say why
 * it cannot be published yet.
 */
export const EditorWorkflowUpdateInputSchema = strictObject(
  {
    name: Type.Optional(NameSchema),
    definition: Type.Optional(WorkflowSchema),
    layout: Type.Optional(EditorLayoutSchema),
  },
  { minProperties: 1 },
);
export type EditorWorkflowUpdateInput = Static<typeof EditorWorkflowUpdateInputSchema>;

/** Which part of the version a publish raises. */
const bump = (description: string) => Type.Union([Type.Literal('major'), Type.Literal('minor'), Type.Literal('patch')], { description });
export const BumpSchema = bump('Which part of the version a publish raises');
export type Bump = Static<typeof BumpSchema>;

/** `POST /editor/workflows/:id/publish`: publish the draft as a new immutable version. */
export const EditorPublishInputSchema = strictObject({
  bump: Type.Optional(bump('Required after the first publish: the next version continues from the highest ever published')),
  version: Type.Optional(semver('First publish only: its version (default 1.0.0)')),
  slug: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Workflow slug (kebab-case) the first publish claims; later publishes may repeat it' }),
  ),
  note: Type.Optional(Type.String({ maxLength: 2000, description: 'Changelog note kept with the version' })),
});
export type EditorPublishInput = Static<typeof EditorPublishInputSchema>;

/** `POST /editor/workflows/:id/latest`: point `latest` at a published version (rollback or forward). */
export const EditorLatestInputSchema = strictObject({ version: semver('A published version') });
export type EditorLatestInput = Static<typeof EditorLatestInputSchema>;

const LatestSchema = Type.Union(
  [Type.Object({ version: Type.String(), sequence: Type.Integer({ minimum: 1 }) }), Type.Null()],
  { description: 'The version the latest pointer names; null until the first publish' },
);

/** A workflow as the editor lists it. */
export const EditorWorkflowSummarySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  address: Type.Union([Type.String(), Type.Null()], { description: '<org-slug>/<workflow-slug>; null until the first publish claims the slug' }),
  latest: LatestSchema,
  createdAt: time('When the draft was created'),
  updatedAt: time('Last change: draft, name, publish, latest pointer'),
  lastPublishedAt: Type.Union([time('When the newest version was published'), Type.Null()], { description: 'null until the first publish' }),
  draftPending: Type.Boolean({
    description: 'The draft has changes not yet published: changed after the last publish, or never published and not empty',
  }),
});
export type EditorWorkflowSummary = Static<typeof EditorWorkflowSummarySchema>;

/** One workflow with its draft (`GET`, `POST`, `PATCH /editor/workflows...`, the latest pointer's answer). */
export const EditorWorkflowSchema = Type.Object({
  ...EditorWorkflowSummarySchema.properties,
  draft: Type.Union([WorkflowSchema, Type.Null()], { description: 'The unpublished working copy' }),
  layout: LayoutOrNullSchema,
  problems: Type.Array(DraftProblemSchema, {
    description: "The draft's validation problems against the current node catalog (what publishing would refuse); empty when valid or null",
  }),
});
export type EditorWorkflow = Static<typeof EditorWorkflowSchema>;

/** `GET /editor/workflows`: the organization's workflows, most recently changed first. */
export const EditorWorkflowListSchema = Type.Object({ workflows: Type.Array(EditorWorkflowSummarySchema) });
export type EditorWorkflowList = Static<typeof EditorWorkflowListSchema>;

/** One published version in the history. */
export const WorkflowVersionEntrySchema = Type.Object({
  version: Type.String(),
  sequence: Type.Integer({ minimum: 1 }),
  createdAt: time('When it was published'),
  publishedBy: Type.Union([Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() }), Type.Null()], {
    description: 'The publisher; null when the account was deleted',
  }),
  latest: Type.Boolean({ description: 'Whether the latest pointer names it' }),
  note: Type.Union([Type.String(), Type.Null()], { description: 'The changelog note given at publish; null when none' }),
});
export type WorkflowVersionEntry = Static<typeof WorkflowVersionEntrySchema>;

/** `GET /editor/workflows/:id/versions`: every published version, newest (highest sequence) first. */
export const WorkflowVersionListSchema = Type.Object({ versions: Type.Array(WorkflowVersionEntrySchema) });
export type WorkflowVersionList = Static<typeof WorkflowVersionListSchema>;

/** `GET /editor/workflows/:id/versions/:version`: one published version with its definition and layout. */
export const WorkflowVersionDetailSchema = Type.Object({
  ...WorkflowVersionEntrySchema.properties,
  definition: WorkflowSchema,
  layout: Type.Union([EditorLayoutSchema, Type.Null()], { description: "The draft's canvas positions at publish; null when none were saved" }),
});
export type WorkflowVersionDetail = Static<typeof WorkflowVersionDetailSchema>;

/** `GET /editor/slugs/:slug`: whether a first publish could claim this workflow slug (a live check as the user types). */
export const SlugCheckSchema = Type.Object({
  slug: Type.String(),
  address: Type.Union([Type.String(), Type.Null()], { description: '<org-slug>/<slug> it would give; null when the slug is malformed' }),
  available: Type.Boolean(),
  message: Type.String({ description: 'Why not (malformed, taken, retired), or "available"' }),
});
export type SlugCheck = Static<typeof SlugCheckSchema>;
