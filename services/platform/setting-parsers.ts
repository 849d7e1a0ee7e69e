/**
 * How each setting's text is read (see `SETTINGS` in config.ts): each parser returns the value or
 * throws a `SettingError` whose message follows the variable's name.
 */

/** A malformed value; its message completes "<VARIABLE> …". */
export class SettingError extends Error {}

export const int = (min: number, max: number) => (raw: string): number => {
  if (!/^-?\d+$/.test(raw.trim())) throw new SettingError(`must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new SettingError(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

export const oneOf = <T extends string>(...values: T[]) => (raw: string): T => {
  if (!(values as string[]).includes(raw)) throw new SettingError(`must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

export const url = (...protocols: string[]) => (raw: string): string => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SettingError(`must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new SettingError(`must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
};

export const text = (raw: string): string => {
  if (raw.trim() === '') throw new SettingError('must not be empty');
  return raw;
};

export const secret = (raw: string): string => {
  if (raw.length < 32) throw new SettingError('must be at least 32 characters long');
  return raw;
};

export const bool = (raw: string): boolean => {
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new SettingError(`must be true or false, got "${raw}"`);
};

/** `name=micros,name=micros`: offered models (or apps) and their integer micro-USD prices; `none`: none. */
export const priceList = (raw: string): Record<string, number> => {
  const prices: Record<string, number> = {};
  if (raw.trim() === 'none') return prices;
  for (const entry of raw.split(',').map((e) => e.trim()).filter(Boolean)) {
    const match = /^([A-Za-z0-9._:/-]+)=(\d{1,12})$/.exec(entry);
    if (!match) throw new SettingError(`must be a comma list of name=micro-USD (e.g. gpt-image-1=250000), got "${entry}"`);
    prices[match[1]!] = Number(match[2]);
  }
  return prices;
};

/** A comma list of names; empty: none. */
export const nameList = (raw: string): string[] => raw.split(',').map((e) => e.trim()).filter(Boolean);

/** A model's token prices, USD per million input and output tokens, as validated decimal text. */
export interface TokenPrice {
  input: string;
  output: string;
}

/** `model=input/output,…` in USD per million tokens (e.g. `gpt-4o-mini=0.15/0.60`). */
export const tokenPriceTable = (raw: string): Record<string, TokenPrice> => {
  const prices: Record<string, TokenPrice> = {};
  for (const entry of raw.split(',').map((e) => e.trim()).filter(Boolean)) {
    const match = /^([A-Za-z0-9._:/@-]+)=(\d{1,6}(?:\.\d{1,6})?)\/(\d{1,6}(?:\.\d{1,6})?)$/.exec(entry);
    if (!match) throw new SettingError(`must be a comma list of model=input/output in USD per million tokens (e.g. gpt-4o-mini=0.15/0.60), got "${entry}"`);
    prices[match[1]!] = { input: match[2]!, output: match[3]! };
  }
  return prices;
};

/** A base URL (http or https) without its trailing slashes. */
export const baseUrl = (raw: string): string => url('http:', 'https:')(raw).replace(/\/+$/, '');

/** Any text, the empty string included (keys and other values that may be unset). */
export const verbatim = (raw: string): string => raw;

/** A comma list of names that must name at least one. */
export const nonEmptyNameList = (raw: string): string[] => nameList(text(raw));
