/** Placeholder: one run. */
export function RunDetailPage() {
  return <main className="page"><h1>Run</h1></main>;
}
