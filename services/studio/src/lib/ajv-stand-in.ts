/**
 * The studio's stand-in for ajv, swapped in by its production build (vite.config.ts).
 *
 * The studio's pages forbid generated code (their Content-Security-Policy has no 'unsafe-eval'),
 * so ajv could never compile a validator there: the SDK then sends the input unchecked, and the
 * service checks it with the same schema and answers the same message (services/sdk/src/call.ts).
 * Bundling ajv for that would only make the first screen a third heavier, so the build gives the
 * contract's validator this class instead, which refuses to compile exactly as the browser would.
 */
export default class Ajv {
  addVocabulary(): this {
    return this;
  }

  addKeyword(): this {
    return this;
  }

  addFormat(): this {
    return this;
  }

  compile(): never {
    throw new EvalError("the studio's Content-Security-Policy forbids generated code: the service checks this input");
  }
}

/** ajv-formats' entry point: formats only matter to a validator that compiles. */
export function addFormats<T>(ajv: T): T {
  return ajv;
}
