/**
 * The MCP servers of the service: one `buildServer` over the five operations of the contract
 * and the routes it serves as tools (starting a batch, reading its progress),
 * served over stdio by `svc mcp` / `svc-mcp` (dotted tool names, calling the HTTP API through the
 * SDK) and over streamable HTTP by the API at `/mcp` (underscore names, calling `invoke` in process).
 */
export { buildServer, type BuildServerOptions } from './build-server';
export { progressMessage } from './run-progress';
export { SdkToolCaller } from './sdk-tool-caller';
export { readStdioSettings, serveStdio, type StdioServeOptions, type StdioSettings } from './stdio-server';
export type { ToolCaller, ToolCallOptions } from './tool-caller';
export { toolDefinitions } from './tool-definitions';
export { ToolFailure } from './tool-failure';
export { declarationOf, opOfTool, TOOL_OPS, toolName, type ToolNaming, type ToolOp } from './tool-names';
export { asToolFailure, failureResult, successResult } from './tool-results';
