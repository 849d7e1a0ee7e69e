import { parseSelector, type Parsed, type Selector } from './semver';

/**
 * Platform namespaces: never organization slugs, so `core/...` and the like always mean the
 * platform's own nodes and workflows. Listed in docs/naming.md.
 */
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  'core', 'svc', 'platform', 'system', 'admin', 'api', 'app', 'www', 'static', 'docs', 'help', 'support',
  'status', 'internal', 'official', 'public', 'private', 'root', 'settings', 'login', 'logout', 'oauth',
  'input', 'output', 'const', 'latest', 'new', 'me', 'null', 'undefined',
]);

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const MAX_SLUG_LENGTH = 64;

/** Kebab-case: lowercase letters, digits and single inner hyphens. */
export function checkSlug(slug: string, what: string): Parsed<string> {
  if (slug.length === 0 || slug.length > MAX_SLUG_LENGTH || !SLUG.test(slug)) {
    return { ok: false, message: `${what} "${slug}" must be kebab-case (lowercase letters, digits and single hyphens, 1 to ${MAX_SLUG_LENGTH} characters)` };
  }
  return { ok: true, value: slug };
}

/** An organization slug: kebab-case and not a platform namespace. */
export function checkOrgSlug(slug: string): Parsed<string> {
  const shape = checkSlug(slug, 'organization slug');
  if (!shape.ok) return shape;
  if (RESERVED_NAMESPACES.has(slug)) return { ok: false, message: `organization slug "${slug}" is reserved for the platform` };
  return shape;
}

export type WorkflowId = { kind: 'address'; org: string; slug: string } | { kind: 'uuid'; id: string };

/** A parsed `<id>@<selector>`; `explicitSelector` tells whether `@...` was written. */
export interface WorkflowRef {
  id: WorkflowId;
  selector: Selector;
  explicitSelector: boolean;
}

/** Parses the id part: `<org-slug>/<workflow-slug>` or a UUID. */
export function parseWorkflowId(text: string): Parsed<WorkflowId> {
  if (UUID.test(text)) return { ok: true, value: { kind: 'uuid', id: text.toLowerCase() } };
  const parts = text.split('/');
  if (parts.length !== 2) {
    return { ok: false, message: `workflow id "${text}" must be an address <org-slug>/<workflow-slug> or a workflow UUID` };
  }
  const org = checkSlug(parts[0]!, 'organization slug');
  if (!org.ok) return org;
  const slug = checkSlug(parts[1]!, 'workflow slug');
  if (!slug.ok) return slug;
  return { ok: true, value: { kind: 'address', org: org.value, slug: slug.value } };
}

/** Parses `<id>`, `<id>@latest`, `<id>@1.2.0` or `<id>@1`. */
export function parseWorkflowRef(text: string): Parsed<WorkflowRef> {
  const at = text.indexOf('@');
  const idText = at === -1 ? text : text.slice(0, at);
  const selectorText = at === -1 ? undefined : text.slice(at + 1);
  const id = parseWorkflowId(idText);
  if (!id.ok) return { ok: false, message: `workflow reference "${text}": ${id.message}` };
  if (selectorText === undefined) return { ok: true, value: { id: id.value, selector: { kind: 'latest' }, explicitSelector: false } };
  const selector = parseSelector(selectorText);
  if (!selector.ok) return { ok: false, message: `workflow reference "${text}": ${selector.message}` };
  return { ok: true, value: { id: id.value, selector: selector.value, explicitSelector: true } };
}

export function formatWorkflowId(id: WorkflowId): string {
  return id.kind === 'uuid' ? id.id : `${id.org}/${id.slug}`;
}
