import type { EditorWorkflow } from '../../../contract';

export interface HistoryPanelProps {
  workflow: EditorWorkflow;
  /** After a rollback (latest moved) or another change, with the workflow's new state. */
  onChanged(workflow: EditorWorkflow): void;
  /** After the workflow was deleted. */
  onDeleted(): void;
  onClose(): void;
}

/** Placeholder: version history, view, diff, roll back, delete. */
export function HistoryPanel(props: HistoryPanelProps) {
  return <aside><button type="button" onClick={props.onClose}>Close</button></aside>;
}
