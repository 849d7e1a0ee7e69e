/**
 * S2's token mutations: every token one character away from a valid one (a character
 * substituted, deleted or inserted at each position, a letter's case flipped), none of them
 * the token itself. A service that accepts any of them checks less than the whole token.
 */

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_';

export interface TokenMutation {
  label: string;
  value: string;
}

/** The character `step` places after `c` in the token alphabet (never `c` itself). */
function another(c: string, step: number): string {
  const at = ALPHABET.indexOf(c);
  const shift = 1 + (step % (ALPHABET.length - 1));
  return ALPHABET[((at < 0 ? 0 : at) + shift) % ALPHABET.length]!;
}

export function oneCharMutations(token: string): TokenMutation[] {
  const out = new Map<string, string>();
  const add = (label: string, value: string) => {
    if (value !== token && !out.has(value)) out.set(value, label);
  };
  for (let i = 0; i < token.length; i += 1) {
    const c = token[i]!;
    add(`substitute ${i}`, token.slice(0, i) + another(c, i) + token.slice(i + 1));
    add(`delete ${i}`, token.slice(0, i) + token.slice(i + 1));
    const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
    if (flipped !== c) add(`flip case ${i}`, token.slice(0, i) + flipped + token.slice(i + 1));
  }
  for (let i = 0; i <= token.length; i += 1) add(`insert ${i}`, token.slice(0, i) + another(token[i] ?? 'a', i * 7) + token.slice(i));
  return [...out.entries()].map(([value, label]) => ({ label, value }));
}
