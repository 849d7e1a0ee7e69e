import { describe, expect, it } from 'vitest';
import Ajv, { addFormats } from './ajv-stand-in';

describe("the production build's stand-in for ajv", () => {
  it('refuses to compile with the EvalError a page without unsafe-eval gives, which the SDK takes as "let the service check"', () => {
    const ajv = new Ajv().addVocabulary().addKeyword().addFormat();
    expect(() => ajv.compile()).toThrow(EvalError);
  });

  it('takes formats without doing anything', () => {
    const ajv = new Ajv();
    expect(addFormats(ajv)).toBe(ajv);
  });
});
