/** Placeholder: the organization's workflows. */
export function WorkflowsPage() {
  return <main className="page"><h1>Workflows</h1></main>;
}
