import fs from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../../services/platform/config';

describe('the README configuration table', () => {
  it('lists every environment variable the config module reads, and no other', () => {
    const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Architecture'));
    const listed = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    const read = Object.values(SETTINGS).map((s) => s.env);
    expect([...listed].sort()).toEqual([...read].sort());
  });
});
