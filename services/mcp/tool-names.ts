import { OPERATIONS, OP_NAMES, type OpName } from '../contract';

/**
 * How a server names its tools: the hosted server uses each operation's `mcpTool`
 * (`runs_create`), the local stdio server the raw dotted operation name (`runs.create`), as
 * SPEC.md's MCP paragraph says.
 */
export type ToolNaming = 'hosted' | 'stdio';

/** The tool name of an operation under a naming. */
export function toolName(op: OpName, naming: ToolNaming): string {
  return naming === 'hosted' ? OPERATIONS[op].mcpTool : OPERATIONS[op].name;
}

/** The operation a tool name calls, or undefined for a name no tool has. */
export function opOfTool(name: string, naming: ToolNaming): OpName | undefined {
  return OP_NAMES.find((op) => toolName(op, naming) === name);
}
