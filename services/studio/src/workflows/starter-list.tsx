import { useEffect, useState } from 'react';
import { client, errorText } from '../lib/api';
import { loadSpecs } from '../editor/catalog';
import { offeredStarters, type Starter } from './starters';

/**
 * The empty state's starters: workflows on real models this server runs itself, one click from a
 * first AI run. Each creates a workflow with that draft and opens it in the editor.
 */
export function StarterList({ onCreated }: { onCreated(id: string): void }) {
  const [starters, setStarters] = useState<Starter[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    // Without the catalog no starter is offered: the empty state still offers a blank workflow.
    loadSpecs().then(
      (specs) => live && setStarters(offeredStarters(specs)),
      () => live && setStarters([]),
    );
    return () => {
      live = false;
    };
  }, []);

  if (!starters || starters.length === 0) return null;
  const start = async (starter: Starter) => {
    setBusy(starter.id);
    setProblem(null);
    try {
      const created = await client.routes['editor.workflows.create']({ name: starter.name, definition: starter.definition });
      onCreated(created.id);
    } catch (err) {
      setProblem(errorText(err));
      setBusy(null);
    }
  };
  return (
    <section className="starters" aria-label="Start from an example">
      <h3>Start from an AI example</h3>
      <ul className="starter-list">
        {starters.map((starter) => (
          <li key={starter.id}>
            <button type="button" className="starter" data-testid={`starter-${starter.id}`} disabled={busy !== null} onClick={() => void start(starter)}>
              <strong>{busy === starter.id ? 'Creating…' : starter.name}</strong>
              <span>{starter.blurb}</span>
            </button>
          </li>
        ))}
      </ul>
      {problem && <p className="field-problems" role="alert">{problem}</p>}
    </section>
  );
}
