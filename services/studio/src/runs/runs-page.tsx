/** Placeholder: run history. */
export function RunsPage() {
  return <main className="page"><h1>Runs</h1></main>;
}
