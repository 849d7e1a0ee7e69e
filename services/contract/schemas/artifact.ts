import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { strictObject } from './strict-object';

/** Artifact kinds: every run input and output is one of these. */
export const ARTIFACT_KINDS = ['image', 'text', 'audio', 'video', 'float', 'int', 'boolean', 'embedding', 'file', 'structured'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

export const ArtifactKindSchema = Type.Union(ARTIFACT_KINDS.map((k) => Type.Literal(k)));

const EXACTLY_VALUE_OR_REF = {
  oneOf: [{ required: ['value'] }, { required: ['ref'] }],
  'x-error': 'an artifact has exactly one of "value" (inline) or "ref" (a URL)',
};

const envelope = {
  value: Type.Optional(Type.Unknown({ description: 'Inline form, for small scalars, text and structured data' })),
  ref: Type.Optional(Type.String({ format: 'uri', maxLength: 8192, description: 'Reference form: fetch it to get the bytes' })),
  mimeType: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: MAX_MAP_ENTRIES, description: 'For example width and height' })),
} satisfies TProperties;

/** An artifact as the service returns it: `kind` is always present. */
export const ArtifactSchema = strictObject({ kind: ArtifactKindSchema, ...envelope }, EXACTLY_VALUE_OR_REF);
export type Artifact = Static<typeof ArtifactSchema>;

/** An artifact as a caller supplies it to a workflow input: `kind` may be left to the input node. */
export const ArtifactInputSchema = strictObject({ kind: Type.Optional(ArtifactKindSchema), ...envelope }, EXACTLY_VALUE_OR_REF);
export type ArtifactInput = Static<typeof ArtifactInputSchema>;

/** Map from output name to artifact. */
export const OutputsSchema = Type.Record(Type.String(), ArtifactSchema);
export type Outputs = Static<typeof OutputsSchema>;
