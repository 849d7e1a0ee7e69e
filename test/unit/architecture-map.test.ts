import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '../..');
const map = readFileSync(path.join(root, 'ARCHITECTURE.md'), 'utf8');

/** The TypeScript files of a folder, with the names of its sub-folders (its rooms) before them. */
function filesUnder(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return filesUnder(rel);
    return entry.name.endsWith('.ts') ? [rel] : [];
  });
}

/** The files a room's table lists: the rows of the table under the room's heading, up to the next heading. */
function listedIn(heading: string): string[] {
  const start = map.indexOf(heading);
  if (start < 0) return [];
  const next = map.slice(start + heading.length).search(/\n(\*\*`|\*\*Shared|\*\*Root|## )/);
  const section = next < 0 ? map.slice(start) : map.slice(start, start + heading.length + next);
  return [...section.matchAll(/^\| `([a-z0-9-]+\.ts)` \|/gm)].map((m) => m[1]!);
}

describe('ARCHITECTURE.md', () => {
  it.each(['services/runs', 'services/api', 'services/composition'])('lists every file of %s in the table of its room', (area) => {
    const unlisted = filesUnder(area).filter((file) => {
      const inArea = file.slice(area.length + 1);
      const roomName = inArea.includes('/') ? inArea.split('/')[0]! : undefined;
      const base = path.basename(file);
      if (area === 'services/composition') return !listedIn('## `services/composition`').includes(base);
      const heading = roomName ? `**\`${roomName}/\`**` : area === 'services/runs' ? '**Shared files**' : '**Root files**';
      return !listedIn(heading).includes(base);
    });
    expect(unlisted).toEqual([]);
  });

  it('says for each room what it may import exactly as the lint rule has it', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const config = require(path.join(root, '.dependency-cruiser.cjs')) as { forbidden: { name: string; from: { path: string }; to: { pathNot?: string[] } }[] };
    const rooms = [...map.matchAll(/^\*\*`([a-z]+)\/`\*\*: .*\(may import: ([^)]*)\)$/gm)];
    expect(rooms.length).toBe(13);
    for (const [, name, said] of rooms) {
      const area = map.indexOf(`**\`${name}/\`**`) < map.indexOf('## `services/api`') ? 'runs' : 'api';
      const rule = config.forbidden.find((r) => r.name === `${area}-${name}-room`);
      expect(rule).toBeDefined();
      const allowedRooms = (rule!.to.pathNot ?? []).map((p) => p.match(/^\^services\/[a-z]+\/([a-z]+)\/$/)?.[1]).filter((r): r is string => r !== undefined && r !== name);
      const saidRooms = [...said!.matchAll(/`([a-z]+)\/`/g)].map((m) => m[1]!);
      expect({ room: `${area}/${name}`, imports: saidRooms.sort() }).toEqual({ room: `${area}/${name}`, imports: allowedRooms.sort() });
    }
  });

  it('lists no file that does not exist', () => {
    const existing = new Set(['services/runs', 'services/api', 'services/composition'].flatMap(filesUnder).map((file) => path.basename(file)));
    const listed = [...map.matchAll(/^\| `([a-z0-9-]+\.ts)` \|/gm)].map((m) => m[1]!);
    expect(listed.filter((name) => !existing.has(name))).toEqual([]);
  });
});
