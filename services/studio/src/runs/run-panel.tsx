import type { Workflow } from '../../../contract';
import type { StepViews } from './step-views';

export interface RunPanelProps {
  /** The definition to run (the editor's draft, run inline). */
  definition: Workflow;
  /** Key under which an unfinished run is remembered, so a reload resumes it (the workflow id). */
  resumeKey: string;
  /** Every change of the steps' states, for the canvas to light nodes up. */
  onSteps(steps: StepViews): void;
  onClose(): void;
}

/** Placeholder: the run panel (inputs form, cap, live events, outputs). */
export function RunPanel(props: RunPanelProps) {
  return <aside><button type="button" onClick={props.onClose}>Close</button></aside>;
}
