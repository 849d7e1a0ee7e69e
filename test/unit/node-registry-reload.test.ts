import { createNodeRegistry, defineNode, type NodeDefinition } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { outputCacheKey } from '../../services/runs/steps/output-cache-key';

/** A stand-in for a catalog file entry: the node's id, its price and its title (plain JSON). */
interface Entry {
  id: string;
  priceMicros: number;
  title: string;
}

/** Builds a node from an entry as the catalog does: its revision is the entry's identity. */
function nodeOf(entry: unknown): NodeDefinition {
  const { id, priceMicros, title } = entry as Entry;
  return defineNode({
    spec: { id, kind: 'model', title, category: 'test', description: title, inputs: ports({ text: connector('TEXT') }), outputs: ports({ text: connector('TEXT') }) },
    revision: `${id}:${priceMicros}:${title}`,
    estimate: () => priceMicros,
    price: () => priceMicros,
    execute: async (inputs) => ({ text: inputs.text }),
  });
}

const setOf = (...entries: Entry[]) => ({ nodes: entries.map(nodeOf), entries: new Map(entries.map((e) => [e.id, e])) });

describe('a registry reloaded under runs', () => {
  const v1: Entry = { id: 'hosted-model', priceMicros: 1000, title: 'Hosted model' };
  const v2: Entry = { ...v1, priceMicros: 2500 };

  it('pins the catalog file nodes a run uses, and nothing for code nodes', () => {
    const registry = createNodeRegistry(setOf(v1), { fromEntry: nodeOf });
    const pinned = registry.pin(['text-template', 'hosted-model', 'hosted-model']);
    expect(pinned.entries).toEqual({ 'hosted-model': v1 });
    expect([...pinned.definitions.keys()]).toEqual(['hosted-model']);
    expect(registry.pin(['text-template', 'output']).entries).toBeNull();
  });

  it('serves the new definition after a reload, while a run created before keeps the one it started with', () => {
    let built = 0;
    const registry = createNodeRegistry(setOf(v1), { fromEntry: (entry) => (built++, nodeOf(entry)) });
    const before = registry.pin(['hosted-model']);
    registry.replace(setOf(v2));

    expect(registry.find('hosted-model')!.estimate({ text: 'x' })).toBe(2500);
    expect(registry.catalog.get('hosted-model')).toBeDefined();
    // In the process that created the run: the definitions it pinned.
    expect(before.definitions.get('hosted-model')!.estimate({ text: 'x' })).toBe(1000);
    // In another process (or after a restart): rebuilt from the stored entry, once per entry.
    const restored = registry.restore(JSON.parse(JSON.stringify(before.entries)) as Record<string, unknown>);
    expect(restored.get('hosted-model')!.estimate({ text: 'x' })).toBe(1000);
    registry.restore(before.entries!);
    expect(built).toBe(1);
    // A run pinned to the current entry gets this process's own definition, not a rebuilt one.
    const now = registry.pin(['hosted-model']);
    expect(registry.restore(now.entries!).get('hosted-model')).toBe(registry.find('hosted-model'));
    expect(built).toBe(1);
  });

  it('leaves out an entry it cannot build here, and an entry stored under another id', () => {
    const registry = createNodeRegistry(setOf(v1), { fromEntry: () => undefined });
    expect(registry.restore({ 'hosted-model': v2 }).size).toBe(0);
    const noFactory = createNodeRegistry(setOf(v1));
    expect(noFactory.restore({ 'other-id': v1 }).size).toBe(0);
  });

  it('drops a node a reload removed from the catalog, and adds one it brought', () => {
    const registry = createNodeRegistry(setOf(v1), { fromEntry: nodeOf });
    registry.replace(setOf({ id: 'another-model', priceMicros: 5, title: 'Another' }));
    expect(registry.find('hosted-model')).toBeUndefined();
    expect(registry.catalog.list().some((spec) => spec.id === 'another-model')).toBe(true);
    expect(registry.catalog.list().some((spec) => spec.id === 'text-template')).toBe(true);
  });

  it('refuses a set whose id clashes with a platform node, keeping the nodes in use', () => {
    const registry = createNodeRegistry(setOf(v1), { fromEntry: nodeOf });
    expect(() => registry.replace(setOf({ id: 'text-template', priceMicros: 1, title: 'Clash' }))).toThrow('duplicate node id "text-template"');
    expect(registry.find('hosted-model')!.estimate({ text: 'x' })).toBe(1000);
  });

  it('keys the output cache by the revision: a changed entry never answers from the older one', async () => {
    const none = async () => '';
    const key1 = await outputCacheKey(nodeOf(v1), { text: 'hello' }, none);
    const key2 = await outputCacheKey(nodeOf(v2), { text: 'hello' }, none);
    expect(nodeOf(v1).spec).toEqual(nodeOf(v2).spec);
    expect(key1).not.toBe(key2);
  });
});
