import { LIMIT_FIELDS, limitKeyProblem, limitValueProblem, type LimitField, type ProviderLimitSetting } from '../../platform/provider-limit-settings';

const FIELDS = Object.keys(LIMIT_FIELDS) as LimitField[];

/**
 * A catalog file's `limits:` map (`openai: { requestsPerMinute: 500, concurrentCalls: 50 }`),
 * checked with the bounds `PROVIDER_LIMITS` has; `fail(field, message)` names the field, e.g.
 * `limits.openai.requestsPerMinute`. Whether each key's provider exists is the merge's to say
 * (mergeProviderLimits), once every file is read.
 */
export function catalogLimits(value: unknown, fail: (field: string, message: string) => never): ProviderLimitSetting[] {
  if (value === undefined) return [];
  if (!isObject(value)) return fail('limits', 'must be a map of provider (or provider/model) to its limits');
  return Object.entries(value).map(([key, limits]) => {
    const keyProblem = limitKeyProblem(key);
    if (keyProblem) fail(`limits.${key}`, keyProblem);
    if (!isObject(limits)) return fail(`limits.${key}`, `must be a map of limits (${FIELDS.join(', ')})`);
    const setting: ProviderLimitSetting = { key };
    for (const [field, number] of Object.entries(limits)) {
      if (!(FIELDS as string[]).includes(field)) fail(`limits.${key}.${field}`, `is not a limit (misspelt?); the limits are ${FIELDS.join(', ')}`);
      const problem = limitValueProblem(field as LimitField, number);
      if (problem) fail(`limits.${key}.${field}`, problem);
      setting[field as LimitField] = number as number;
    }
    if (Object.keys(limits).length === 0) fail(`limits.${key}`, `states no limit; give at least one of ${FIELDS.join(', ')}`);
    return setting;
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
