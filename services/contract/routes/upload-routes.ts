import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { ArtifactSchema } from '../schemas/artifact';
import { strictObject } from '../schemas/strict-object';

/**
 * `POST /v1/uploads`: a local file stored as a run artifact of the caller's organization, so that
 * its URL can be given as a run input (the SDK's `upload`). The body is the file; its type is read
 * from its bytes, not from Content-Type or the name. Kept as long as run artifacts
 * (`ARTIFACT_RETENTION_DAYS`); `UPLOAD_MAX_BYTES` bounds its size (docs/uploads.md).
 */
export const uploadsCreate = defineOperation({
  name: 'uploads.create',
  mcpTool: 'uploads_create',
  summary: 'Upload a file to use as a run input (the body is the file); answers a ref artifact',
  http: { method: 'POST', path: '/v1/uploads', pathParams: [], status: 201, body: 'bytes' },
  // Storing files costs the organization storage: not for a `read` token, which promises no side effects.
  scope: 'run',
  auth: 'required',
  input: strictObject({
    filename: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'The file\'s name, e.g. "photo.png": a plain name (no "/"), used for the stored name; the extension follows the detected type' }),
    ),
  }),
  output: ArtifactSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'forbidden', 'insufficient_scope', 'rate_limited', 'bad_request', 'payload_too_large', 'unsupported_media_type'],
  spendsMoney: false,
  readOnly: false,
});
