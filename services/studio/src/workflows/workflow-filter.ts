import type { EditorWorkflowSummary } from '../../../contract';

/**
 * The workflows whose name or address contains every word of the query (case-insensitive), in
 * their order. An empty query keeps them all.
 */
export function filterWorkflows<T extends Pick<EditorWorkflowSummary, 'name' | 'address'>>(workflows: readonly T[], query: string): T[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [...workflows];
  return workflows.filter((w) => {
    const haystack = `${w.name} ${w.address ?? ''}`.toLowerCase();
    return words.every((word) => haystack.includes(word));
  });
}
