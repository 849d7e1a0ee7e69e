import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readLuaScript, resolveLuaIncludes, SCRIPTS_DIR } from '../../services/queue/lua-script-files';

const scripts = readdirSync(SCRIPTS_DIR).filter((name) => name.endsWith('.lua'));
const includes = readdirSync(path.join(SCRIPTS_DIR, 'includes')).filter((name) => name.endsWith('.lua'));

/** The script's opening comment: `--[[ ... ]]` at the top of the file. */
function header(lua: string): string {
  return /^--\[\[\n([\s\S]*?)\n\]\]\n/.exec(lua)?.[1] ?? '';
}

describe('Redis scripts', () => {
  it('has scripts to check', () => {
    expect(scripts.length).toBeGreaterThan(0);
    expect(includes.length).toBeGreaterThan(0);
  });

  it.each(scripts)('%s opens with a header naming its keys, arguments and what it returns', (name) => {
    const lines = header(readFileSync(path.join(SCRIPTS_DIR, name), 'utf8'));
    expect(lines).toMatch(/^ {4}KEYS\[\d/m);
    expect(lines).toMatch(/^ {4}ARGV\[\d/m);
    expect(lines).toMatch(/^ {2}Returns:\n {4}\S/m);
  });

  it.each(includes)('includes/%s opens with a header naming the keys and arguments it uses', (name) => {
    const lines = header(readFileSync(path.join(SCRIPTS_DIR, 'includes', name), 'utf8'));
    expect(lines).toMatch(/^ {4}KEYS\[\d/m);
    expect(lines).toMatch(/^ {4}ARGV\[\d/m);
  });

  it.each(scripts)('%s resolves its includes', (name) => {
    const lua = readLuaScript(name.replace(/\.lua$/, ''));
    expect(lua).not.toMatch(/@include/);
    for (const [, included] of readFileSync(path.join(SCRIPTS_DIR, name), 'utf8').matchAll(/^--- @include "([^"]+)"$/gm)) {
      expect(lua).toContain(readFileSync(path.join(SCRIPTS_DIR, `${included}.lua`), 'utf8').trimEnd());
    }
  });

  it('every include is included by some script', () => {
    const included = new Set(scripts.flatMap((name) => [...readFileSync(path.join(SCRIPTS_DIR, name), 'utf8').matchAll(/^--- @include "([^"]+)"$/gm)].map((m) => m[1])));
    expect([...included].sort()).toEqual(includes.map((name) => `includes/${name.replace(/\.lua$/, '')}`).sort());
  });

  it('replaces each include line by the included text, in place', () => {
    const read = (file: string) => ({ 'includes/a': 'local a = 1\n', 'includes/b': 'local b = 2\n' })[file] ?? '';
    expect(resolveLuaIncludes('-- top\n--- @include "includes/a"\nlocal x = a\n--- @include "includes/b"\nreturn x + b\n', read)).toBe('-- top\nlocal a = 1\nlocal x = a\nlocal b = 2\nreturn x + b\n');
  });

  it('refuses an include that includes another file', () => {
    const read = () => '--- @include "includes/deeper"\n';
    expect(() => resolveLuaIncludes('--- @include "includes/a"\n', read)).toThrow('includes do not nest');
  });

  it('names a script or include that does not exist', () => {
    expect(() => readLuaScript('no-such-script')).toThrow('the Lua script no-such-script does not exist');
  });
});
