import fs from 'node:fs';
import type { Client } from '../../sdk/src/index';
import { uploadFile } from '../../sdk/src/node';
import { usageError } from './cli-error';
import type { Uploader } from './typed-inputs';

/** Uploads `@<path>` inputs with the SDK (`POST /v1/uploads`), saying so on stderr. */
export function uploaderOf(client: Client, signal: AbortSignal): Uploader {
  return async (filePath) => {
    let info: fs.Stats;
    try {
      info = fs.statSync(filePath);
    } catch {
      throw usageError(`no file named ${filePath} (given as @${filePath}; a URL must start with http:// or https://)`, 'not_found');
    }
    if (!info.isFile()) throw usageError(`${filePath} is not a file (given as @${filePath})`, 'invalid_input');
    const artifact = await uploadFile(client, filePath, { signal });
    process.stderr.write(`uploaded ${filePath} (${info.size} bytes) as ${artifact.kind}${artifact.mimeType ? ` ${artifact.mimeType}` : ''}\n`);
    return artifact;
  };
}
