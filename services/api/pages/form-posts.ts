import express, { type Request, type Response } from 'express';
import { AppError } from '../../platform/app-error';

/** The largest form body a page accepts: its forms send a few short fields. */
const FORM_BODY_LIMIT = 16 * 1024;

/** A form or query field as one string, trimmed; a repeated or absent one is empty. */
export function formField(source: unknown, name: string): string {
  const value = (source as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * Reads the urlencoded body of a page's form post, of at most `maxFields` fields. More is a
 * `400` whose message (`tooMany`) says what to do: body-parser's own error would read as a 500.
 * The caller checks the post's origin first (`assertSameOrigin`), before the body is read.
 */
export function formReader(maxFields: number, tooMany: string): (req: Request, res: Response) => Promise<Record<string, unknown>> {
  const parser = express.urlencoded({ extended: false, limit: FORM_BODY_LIMIT, parameterLimit: maxFields, type: () => true });
  return (req, res) =>
    new Promise((resolve, reject) =>
      parser(req, res, (err?: unknown) => {
        if (!err) return resolve((req.body ?? {}) as Record<string, unknown>);
        if ((err as { type?: unknown }).type === 'parameters.too.many') return reject(new AppError({ code: 'bad_request', message: tooMany, cause: err }));
        reject(err);
      }),
    );
}
