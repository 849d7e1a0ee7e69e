import type { BuiltinConnectorId, Connector } from '../contract';
import { referenceOf, VALUE_PORT, type CheckedWorkflow } from './validate-workflow';

/** A parameter callers supply in `inputs` at run time: an input node. */
export interface InterfaceInput {
  id: string;
  connector: BuiltinConnectorId;
  required: boolean;
  default?: unknown;
  label?: string;
}

/** A result of the workflow: an output node. `connector` is null when its source is a mounted workflow. */
export interface InterfaceOutput {
  name: string;
  connector: Connector['id'] | null;
  label?: string;
}

export interface WorkflowInterface {
  inputs: InterfaceInput[];
  outputs: InterfaceOutput[];
}

/** The public interface of a validated workflow, derived from its input and output nodes. */
export function deriveInterface(workflow: CheckedWorkflow): WorkflowInterface {
  const inputs: InterfaceInput[] = [];
  const outputs: InterfaceOutput[] = [];
  for (const node of workflow.list) {
    if (node.role === 'input') {
      const hasDefault = Object.hasOwn(node.inputs, 'default');
      inputs.push({
        id: node.id,
        connector: node.outputs![VALUE_PORT]!.id as BuiltinConnectorId,
        required: !hasDefault,
        ...(hasDefault ? { default: node.inputs.default } : {}),
        ...(node.label !== undefined ? { label: node.label } : {}),
      });
    } else if (node.role === 'output') {
      const ref = referenceOf(node, 'value');
      const source = ref ? workflow.nodes.get(ref.nodeId) : undefined;
      const connector = ref && source?.outputs && Object.hasOwn(source.outputs, ref.port) ? source.outputs[ref.port]!.id : null;
      outputs.push({ name: node.id, connector: ref ? connector : literalConnector(node.inputs.value), ...(node.label !== undefined ? { label: node.label } : {}) });
    }
  }
  return { inputs, outputs };
}

/** The connector of a literal written on an output node. */
export function literalConnector(value: unknown): Connector['id'] {
  if (typeof value === 'string') return 'TEXT';
  if (typeof value === 'boolean') return 'BOOLEAN';
  if (Number.isSafeInteger(value)) return 'INT';
  if (typeof value === 'number') return 'FLOAT';
  return 'STRUCTURED';
}
