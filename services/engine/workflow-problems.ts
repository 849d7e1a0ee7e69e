/** One problem found in a workflow definition, located by node and field. */
export interface WorkflowProblem {
  /** e.g. `nodes[3].inputs.width` or `nodes` */
  path: string;
  nodeId?: string;
  message: string;
}

/** Collects problems with the `nodes[3] "resize": ...` prefix the messages share. */
export class ProblemList {
  readonly items: WorkflowProblem[] = [];

  add(path: string, message: string): void {
    this.items.push({ path, message });
  }

  atNode(index: number, nodeId: string | undefined, field: string, message: string): void {
    const label = nodeId ? `nodes[${index}] "${nodeId}"` : `nodes[${index}]`;
    this.items.push({ path: `nodes[${index}]${field ? `.${field}` : ''}`, nodeId, message: `${label}: ${message}` });
  }

  get empty(): boolean {
    return this.items.length === 0;
  }
}
