import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { declarationOf, TOOL_OPS, toolName, type ToolNaming, type ToolOp } from './tool-names';

/**
 * The tool list, one loop over the contract's operations and the routes served as tools. Each tool's `inputSchema` is the
 * operation's own input schema, the very one every surface validates with; the JSON round trip
 * only drops TypeBox's symbol keys, which no JSON answer could carry anyway.
 */
export function toolDefinitions(naming: ToolNaming): readonly Tool[] {
  // The list follows from the contract alone: made once per naming, not for every request of the
  // stateless hosted server (which builds a server per request).
  let tools = made.get(naming);
  if (!tools) {
    tools = makeDefinitions(naming);
    made.set(naming, tools);
  }
  return tools;
}

const made = new Map<ToolNaming, readonly Tool[]>();

function makeDefinitions(naming: ToolNaming): readonly Tool[] {
  return TOOL_OPS.map((name): Tool => {
    const op = declarationOf(name);
    const guide = op.agent;
    const example = guide ? `\n\nExample input: ${JSON.stringify(guide.example)}` : '';
    // The contract names other tools as `{runs.node}`; this server's tool name goes there.
    const text = (guide?.description ?? op.summary).replace(/\{(\w+\.\w+)\}/g, (whole, named: string) => ((TOOL_OPS as readonly string[]).includes(named) ? toolName(named as ToolOp, naming) : whole));
    return {
      name: toolName(name, naming),
      title: op.summary,
      description: `${text}${example}`,
      inputSchema: JSON.parse(JSON.stringify(op.input)) as Tool['inputSchema'],
      annotations: op.readOnly
        ? { title: op.summary, readOnlyHint: true, openWorldHint: false }
        : // Runs call paid providers (the open world), change balances and are never deduplicated.
          { title: op.summary, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: op.spendsMoney },
    };
  });
}
