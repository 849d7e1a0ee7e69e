import { useEffect, useId, useMemo, useState, type FormEvent } from 'react';
import type { EditorWorkflow, PublishedWorkflow, SlugCheck, WorkflowVersionEntry } from '../../../contract';
import { client, errorText } from '../lib/api';
import { useSession } from '../lib/session';
import { Modal } from './modal';
import { BUMPS, nextVersion, slugProblem, suggestSlug, versionProblem, type Bump } from './versioning';
import './publish.css';

export interface PublishDialogProps {
  /** The workflow as last saved (its draft, problems, address and latest version). */
  workflow: EditorWorkflow;
  onClose(): void;
  onPublished(published: PublishedWorkflow): void;
}

const NOTE_MAX = 2000;
const SLUG_CHECK_DELAY_MS = 300;

const BUMP_TEXT: Record<Bump, string> = {
  major: 'Breaking: inputs or outputs changed in a way callers must adapt to',
  minor: 'New capability, compatible with callers of the current version',
  patch: 'A fix or tweak; the interface is unchanged',
};

type Versions = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'ready'; versions: WorkflowVersionEntry[] };
type SlugState = { status: 'idle' } | { status: 'checking'; slug: string } | { status: 'done'; check: SlugCheck } | { status: 'failed'; slug: string; message: string };

/** The server's words for a failed publish, with the draft's issues when it answered validation_failed. */
interface Failure {
  message: string;
  issues: { path: string; message: string }[];
}

function failureOf(err: unknown): Failure {
  const issues = (err as { issues?: unknown }).issues;
  return {
    message: errorText(err),
    issues: Array.isArray(issues) ? issues.filter((i): i is { path: string; message: string } => typeof i?.path === 'string' && typeof i?.message === 'string') : [],
  };
}

/** The org slug of the session, to show the address a slug would give before the server answers. */
function useOrgSlug(): string | null {
  return useSession((s) => (s.state.status === 'signed-in' ? s.state.session.organization.slug : null));
}

/**
 * Publishes the saved draft as a new immutable version. The first publish claims the workflow's
 * slug (checked live) and may choose its version; later ones choose a bump, and the version shown
 * is the one the server will give: the highest ever published, bumped (docs/workflows.md).
 */
