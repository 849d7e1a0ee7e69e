import type { GraphNode, Workflow, WorkflowVersionEntry } from '../../../contract';
import { bumpSemver, compareSemver, formatSemver, parseSemver, type Semver } from '../../../engine/semver';
import { checkSlug, MAX_SLUG_LENGTH } from '../../../engine/workflow-ref';
import type { NodeChange } from '../editor/graph-view';

export type Bump = 'major' | 'minor' | 'patch';
export const BUMPS: readonly Bump[] = ['major', 'minor', 'patch'];

/** A workflow slug suggested from its name: kebab-case, ASCII letters and digits, at most 64 characters. */
export function suggestSlug(name: string): string {
  const ascii = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  const words = ascii
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  let slug = '';
  for (const word of words) {
    const next = slug ? `${slug}-${word}` : word;
    if (next.length > MAX_SLUG_LENGTH) {
      if (!slug) slug = word.slice(0, MAX_SLUG_LENGTH);
      break;
    }
    slug = next;
  }
  return slug;
}

/** The engine's own kebab-case rule, in its words; null when the slug is well formed. */
export function slugProblem(slug: string): string | null {
  const checked = checkSlug(slug, 'workflow slug');
  return checked.ok ? null : checked.message;
}

/** The engine's version rule for a first publish; null when the version is well formed. */
export function versionProblem(version: string): string | null {
  const parsed = parseSemver(version);
  return parsed.ok ? null : parsed.message;
}

/** The highest version ever published (not the latest pointer: rollbacks do not lower it). */
export function highestVersion(versions: readonly Pick<WorkflowVersionEntry, 'version'>[]): Semver | null {
  let highest: Semver | null = null;
  for (const entry of versions) {
    const parsed = parseSemver(entry.version);
    if (parsed.ok && (!highest || compareSemver(parsed.value, highest) > 0)) highest = parsed.value;
  }
  return highest;
}

/** The version a later publish gets: the highest ever published, bumped. */
export function nextVersion(versions: readonly Pick<WorkflowVersionEntry, 'version'>[], bump: Bump): string {
  return formatSemver(bumpSemver(highestVersion(versions), bump));
}

/** Where a bare-major ref (`<address>@<major>`) resolves, before and after a rollback. */
export interface MajorOutcome {
  major: number;
  /** The version it resolves to now; null when it answers 404. */
  before: string | null;
  /** The version it resolves to after latest points at the target; null when it answers 404. */
  after: string | null;
}

type Entry = Pick<WorkflowVersionEntry, 'version' | 'sequence' | 'latest'>;

function resolveMajor(versions: readonly Entry[], major: number, latestSequence: number | null): string | null {
  if (latestSequence === null) return null;
  let best: Semver | null = null;
  for (const entry of versions) {
    const parsed = parseSemver(entry.version);
    if (!parsed.ok || parsed.value.major !== major || entry.sequence > latestSequence) continue;
    if (!best || compareSemver(parsed.value, best) > 0) best = parsed.value;
  }
  return best ? formatSemver(best) : null;
}

/**
 * What pointing latest at `target` does to the refs callers use (docs/workflows.md, "Resolving
 * references"): `@latest` names the target; a bare major `@N` names the highest N.x.x published no
 * later than the version latest names (by sequence), and answers 404 when there is none.
 */
export function rollbackOutcome(versions: readonly Entry[], target: string): { latestBefore: string | null; latestAfter: string; majors: MajorOutcome[] } {
  const current = versions.find((v) => v.latest) ?? null;
  const targetEntry = versions.find((v) => v.version === target);
  if (!targetEntry) throw new Error(`version ${target} is not in the history`);
  const majors = new Set<number>();
  for (const entry of versions) {
    const parsed = parseSemver(entry.version);
    if (parsed.ok) majors.add(parsed.value.major);
  }
  return {
    latestBefore: current?.version ?? null,
    latestAfter: target,
    majors: [...majors]
      .sort((a, b) => b - a)
      .map((major) => ({
        major,
        before: resolveMajor(versions, major, current?.sequence ?? null),
        after: resolveMajor(versions, major, targetEntry.sequence),
      })),
  };
}

export type NodeField = 'uses' | 'inputs' | 'label' | 'outputType';
const FIELDS: readonly NodeField[] = ['uses', 'inputs', 'label', 'outputType'];

export interface VersionDiff {
  added: string[];
  removed: string[];
  changed: { id: string; fields: NodeField[] }[];
  /** By node id, for GraphView's `changes`. */
  changes: Record<string, NodeChange>;
}

/** JSON with object keys sorted, so that key order does not count as a change. */
function canonical(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

function fieldValue(node: GraphNode, field: NodeField): unknown {
  // No inputs and an empty map mean the same.
  if (field === 'inputs') return node.inputs ?? {};
  return node[field];
}

/** How version B differs from version A, node by node (by id): added, removed, and changed with which fields. */
export function diffWorkflows(a: Workflow, b: Workflow): VersionDiff {
  const before = new Map(a.nodes.map((n) => [n.id, n]));
  const after = new Map(b.nodes.map((n) => [n.id, n]));
  const diff: VersionDiff = { added: [], removed: [], changed: [], changes: {} };
  for (const node of b.nodes) {
    const old = before.get(node.id);
    if (!old) {
      diff.added.push(node.id);
      diff.changes[node.id] = 'added';
      continue;
    }
    const fields = FIELDS.filter((f) => canonical(fieldValue(old, f)) !== canonical(fieldValue(node, f)));
    if (fields.length > 0) {
      diff.changed.push({ id: node.id, fields });
      diff.changes[node.id] = 'changed';
    }
  }
  for (const node of a.nodes) {
    if (!after.has(node.id)) {
      diff.removed.push(node.id);
      diff.changes[node.id] = 'removed';
    }
  }
  return diff;
}

/**
 * The graph to draw a diff on: version B's nodes, then A's removed nodes (so they can be shown
 * as removed), with layouts merged the same way.
 */
export function diffGraph(
  a: { definition: Workflow; layout: { nodes: Record<string, { x: number; y: number }> } | null },
  b: { definition: Workflow; layout: { nodes: Record<string, { x: number; y: number }> } | null },
  diff: VersionDiff,
): { definition: Workflow; layout: { nodes: Record<string, { x: number; y: number }> } | null } {
  const removed = new Set(diff.removed);
  const nodes = [...b.definition.nodes, ...a.definition.nodes.filter((n) => removed.has(n.id))];
  const layout = a.layout || b.layout ? { nodes: { ...(a.layout?.nodes ?? {}), ...(b.layout?.nodes ?? {}) } } : null;
  return { definition: { version: 2, nodes }, layout };
}
