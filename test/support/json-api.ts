import { validate } from '../../services/contract';
import { bearer } from './service';

/** A one-node workflow whose output `sum` is a + b. */
export const adder = (a: number, b: number) => ({
  version: 2,
  nodes: [
    { id: 'add', uses: 'math-add', inputs: { a, b } },
    { id: 'sum', uses: 'output', inputs: { value: '${add.result}' } },
  ],
});

/** A JSON answer: its status and parsed body (null for an empty one). */
export interface JsonAnswer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Fails naming the schema's complaint when `value` does not fit it. */
export function expectValid(schema: Parameters<typeof validate>[0], value: unknown): void {
  const checked = validate(schema, value);
  expect(checked.ok ? 'valid' : checked.message).toBe('valid');
}

/** One JSON request to `base` with a bearer token (none when null). */
export async function jsonCall(base: string, method: string, path: string, body: unknown, token: string | null): Promise<JsonAnswer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token === null ? {} : bearer(token)), 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}
