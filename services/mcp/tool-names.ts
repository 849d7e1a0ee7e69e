import { MCP_ROUTE_NAMES, OPERATIONS, OP_NAMES, ROUTES, type McpRouteName, type Operation, type OpName } from '../contract';

/**
 * How a server names its tools: the hosted server uses each declaration's `mcpTool`
 * (`runs_create`), the local stdio server the raw dotted name (`runs.create`), as SPEC.md's MCP
 * paragraph says.
 */
export type ToolNaming = 'hosted' | 'stdio';

/** What a tool calls: one of the five operations, or a route served as a tool (`MCP_ROUTE_NAMES`). */
export type ToolOp = OpName | McpRouteName;

/** Every tool's operation, in the order `tools/list` gives them: the five operations, then the routes. */
export const TOOL_OPS: readonly ToolOp[] = [...OP_NAMES, ...MCP_ROUTE_NAMES];

/** The contract's declaration of a tool's operation or route. */
export function declarationOf(op: ToolOp): Operation {
  return (op in OPERATIONS ? OPERATIONS[op as OpName] : ROUTES[op as McpRouteName]) as Operation;
}

/** The tool name of an operation (or route) under a naming. */
export function toolName(op: ToolOp, naming: ToolNaming): string {
  const declaration = declarationOf(op);
  return naming === 'hosted' ? declaration.mcpTool : declaration.name;
}

/** The operation a tool name calls, or undefined for a name no tool has. */
export function opOfTool(name: string, naming: ToolNaming): ToolOp | undefined {
  return TOOL_OPS.find((op) => toolName(op, naming) === name);
}
