import { useEffect, useMemo, useState } from 'react';
import type { NodeSpec, Workflow } from '../../../contract';
import { client, errorText } from '../lib/api';
import { mountedInterface, roleOf, type Catalog, type MountedInterface } from './model';

/**
 * The node catalog and the interfaces of mounted workflows, fetched once per page load and
 * shared by every canvas (the editor, the run detail, the version history).
 */

let specsPromise: Promise<NodeSpec[]> | null = null;
const mountCache = new Map<string, Promise<MountedInterface | null>>();

export function loadSpecs(): Promise<NodeSpec[]> {
  specsPromise ??= client.ops['nodes.list']({}).catch((err: unknown) => {
    specsPromise = null;
    throw err;
  });
  return specsPromise;
}

function loadMount(uses: string, specs: ReadonlyMap<string, NodeSpec>): Promise<MountedInterface | null> {
  let p = mountCache.get(uses);
  if (!p) {
    p = client.ops['workflows.get']({ id: uses })
      .then((published) => mountedInterface(`${published.address ?? uses}@${published.version}`, published.workflow, { specs, mounted: new Map() }))
      .catch(() => {
        mountCache.delete(uses);
        return null;
      });
    mountCache.set(uses, p);
  }
  return p;
}

export interface CatalogState {
  catalog: Catalog;
  specs: NodeSpec[];
  loading: boolean;
  error: string | null;
}

/** The catalog for a definition: platform specs, plus the interface of each mounted workflow it uses. */
export function useCatalog(definition: Workflow | null): CatalogState {
  const [specs, setSpecs] = useState<NodeSpec[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [mounted, setMounted] = useState<ReadonlyMap<string, MountedInterface>>(new Map());

  useEffect(() => {
    let live = true;
    loadSpecs().then(
      (list) => live && setSpecs(list),
      (err: unknown) => live && setError(errorText(err)),
    );
    return () => {
      live = false;
    };
  }, []);

  const specMap = useMemo(() => new Map((specs ?? []).map((s) => [s.id, s])), [specs]);
  const mountUses = useMemo(
    () => [...new Set((definition?.nodes ?? []).filter((n) => roleOf(n.uses) === 'mounted').map((n) => n.uses))].sort().join('\n'),
    [definition],
  );

  useEffect(() => {
    if (!specs || mountUses === '') return;
    let live = true;
    const uses = mountUses.split('\n');
    void Promise.all(uses.map(async (u) => [u, await loadMount(u, specMap)] as const)).then((pairs) => {
      if (!live) return;
      setMounted((prev) => {
        const next = new Map(prev);
        for (const [u, iface] of pairs) if (iface) next.set(u, iface);
        return next;
      });
    });
    return () => {
      live = false;
    };
  }, [mountUses, specs, specMap]);

  const catalog = useMemo<Catalog>(() => ({ specs: specMap, mounted }), [specMap, mounted]);
  return { catalog, specs: specs ?? [], loading: specs === null && error === null, error };
}
