import type { EditorWorkflow, PublishedWorkflow } from '../../../contract';

export interface PublishDialogProps {
  /** The workflow as last saved (its draft, problems, address and latest version). */
  workflow: EditorWorkflow;
  onClose(): void;
  onPublished(published: PublishedWorkflow): void;
}

/** Placeholder: the publish dialog (bump, slug claim, changelog note). */
export function PublishDialog(props: PublishDialogProps) {
  return <dialog open><button type="button" onClick={props.onClose}>Close</button></dialog>;
}
