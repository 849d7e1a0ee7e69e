/** Placeholder: Settings, API tokens. */
export function TokensPage() {
  return <main className="page"><h1>API tokens</h1></main>;
}
