/** Placeholder: the graph editor of one workflow. */
export function EditorPage() {
  return <main className="page"><h1>Editor</h1></main>;
}