export function PublishDialog({ workflow, onClose, onPublished }: PublishDialogProps) {
  const first = workflow.latest === null;
  const orgSlug = useOrgSlug();
  const [slug, setSlug] = useState(() => (workflow.address ? workflow.address.split('/')[1]! : suggestSlug(workflow.name)));
  const [version, setVersion] = useState('1.0.0');
  const [bump, setBump] = useState<Bump>('minor');
  const [note, setNote] = useState('');
  const [versions, setVersions] = useState<Versions>(first ? { status: 'ready', versions: [] } : { status: 'loading' });
  const [slugState, setSlugState] = useState<SlugState>({ status: 'idle' });
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure | null>(null);
  const ids = { slug: useId(), version: useId(), note: useId(), problems: useId() };

  // The history, for the bump's resulting version.
  useEffect(() => {
    if (first) return;
    let live = true;
    client.routes['editor.workflows.versions']({ id: workflow.id }).then(
      ({ versions }) => live && setVersions({ status: 'ready', versions }),
      (err: unknown) => live && setVersions({ status: 'failed', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [first, workflow.id]);

  // The slug: kebab-case checked here at once, availability asked of the server after a pause in typing.
  const localSlugProblem = first ? slugProblem(slug) : null;
  useEffect(() => {
    if (!first || localSlugProblem) {
      setSlugState({ status: 'idle' });
      return;
    }
    let live = true;
    setSlugState({ status: 'checking', slug });
    const timer = setTimeout(() => {
      client.routes['editor.slugs.check']({ slug }).then(
        (check) => live && setSlugState({ status: 'done', check }),
        (err: unknown) => live && setSlugState({ status: 'failed', slug, message: errorText(err) }),
      );
    }, SLUG_CHECK_DELAY_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [first, slug, localSlugProblem]);

  const localVersionProblem = first ? versionProblem(version) : null;
  const resulting = useMemo(() => {
    if (first) return localVersionProblem ? null : version;
    return versions.status === 'ready' ? nextVersion(versions.versions, bump) : null;
  }, [first, localVersionProblem, version, versions, bump]);
  const address = first ? (slugState.status === 'done' && slugState.check.address ? slugState.check.address : orgSlug && !localSlugProblem ? `${orgSlug}/${slug}` : null) : workflow.address;

  const problems = workflow.problems ?? [];
  const noDraft = workflow.draft === null || workflow.draft.nodes.length === 0;
  const slugTaken = first && slugState.status === 'done' && !slugState.check.available;
  const blocked =
    busy ||
    problems.length > 0 ||
    noDraft ||
    note.length > NOTE_MAX ||
    (first ? Boolean(localSlugProblem) || Boolean(localVersionProblem) || slugTaken || slugState.status === 'checking' : resulting === null);

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (blocked) return;
    setBusy(true);
    setFailure(null);
    try {
      const trimmedNote = note.trim();
      const published = await client.routes['editor.workflows.publish']({
        id: workflow.id,
        ...(first ? { slug, version } : { bump }),
        ...(trimmedNote ? { note: trimmedNote } : {}),
      });
      onPublished(published);
    } catch (err) {
      setFailure(failureOf(err));
      setBusy(false);
    }
  };

  return (
    <Modal title={first ? `Publish “${workflow.name}”` : `Publish a new version of “${workflow.name}”`} onClose={onClose} dismiss={busy ? null : onClose} className="publish-dialog">
      <form className="stack" onSubmit={(e) => void onSubmit(e)} noValidate>
        {(problems.length > 0 || noDraft) && (
          <div className="publish-problems" role="alert" id={ids.problems}>
            {noDraft ? (
              <p>The draft is empty: add nodes before publishing.</p>
            ) : (
              <>
                <p>
                  The draft can’t be published until {problems.length === 1 ? 'this problem is' : `these ${problems.length} problems are`} fixed:
                </p>
                <ul>
                  {problems.slice(0, 12).map((p, i) => (
                    <li key={i}>
                      <code>{p.path}</code> {p.message}
                    </li>
                  ))}
                  {problems.length > 12 && <li>… and {problems.length - 12} more</li>}
                </ul>
                <p className="publish-problems-hint">They are marked on the nodes in the editor. Drafts with problems are still saved.</p>
              </>
            )}
          </div>
        )}

        {first ? (
          <>
            <p className="muted">
              The first publish claims the workflow’s address. It can’t be changed later, and deleting the workflow retires it for good.
            </p>
            <label className="field" htmlFor={ids.slug}>
              <span>Slug</span>
            </label>
            <div className="slug-input">
              {orgSlug && <span className="slug-prefix mono" aria-hidden>{orgSlug}/</span>}
              <input
                id={ids.slug}
                type="text"
                value={slug}
                maxLength={64}
                spellCheck={false}
                autoCapitalize="off"
                autoComplete="off"
                data-autofocus
                onChange={(e) => setSlug(e.target.value)}
                aria-invalid={localSlugProblem || slugTaken ? true : undefined}
                aria-describedby={`${ids.slug}-status`}
              />
            </div>
            <p id={`${ids.slug}-status`} className="slug-status small" aria-live="polite">
              <SlugStatus local={localSlugProblem} state={slugState} />
            </p>
            <label className="field">
              <span>
                Version <span className="hint">MAJOR.MINOR.PATCH; later publishes bump it</span>
              </span>
              <input type="text" value={version} onChange={(e) => setVersion(e.target.value.trim())} className="mono publish-version-input" aria-invalid={localVersionProblem ? true : undefined} />
              {localVersionProblem && <span className="error-text small">{localVersionProblem}</span>}
            </label>
          </>
        ) : (
          <fieldset className="bump-choice">
            <legend>What kind of change is this?</legend>
            {versions.status === 'loading' && (
              <p className="muted" role="status">
                Reading the version history…
              </p>
            )}
            {versions.status === 'failed' && <p className="error-text">Could not read the version history: {versions.message}</p>}
            {versions.status === 'ready' && (
              <>
                {BUMPS.map((b) => (
                  <label key={b} className={`bump-option${bump === b ? ' selected' : ''}`}>
                    <input type="radio" name="bump" value={b} checked={bump === b} onChange={() => setBump(b)} data-autofocus={bump === b ? true : undefined} />
                    <span className="bump-name">{b[0]!.toUpperCase() + b.slice(1)}</span>
                    <span className="bump-version mono">{nextVersion(versions.versions, b)}</span>
                    <span className="bump-text muted small">{BUMP_TEXT[b]}</span>
                  </label>
                ))}
                <p className="muted small">
                  Numbers continue from the highest version ever published{workflow.latest ? ` (latest now points at ${workflow.latest.version})` : ''}.
                </p>
              </>
            )}
          </fieldset>
        )}

        <label className="field">
          <span>
            Changelog note <span className="hint">optional, kept with the version</span>
          </span>
          <textarea
            id={ids.note}
            value={note}
            rows={3}
            onChange={(e) => setNote(e.target.value)}
            placeholder="What changed, for the people who call this workflow"
            aria-invalid={note.length > NOTE_MAX ? true : undefined}
          />
          <span className={`small ${note.length > NOTE_MAX ? 'error-text' : 'muted'}`}>
            {note.length} / {NOTE_MAX}
          </span>
        </label>

        <div className="publish-result" aria-live="polite">
          {resulting && address ? (
            <>
              <span className="muted">Will publish</span>{' '}
              <code className="publish-ref">
                {address}@{resulting}
              </code>{' '}
              <span className="muted">and point</span> <code>@latest</code> <span className="muted">at it.</span>
            </>
          ) : (
            <span className="muted">{first && !address ? 'Choose a valid slug to see the address.' : 'The resulting version appears here.'}</span>
          )}
        </div>

        {failure && (
          <div className="publish-failure" role="alert">
            <p className="error-text">{failure.message}</p>
            {failure.issues.length > 0 && (
              <ul>
                {failure.issues.map((issue, i) => (
                  <li key={i}>
                    <code>{issue.path}</code> {issue.message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}

        <div className="actions">
          <button type="button" className="button" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={blocked} aria-describedby={problems.length > 0 ? ids.problems : undefined}>
            {busy ? 'Publishing…' : resulting ? `Publish ${resulting}` : 'Publish'}
          </button>
        </div>
      </form>
    </Modal>
  );
}

function SlugStatus({ local, state }: { local: string | null; state: SlugState }) {
  if (local) return <span className="error-text">{local}</span>;
  switch (state.status) {
    case 'idle':
      return null;
    case 'checking':
      return <span className="muted">Checking availability…</span>;
    case 'failed':
      return <span className="muted">Couldn’t check availability ({state.message}); publishing will check it.</span>;
    case 'done':
      return state.check.available ? (
        <span className="ok-text">✓ {state.check.address ?? state.check.slug} is available</span>
      ) : (
        <span className="error-text">{state.check.message}</span>
      );
  }
}
