import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The Redis scripts' folder, found relative to this file so the working directory does not matter. */
export const SCRIPTS_DIR = path.join(__dirname, 'scripts');

/** An include line, as BullMQ writes it: `--- @include "<path>"`, the path relative to the scripts' folder, `.lua` implied. */
const INCLUDE_LINE = /^--- @include "([^"]+)"[ \t]*$/gm;

/**
 * `text` with each include line replaced by the included file's text, as `read` gives it. An
 * included file includes nothing itself (the scripts need one level): an include line left in
 * the result would be a comment to Redis and the script would fail at run time, so it throws.
 */
export function resolveLuaIncludes(text: string, read: (includePath: string) => string): string {
  return text.replace(INCLUDE_LINE, (_line, includePath: string) => {
    const included = read(includePath);
    if (new RegExp(INCLUDE_LINE.source, 'm').test(included)) throw new Error(`the Lua include ${includePath} includes another file: includes do not nest`);
    return included.replace(/\n$/, '');
  });
}

/** The text of `<dir>/<name>.lua`, its includes resolved (`resolveLuaIncludes`). */
export function readLuaScript(name: string, dir: string = SCRIPTS_DIR): string {
  return resolveLuaIncludes(readLua(dir, name), (includePath) => readLua(dir, includePath));
}

function readLua(dir: string, name: string): string {
  const file = path.join(dir, name.endsWith('.lua') ? name : `${name}.lua`);
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the Lua script ${name} does not exist (${file})`);
    throw err;
  }
}
